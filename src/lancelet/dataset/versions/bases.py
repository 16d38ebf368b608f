"""Multi-base datasets as pylance's API shows them: :class:`DatasetBasePath`, the
``initial_bases`` / ``target_bases`` of a write, and ``add_bases``.

A write with target bases puts its data files under those bases in turn (file by
file, round robin); without, under the dataset's own ``data/``.  Only a new dataset
registers bases as it is written; an existing one registers more with ``add_bases``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from lancelet.dataset.versions.committing import commit_transaction
from lancelet.errors import ArgumentError
from lancelet.table.base_paths import BasePath, resolve, with_new_ids
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

__all__ = ["DatasetBasePath", "WriteBases", "add_bases", "base_paths", "plan_write"]


class DatasetBasePath:
    """A storage location a dataset may keep data files in (see :meth:`LanceDataset.
    base_paths`); ``id`` 0 until the dataset registers it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        is_dataset_root: bool = False,
        id: int | None = None,
    ) -> None:
        if id is not None and id < 0:
            raise ArgumentError(f"DatasetBasePath: id must not be negative, got {id}")
        self._base = BasePath(id or 0, os.fspath(path), name, bool(is_dataset_root))

    @classmethod
    def _of(cls, base: BasePath) -> DatasetBasePath:
        return cls(base.path, base.name, base.is_dataset_root, base.id)

    @property
    def id(self) -> int:
        return self._base.id

    @property
    def name(self) -> str | None:
        return self._base.name

    @property
    def path(self) -> str:
        return self._base.path

    @property
    def is_dataset_root(self) -> bool:
        return self._base.is_dataset_root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatasetBasePath) and other._base == self._base

    def __hash__(self) -> int:
        return hash(self._base)

    def __repr__(self) -> str:
        name = "None" if self.name is None else f'Some("{self.name}")'
        return (
            f"DatasetBasePath(id={self.id}, name={name}, path={self.path}, "
            f"is_dataset_root={str(self.is_dataset_root).lower()})"
        )


def _bases(values: Any, what: str) -> list[BasePath]:
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} must be a list of DatasetBasePath, not {type(values).__name__}")
    for value in values:
        if not isinstance(value, DatasetBasePath):
            raise TypeError(f"{what} must hold DatasetBasePath objects, not {value!r}")
    return [v._base for v in values]


def _numbered(bases: list[BasePath]) -> tuple[BasePath, ...]:
    """Explicit ids kept, the others given the lowest ids free (from 1), as pylance
    numbers a new dataset's bases; names and paths must be distinct."""
    taken = [b.id for b in bases if b.id]
    if len(set(taken)) != len(taken):
        raise ArgumentError("initial_bases: two bases have the same id")
    free = (i for i in range(1, len(bases) + len(taken) + 2) if i not in taken)
    numbered = [b if b.id else BasePath(next(free), b.path, b.name, b.is_dataset_root)
                for b in bases]  # fmt: skip
    for i, base in enumerate(numbered):
        with_new_ids(numbered[:i], [base])  # refuses a name or path used twice
    return tuple(numbered)


class WriteBases:
    """Where a write's data files go: the bases a new dataset registers, and the
    targets its files cycle through (None: the dataset's own ``data/``)."""

    def __init__(self, initial: tuple[BasePath, ...], targets: list[BasePath | None]) -> None:
        self.initial = initial
        self._targets = targets
        self._next = 0

    def next_target(self) -> BasePath | None:
        target = self._targets[self._next % len(self._targets)]
        self._next += 1
        return target


def plan_write(
    latest: Manifest | None,
    mode: str,
    initial_bases: Sequence[DatasetBasePath] | None,
    target_bases: Sequence[str] | None,
    where: str,
) -> WriteBases:
    initial: tuple[BasePath, ...] = ()
    if initial_bases:
        if latest is not None:
            raise ArgumentError(
                f"{where}: Cannot register new bases in {mode.capitalize()} mode. Only "
                "CREATE mode can register new bases; use add_bases"
            )
        initial = _numbered(_bases(initial_bases, "initial_bases"))
    if not target_bases:
        return WriteBases(initial, [None])
    if isinstance(target_bases, str) or not all(isinstance(t, str) for t in target_bases):
        raise TypeError(f"{where}: target_bases must be a list of base names or paths")
    available = initial if latest is None else latest.base_paths
    found: list[BasePath | None] = list(resolve(available, list(target_bases), where))
    return WriteBases(initial, found)


def base_paths(manifest: Manifest) -> dict[int, DatasetBasePath]:
    return {b.id: DatasetBasePath._of(b) for b in manifest.base_paths}


def add_bases(
    store: DatasetStore,
    manifest: Manifest,
    new_bases: Sequence[DatasetBasePath],
    properties: Mapping[str, str] | None,
) -> Manifest:
    """Commit the registration of ``new_bases``; the new manifest (the same one when
    there is nothing to add)."""
    added = _bases(new_bases, "add_bases")
    if not added:
        return manifest
    with_new_ids(manifest.base_paths, added)  # refuse a clash before committing
    txn = ops.Transaction(
        manifest.version, ops.UpdateBases(tuple(added)), properties=dict(properties or {})
    )
    return commit_transaction(store, txn)
