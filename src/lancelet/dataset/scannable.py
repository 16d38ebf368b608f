"""The read methods a dataset and a fragment share: scans and take with pylance's names.

Both are a manifest's view of some fragments; they differ only in which ones,
so each supplies :meth:`Scannable._source` and inherits the rest.  The signatures
are pylance's: every keyword it takes is taken here too, implemented, ignored when it
only tunes speed, or refused when given a value lancelet cannot honour.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.core import arguments
from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.dataset.read.fts_scanner import full_text_scanner
from lancelet.dataset.read.nearest_scanner import nearest_scanner
from lancelet.dataset.read.ordering import orderings
from lancelet.dataset.read.projection import SPECIAL, Columns, projection
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.dataset.read.take import take_rows
from lancelet.errors import UnsupportedOptionError, VectorQueryError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.fragment import LanceFragment

Filter: TypeAlias = str | pc.Expression

# The scan keywords lancelet does not implement: refused unless left at their
# defaults, in this order.
_UNIMPLEMENTED_KEYWORDS = (
    "batch_size_bytes",
    "index_segments",
    "blob_handling",
    "row_addr_allowlist",
    "row_addr_blocklist",
)


class Scannable:
    def _source(self) -> tuple[DatasetStore, Manifest, list[Fragment] | None]:
        """Where to read: the store, the manifest, and its fragments to read (None: all)."""
        raise NotImplementedError

    def scanner(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: Any = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        fragments: Iterable[LanceFragment] | None = None,
        index_segments: Any = None,
        full_text_query: Any = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        scan_stats_callback: Any = None,
        strict_batch_size: bool | None = None,
        order_by: Any = None,
        disable_scoring_autoprojection: bool | None = None,
        row_addr_allowlist: bytes | None = None,
        row_addr_blocklist: bytes | None = None,
    ) -> LanceScanner:
        """A scan of these rows.  Keywords that only tune speed (readahead,
        ``scan_in_order``, ``use_stats``, ...) or only matter to searches lancelet
        refuses (``prefilter``) are ignored."""
        # Every parameter by name, taken before any other local exists.
        keywords = dict(locals())
        call = f"{type(self).__name__}.scanner"
        refuse_unimplemented(call, **{name: keywords[name] for name in _UNIMPLEMENTED_KEYWORDS})
        if full_text_query is not None:
            store, manifest, own = self._source()
            return full_text_scanner(store, manifest, own, keywords, call)
        if nearest is not None:
            return self._nearest_scanner(keywords, call)
        refuse_unimplemented(call, fast_search=fast_search)
        return self._plain_scanner(keywords, call)

    def _plain_scanner(self, k: dict[str, Any], call: str) -> LanceScanner:
        """A scan of these rows with ``k``, ``scanner``'s keywords, checked."""
        store, manifest, own = self._source()
        fragments = k["fragments"]
        chosen = own if fragments is None else _fragment_metadata(fragments, call)
        return LanceScanner(
            store,
            manifest,
            columns=k["columns"],
            filter=k["filter"],
            limit=arguments.row_count(k["limit"], "limit", call),
            offset=arguments.row_count(k["offset"], "offset", call),
            with_row_id=arguments.flag(k["with_row_id"], "with_row_id", call),
            with_row_address=arguments.flag(k["with_row_address"], "with_row_address", call),
            batch_size=arguments.positive(k["batch_size"], "batch_size", call),
            strict_batch_size=arguments.flag(k["strict_batch_size"], "strict_batch_size", call),
            fragments=chosen,
            use_scalar_index=arguments.flag(k["use_scalar_index"], "use_scalar_index", call, True),
            order_by=orderings(k["order_by"], call),
            include_deleted_rows=arguments.flag(
                k["include_deleted_rows"], "include_deleted_rows", call
            ),
            late_materialization=_late_columns(k["late_materialization"], call),
            scan_stats_callback=k["scan_stats_callback"],
        )

    def _nearest_scanner(self, keywords: dict[str, Any], call: str) -> LanceScanner:
        """A nearest-neighbour search (``nearest=``) over these rows."""
        store, manifest, own = self._source()
        fragments = keywords["fragments"]
        if fragments is not None:
            # pylance searches only the fragments given when a prefilter restricts the
            # search; otherwise it refuses.
            if not keywords["prefilter"]:
                raise VectorQueryError(
                    f"{call}: nearest with fragments: This operation is not supported for "
                    "fragment scan (without prefilter=True)"
                )
            own = _fragment_metadata(fragments, call)
        return nearest_scanner(store, manifest, own, keywords, call)

    def to_table(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: Any = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
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
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        order_by: Any = None,
        disable_scoring_autoprojection: bool | None = None,
        **kwargs: Any,
    ) -> pa.Table:
        """The rows a scan with these arguments reads; ``kwargs`` are other keywords of
        :meth:`scanner` (``fragments``, ``strict_batch_size``, ...)."""
        return self.scanner(
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            batch_size_bytes,
            batch_readahead,
            fragment_readahead,
            scan_in_order,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            use_stats=use_stats,
            fast_search=fast_search,
            full_text_query=full_text_query,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            blob_handling=blob_handling,
            use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows,
            order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
            **kwargs,
        ).to_table()

    def to_batches(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: Any = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        full_text_query: Any = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        strict_batch_size: bool | None = None,
        order_by: Any = None,
        disable_scoring_autoprojection: bool | None = None,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """The batches a scan with these arguments reads; ``kwargs`` are other keywords
        of :meth:`scanner`, as in pylance."""
        return self.scanner(
            columns,
            filter,
            limit,
            offset,
            nearest,
            batch_size,
            batch_size_bytes,
            batch_readahead,
            fragment_readahead,
            scan_in_order,
            prefilter=prefilter,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            use_stats=use_stats,
            full_text_query=full_text_query,
            io_buffer_size=io_buffer_size,
            late_materialization=late_materialization,
            blob_handling=blob_handling,
            use_scalar_index=use_scalar_index,
            strict_batch_size=strict_batch_size,
            order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection,
            **kwargs,
        ).to_batches()

    def count_rows(self, filter: Filter | None = None, **kwargs: Any) -> int:
        # pylance's count_rows drops these (so a limit changes nothing there); refusing
        # them keeps code written for either library from meaning two things.
        for name in ("columns", "limit", "offset", "nearest", "full_text_query"):
            if kwargs.get(name) is not None:
                raise UnsupportedOptionError(f"count_rows does not take {name}=")
        kwargs.pop("columns", None)
        return self.scanner(columns=[], filter=filter, **kwargs).count_rows()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        return self.to_table(limit=num_rows, **kwargs)

    def take(
        self,
        indices: Sequence[int] | np.ndarray | pa.Array,
        columns: Columns | None = None,
    ) -> pa.Table:
        call = f"{type(self).__name__}.take"
        rows = arguments.indices(indices, call)
        store, manifest, own = self._source()
        where = f"{store.root}: take"
        named = None if columns is None or isinstance(columns, Mapping) else list(columns)
        # pylance takes a system column named twice twice; other names once each.
        plain = None if named is None else [n for n in named if n not in SPECIAL]
        shape = projection(columns if plain is None else plain, manifest.schema.to_arrow(), where)
        if named is not None and shape.expressions is not None:
            # pylance returns such a take as the nested struct, a scan as a flat column.
            raise UnsupportedOptionError(
                f"{call}: nested paths {list(shape.expressions)} in a take; use a dict, "
                "such as {'s.x': 's.x'}"
            )
        system = bool(shape.special_reads) or named != plain
        table = take_rows(store, manifest, rows, list(shape.reads), own, system=system)
        out = shape.apply(table, where)
        if named is None or named == plain:
            return out
        computed = iter(out.columns)
        arrays = [table[n] if n in SPECIAL else next(computed) for n in named]
        return pa.Table.from_arrays(arrays, names=named)


class ScannableFragment(Scannable):
    """One fragment of a dataset, scannable (``LanceFragment``): what the ``fragments``
    of a scan list.  It is declared here, beneath ``LanceFragment``'s module, for
    :meth:`Scannable.scanner` to recognise one."""

    @property
    def metadata(self) -> Fragment:
        """The fragment's metadata in the manifest."""
        raise NotImplementedError


def _late_columns(value: Any, call: str) -> bool | list[str] | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) or not all(isinstance(c, str) for c in value):
        raise TypeError(f"{call}: late_materialization must be a bool or a list of column names")
    return list(value)


def _fragment_metadata(fragments: Iterable[LanceFragment], call: str) -> list[Fragment]:
    chosen = list(fragments)
    for fragment in chosen:
        if not isinstance(fragment, ScannableFragment):
            raise TypeError(f"{call}: fragments must be LanceFragments, not {fragment!r}")
    return [f.metadata for f in chosen]
