"""``LanceDataset``'s and ``LanceFragment``'s pyarrow bases (see :mod:`.arrow_scanner`)."""

from __future__ import annotations

from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.dataset as pa_ds

from lancelet.dataset.read import pandas_export
from lancelet.dataset.read.arrow_scanner import PicklesItsDict, refuse
from lancelet.dataset.read.projection import Columns
from lancelet.dataset.scannable import Filter, Scannable
from lancelet.errors import ArgumentError


class ArrowDataset(PicklesItsDict, Scannable, pa_ds.Dataset):  # type: ignore[misc]
    """``LanceDataset``'s pyarrow base, and the pyarrow methods overridden on it."""

    @property
    def partition_expression(self) -> NoReturn:
        refuse("LanceDataset.partition_expression", "a Lance dataset has no partitioning")

    def replace_schema(self, schema: pa.Schema) -> NoReturn:
        refuse(
            "LanceDataset.replace_schema",
            "use update_schema_metadata or update_field_metadata to change metadata",
        )

    def join(
        self,
        right_dataset: Any,
        keys: Any,
        right_keys: Any = None,
        join_type: str = "left outer",
        left_suffix: str | None = None,
        right_suffix: str | None = None,
        coalesce_keys: bool = True,
        use_threads: bool = True,
    ) -> NoReturn:
        refuse("LanceDataset.join", "read with to_table() and join the tables")

    def join_asof(
        self,
        right_dataset: Any,
        on: Any,
        by: Any,
        tolerance: Any,
        right_on: Any = None,
        right_by: Any = None,
    ) -> NoReturn:
        refuse("LanceDataset.join_asof", "read with to_table() and join the tables")

    def filter(self, expression: Any) -> NoReturn:
        refuse("LanceDataset.filter", "pass filter= to scanner(), to_table() or to_batches()")

    def sort_by(self, sorting: Any, **kwargs: Any) -> NoReturn:
        refuse("LanceDataset.sort_by", "pass order_by= to scanner() or to_table()")

    def slice(self, start: int, end: int, columns: Columns | None = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position, as a scan with
        an offset and a limit."""
        if start < 0:
            raise ArgumentError(f"start must be non-negative, got {start}")
        if end < start:
            raise ArgumentError(f"end ({end}) must be >= start ({start})")
        return self.scanner(offset=start, limit=end - start, columns=columns).to_table()

    def to_pandas(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: Any = None,
        batch_size: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        full_text_query: Any = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_mode: str = pandas_export.LAZY,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        order_by: Any = None,
        disable_scoring_autoprojection: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """The scan as a pandas DataFrame; blob columns as ``BlobFile``s (``blob_mode``
        "lazy"), ``bytes`` ("bytes") or their descriptions ("descriptions");
        ``kwargs`` go to ``pyarrow.Table.to_pandas``."""
        return self.scanner(
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            nearest=nearest,
            batch_size=batch_size,
            io_buffer_size=io_buffer_size,
            batch_readahead=batch_readahead,
            fragment_readahead=fragment_readahead,
            late_materialization=late_materialization,
            use_scalar_index=use_scalar_index,
            scan_in_order=scan_in_order,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            use_stats=use_stats,
            fast_search=fast_search,
            full_text_query=full_text_query,
            include_deleted_rows=include_deleted_rows,
            order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
        ).to_pandas(blob_mode=blob_mode, **kwargs)


class ArrowFragment(PicklesItsDict, Scannable, pa_ds.Fragment):  # type: ignore[misc]
    """``LanceFragment``'s pyarrow base, and the pyarrow methods overridden on it."""

    @property
    def physical_schema(self) -> NoReturn:
        refuse("LanceFragment.physical_schema", "use schema")

    @property
    def partition_expression(self) -> NoReturn:
        refuse("LanceFragment.partition_expression", "a Lance dataset has no partitioning")

    def to_pandas(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        batch_size: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_mode: str = pandas_export.LAZY,
        order_by: Any = None,
        **kwargs: Any,
    ) -> Any:
        """This fragment's rows as a pandas DataFrame (see ``LanceDataset.to_pandas``)."""
        return self.scanner(
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            batch_size=batch_size,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            order_by=order_by,
        ).to_pandas(blob_mode=blob_mode, **kwargs)
