"""A fragment's scans with pylance's ``LanceFragment`` signatures: ``scanner`` and
``to_batches`` take keywords only, ``to_table`` pylance's positional order, and row
ids and addresses are off by default (a dataset's scans leave them to its default
scan options).  Each passes on to :meth:`Scannable.scanner`, which implements,
ignores (``batch_readahead``, ``io_buffer_size``: speed only) or refuses them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from lancelet.dataset.read.projection import Columns
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.dataset.scannable import Filter, Scannable, ScannableFragment

# pylance's default readahead for a fragment's scans (speed only).
DEFAULT_BATCH_READAHEAD = 16


class FragmentScans(ScannableFragment):
    def scanner(  # type: ignore[override]  # pylance's keyword-only form for fragments
        self,
        *,
        columns: Columns | None = None,
        batch_size: int | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = DEFAULT_BATCH_READAHEAD,
        blob_handling: str | None = None,
        order_by: Any = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> LanceScanner:
        return Scannable.scanner(
            self,
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            batch_size=batch_size,
            batch_size_bytes=batch_size_bytes,
            batch_readahead=batch_readahead,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            blob_handling=blob_handling,
            use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows,
            strict_batch_size=strict_batch_size,
            order_by=order_by,
        )

    def to_batches(  # type: ignore[override]  # as scanner
        self,
        *,
        columns: Columns | None = None,
        batch_size: int | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_readahead: int = DEFAULT_BATCH_READAHEAD,
        blob_handling: str | None = None,
        order_by: Any = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(
            columns=columns,
            batch_size=batch_size,
            filter=filter,
            limit=limit,
            offset=offset,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            batch_readahead=batch_readahead,
            blob_handling=blob_handling,
            order_by=order_by,
            use_scalar_index=use_scalar_index,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            include_deleted_rows=include_deleted_rows,
            batch_size_bytes=batch_size_bytes,
            strict_batch_size=strict_batch_size,
        ).to_batches()

    def to_table(  # type: ignore[override]  # pylance's positional order for fragments
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_handling: str | None = None,
        order_by: Any = None,
        use_scalar_index: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        include_deleted_rows: bool | None = None,
        batch_size_bytes: int | None = None,
        strict_batch_size: bool | None = None,
    ) -> pa.Table:
        return self.scanner(
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            blob_handling=blob_handling,
            order_by=order_by,
            use_scalar_index=use_scalar_index,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            include_deleted_rows=include_deleted_rows,
            batch_size_bytes=batch_size_bytes,
            strict_batch_size=strict_batch_size,
        ).to_table()
