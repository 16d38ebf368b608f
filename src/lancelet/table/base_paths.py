"""Base paths: storage locations besides the dataset's root that hold some of its data
files (the manifest's ``base_paths``; a data file names one by ``base_id``).

A base is a dataset root when ``is_dataset_root``: its data files are then under its
``data/`` directory, as under the primary root; otherwise directly under its path.
Ids are positive and never reused within a dataset; the name is optional.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lancelet import io
from lancelet._proto import table_pb2
from lancelet.errors import ArgumentError
from lancelet.table import naming


@dataclass(frozen=True)
class BasePath:
    id: int
    path: str
    name: str | None = None
    is_dataset_root: bool = False

    def to_proto(self) -> table_pb2.BasePath:
        pb = table_pb2.BasePath(id=self.id, is_dataset_root=self.is_dataset_root, path=self.path)
        if self.name is not None:
            pb.name = self.name
        return pb

    @classmethod
    def from_proto(cls, pb: table_pb2.BasePath) -> BasePath:
        name = pb.name if pb.HasField("name") else None
        return cls(pb.id, pb.path, name, pb.is_dataset_root)

    def data_dir(self) -> str:
        """Where this base keeps data files."""
        root = io.normalize(self.path)
        return io.join(root, naming.DATA_DIR) if self.is_dataset_root else root


def with_new_ids(existing: Sequence[BasePath], added: Iterable[BasePath]) -> tuple[BasePath, ...]:
    """``added`` given the lowest ids not in use, from 1, as pylance numbers them
    (the ids they carry are ignored), refusing a name or path a base already has."""
    out = list(existing)
    for base in added:
        clash = next(
            (
                b
                for b in out
                if (base.name is not None and b.name == base.name) or b.path == base.path
            ),
            None,
        )
        if clash is not None:
            what = f"name {base.name!r}" if clash.name == base.name else f"path {base.path!r}"
            raise ArgumentError(f"a base path with {what} already exists (id {clash.id})")
        taken = {b.id for b in out}
        free = next(i for i in range(1, len(out) + 2) if i not in taken)
        out.append(BasePath(free, base.path, base.name, base.is_dataset_root))
    return tuple(out[len(existing) :])


def resolve(bases: Sequence[BasePath], references: Sequence[str], where: str) -> list[BasePath]:
    """The bases ``references`` name, each by name or else by path."""
    out = []
    for ref in references:
        found = next((b for b in bases if b.name == ref), None)
        if found is None:
            found = next((b for b in bases if _same_path(b.path, ref)), None)
        if found is None:
            raise ArgumentError(
                f"{where}: target base {ref!r} not found among the dataset's base paths "
                f"{[b.name or b.path for b in bases]}"
            )
        out.append(found)
    return out


def _same_path(a: str, b: str) -> bool:
    return a == b or io.normalize(a) == io.normalize(b)
