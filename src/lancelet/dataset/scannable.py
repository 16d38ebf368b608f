"""The read methods a dataset and a fragment share: scans and take with pylance's names.

Both are a manifest's view of some fragments; they differ only in which ones,
so each supplies :meth:`Scannable._source` and inherits the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.options import refuse_unsupported
from lancelet.dataset.scanner import LanceScanner
from lancelet.dataset.take import take_rows
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.fragment import LanceFragment


class Scannable:
    def _source(self) -> tuple[DatasetStore, Manifest, list[Fragment] | None]:
        """Where to read: the store, the manifest, and its fragments to read (None: all)."""
        raise NotImplementedError

    def scanner(
        self,
        columns: Sequence[str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_size: int | None = None,
        fragments: Sequence[LanceFragment] | None = None,
        **options: Any,
    ) -> LanceScanner:
        refuse_unsupported(options, f"{type(self).__name__}.scanner")
        store, manifest, own = self._source()
        chosen = own if fragments is None else [f.metadata for f in fragments]
        return LanceScanner(
            store,
            manifest,
            columns=columns,
            filter=filter,
            limit=limit,
            offset=offset,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            batch_size=batch_size,
            fragments=chosen,
        )

    def to_table(
        self,
        columns: Sequence[str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        **kwargs: Any,
    ) -> pa.Table:
        return self.scanner(
            columns, filter, limit, offset, with_row_id, with_row_address, **kwargs
        ).to_table()

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(
            columns, filter, limit, offset, with_row_id, with_row_address, **kwargs
        ).to_batches()

    def count_rows(self, filter: str | pc.Expression | None = None, **options: Any) -> int:
        return self.scanner(columns=[], filter=filter, **options).count_rows()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        return self.to_table(limit=num_rows, **kwargs)

    def take(
        self,
        indices: Sequence[int] | np.ndarray | pa.Array,
        columns: Sequence[str] | None = None,
        **options: Any,
    ) -> pa.Table:
        refuse_unsupported(options, f"{type(self).__name__}.take")
        store, manifest, own = self._source()
        names = manifest.schema.to_arrow().names if columns is None else list(columns)
        return take_rows(store, manifest, indices, names, own)
