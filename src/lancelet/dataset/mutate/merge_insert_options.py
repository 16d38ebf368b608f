"""``MergeInsertBuilder`` calls pylance has beyond choosing what happens to each
category of rows: the ``*_batches`` forms of execute (the same calls on data held in
memory), and where and how new files are written, which
lancelet accepts only at pylance's default."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar, cast

from lancelet.dataset.versions.transactions import Transaction
from lancelet.errors import UnsupportedFunctionError, UnsupportedOptionError

_Builder = TypeVar("_Builder", bound="MergeInsertOptions")


class MergeInsertOptions:
    """Mixed into ``MergeInsertBuilder``."""

    def write_mode(self: _Builder, mode: str) -> _Builder:
        """How merged rows are written: lancelet takes pylance's default, "auto"."""
        if mode != "auto":
            raise UnsupportedOptionError(f"merge_insert: write_mode({mode!r}) is not supported")
        return self

    def data_storage_version(self, version: str) -> NoReturn:
        raise UnsupportedOptionError(
            f"merge_insert: data_storage_version({version!r}) is not supported; new files "
            "take the dataset's format"
        )

    def target_bases(self, bases: list[str]) -> NoReturn:
        raise UnsupportedOptionError("merge_insert: target_bases is not supported")

    def target_all_bases(self, include_primary: bool = True) -> NoReturn:
        raise UnsupportedOptionError("merge_insert: target_all_bases is not supported")

    def mark_sstables_as_compacted(self, sstables: list[Any]) -> NoReturn:
        raise UnsupportedFunctionError(
            "MergeInsertBuilder.mark_sstables_as_compacted is not supported: lancelet does "
            "not implement the MemWAL"
        )

    def execute_batches(self, /, new_data: Any) -> dict[str, int]:
        """:meth:`execute` on data held in memory."""
        counts: dict[str, int] = cast(Any, self).execute(new_data)
        return counts

    def execute_uncommitted_batches(self, /, new_data: Any) -> tuple[Transaction, dict[str, int]]:
        """:meth:`execute_uncommitted` on data held in memory."""
        result: tuple[Transaction, dict[str, int]] = cast(Any, self).execute_uncommitted(new_data)
        return result

    def analyze_plan_batches(self, /, new_data: Any) -> str:
        """:meth:`analyze_plan` on data held in memory."""
        plan: str = cast(Any, self).analyze_plan(new_data)
        return plan
