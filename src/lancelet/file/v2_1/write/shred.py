"""Shredding Arrow arrays into the leaf columns of a 2.1 file.

In format 2.1 only leaves own a column: structs and lists become *layers* of
repetition and definition levels in every leaf below them.  A leaf's page holds
one level entry per item, plus one per null or empty list (which has no item),
and one value per *visible* entry (every entry but those null or empty lists).

Levels follow the reference's numbering (``repdef.rs``): repetition levels count
list layers from the innermost (1) to the outermost (``max_rep``), an entry's
level being the outermost list it starts; definition levels give each layer
that can be null (one level) or empty (one more, for lists) its own levels,
the outermost layer the highest, and 0 means "valid at every layer".

The layers a page declares (nullable or not, empty lists or not) depend on the
whole page, so each batch is first shredded into layer-independent *codes*
(:class:`LeafBatch`) and levels are assigned when a page is cut
(:func:`page_levels`).  A struct's nulls count as nulls of every layer below it
(the reference pushes them down), but an entry keeps the level of its
outermost null.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cached_property

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedTypeError
from lancelet.file.schema import is_list_like, item_field
from lancelet.file.v2_0.layout import is_packed_struct

# Codes: 0 is valid; a null at layer i is 1 + 2*i, an empty list at layer i is 2 + 2*i.
_NULL, _EMPTY = 1, 2


@dataclass(frozen=True)
class LeafPath:
    """The schema's view of one leaf column: which layers lie above it."""

    field: pa.Field
    name: str  # dotted path, for messages
    lists: tuple[bool, ...]  # one per layer, outermost first: a list layer or not
    # The field's metadata over its ancestors' (pylance applies a struct's or a list's
    # encoding metadata to everything below it).
    metadata: Mapping[bytes, bytes] = dataclass_field(default_factory=dict)
    # A struct without fields: it owns a column of levels only (see shred).
    empty_struct: bool = False

    @property
    def num_lists(self) -> int:
        return sum(self.lists)


@dataclass(frozen=True)
class LeafBatch:
    """One batch of one leaf column, before levels are numbered."""

    values: pa.Array  # one per visible entry
    rep: NDArray[np.uint16] | None  # None when no list lies above the leaf
    codes: NDArray[np.uint16] | None  # None when every entry is valid at every layer
    nulls: tuple[bool, ...]  # per layer: does it hold a null (a struct's counts below it)
    empties: tuple[bool, ...]  # per layer: does it hold an empty list
    num_rows: int
    lists: tuple[bool, ...]  # the path's layers (LeafPath.lists)
    # The values were gathered (``take``) around hidden items and hold nulls: Arrow's
    # gather zeroes the bytes under nulls, where a slice keeps them, so the bytes of a
    # page depend on how the rows were batched (the values read back do not).
    gathered_nulls: bool = False

    @property
    def num_entries(self) -> int:
        if self.rep is not None:
            return len(self.rep)
        return len(self.values)

    @cached_property
    def values_nbytes(self) -> int:
        """``values.nbytes``, worked out once: Arrow walks a slice's buffers for it (a
        few microseconds), and a writer asks it of each batch as it buffers and again
        as it cuts pages."""
        return int(self.values.nbytes)

    def visible(self) -> NDArray[np.bool_] | None:
        """Which entries have an item (None: all): those valid or null at a layer
        below the innermost list."""
        if self.codes is None or not any(self.lists):
            return None
        innermost = max(i for i, is_list in enumerate(self.lists) if is_list)
        layer = (self.codes.astype(np.int64) - 1) // 2
        visible: NDArray[np.bool_] = (self.codes == 0) | (layer > innermost)
        return visible

    def slice_rows(self, start: int, end: int) -> LeafBatch:
        """Rows ``[start, end)``; the layer flags stay those of the whole batch (a
        superset is always a correct description)."""
        if self.rep is None:
            lo, hi = start, end
            first, count = start, end - start
        else:
            starts = np.flatnonzero(self.rep == sum(self.lists))
            starts = np.append(starts, len(self.rep))
            lo, hi = int(starts[start]), int(starts[end])
            visible = self.visible()
            if visible is None:
                first, count = lo, hi - lo
            else:
                first = int(visible[:lo].sum())
                count = int(visible[lo:hi].sum())
        return LeafBatch(
            self.values.slice(first, count),
            None if self.rep is None else self.rep[lo:hi],
            None if self.codes is None else self.codes[lo:hi],
            self.nulls, self.empties, end - start, self.lists, self.gathered_nulls,
        )  # fmt: skip


def _fixed_width(dtype: pa.DataType) -> bool:
    if pa.types.is_fixed_size_list(dtype):
        return _fixed_width(dtype.value_type)
    return bool(
        pa.types.is_boolean(dtype)
        or pa.types.is_integer(dtype)
        or pa.types.is_floating(dtype)
        or pa.types.is_decimal(dtype)
        or pa.types.is_temporal(dtype)
        or pa.types.is_fixed_size_binary(dtype)
    )


def leaf_paths(schema: pa.Schema) -> list[LeafPath]:
    """Every leaf column of ``schema`` in column order (pre-order, structs and lists
    owning none; a packed struct is one leaf)."""
    out: list[LeafPath] = []
    for top in schema:
        _add_leaf_paths(top, top.name, (), {}, out)
    return out


def _add_leaf_paths(
    field: pa.Field,
    name: str,
    lists: tuple[bool, ...],
    inherited: Mapping[bytes, bytes],
    out: list[LeafPath],
) -> None:
    # A module function: a recursive closure holds itself, a cycle only the garbage
    # collector frees.
    dtype = field.type
    meta = {**inherited, **(field.metadata or {})}
    if pa.types.is_struct(dtype) and not is_packed_struct(field):
        if dtype.num_fields == 0:
            if any(lists):
                raise UnsupportedTypeError(
                    f"column {name!r}: empty structs inside lists cannot be written"
                )
            out.append(LeafPath(field, name, (False,), meta, empty_struct=True))
            return
        for child in dtype:
            _add_leaf_paths(child, f"{name}.{child.name}", (*lists, False), meta, out)
    elif is_list_like(dtype):
        item = item_field(dtype)
        _add_leaf_paths(item, f"{name}.{item.name}", (*lists, True), meta, out)
    elif pa.types.is_fixed_size_list(dtype) and not _fixed_width(dtype):
        raise UnsupportedTypeError(
            f"column {name!r}: fixed-size lists of {dtype.value_type} cannot be written "
            "in Lance file format 2.1+ by lancelet (only fixed-width items)"
        )
    elif pa.types.is_union(dtype):
        raise UnsupportedTypeError(f"column {name!r}: Arrow type {dtype} cannot be written")
    else:
        out.append(LeafPath(field, name, (*lists, False), meta))


def _validity(arr: pa.Array) -> NDArray[np.bool_] | None:
    """The array's own validity (None: no nulls)."""
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    if pa.types.is_dictionary(arr.type):
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        dictionary = arr.dictionary
        if dictionary.null_count:
            # A valid index to a null dictionary value is a null value.
            indices = np.asarray(arr.indices.fill_null(0).to_numpy(), dtype=np.int64)
            item_ok = np.asarray(dictionary.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            valid &= item_ok[indices]
        return None if valid.all() else valid
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


@dataclass
class _Slots:
    """Level entries while walking down: ``idx`` into the current array, -1 for entries
    that ended above (a null or empty list, or a null struct above a list)."""

    idx: NDArray[np.int64]
    rep: NDArray[np.uint16] | None
    codes: NDArray[np.uint16]
    nulls: list[bool]
    empties: list[bool]
    identity: bool  # idx is exactly 0..len-1 (no list above): arrays need no take


def _item_layer(slots: _Slots, valid: NDArray[np.bool_] | None, layer: int) -> _Slots:
    # With no list above, every entry is live (idx is 0..n-1).
    live = np.ones(len(slots.idx), dtype=bool) if slots.identity else slots.idx >= 0
    if valid is None:
        has_null = bool(slots.codes.any() if slots.identity else ((slots.codes != 0) & live).any())
        return _Slots(
            slots.idx, slots.rep, slots.codes, [*slots.nulls, has_null],
            [*slots.empties, False], slots.identity,
        )  # fmt: skip
    ok = np.ones(len(slots.idx), dtype=bool)
    ok[live] = valid[slots.idx[live]]
    fresh_null = ~ok & (slots.codes == 0)
    codes = np.where(fresh_null, np.uint16(_NULL + 2 * layer), slots.codes)
    has_null = bool((live & ((slots.codes != 0) | ~ok)).any())
    return _Slots(
        slots.idx, slots.rep, codes, [*slots.nulls, has_null], [*slots.empties, False],
        slots.identity,
    )  # fmt: skip


def _list_layer(slots: _Slots, arr: pa.Array, layer: int, ordinal: int) -> _Slots:
    offsets = np.asarray(arr.offsets.to_numpy(), dtype=np.int64)
    valid = _validity(arr)
    idx = slots.idx
    live = idx >= 0
    # Only live entries point into this array: it may hold no lists at all (every
    # list above it empty or null), so the others must not index it.
    at = idx[live]
    start = np.zeros(len(idx), dtype=np.int64)
    length = np.zeros(len(idx), dtype=np.int64)
    start[live] = offsets[at]
    length[live] = offsets[at + 1] - start[live]
    ok = np.ones(len(idx), dtype=bool)
    if valid is not None:
        ok[live] = valid[at]
    fresh = live & (slots.codes == 0)
    expand = fresh & ok & (length > 0)
    null = fresh & ~ok
    empty = fresh & ok & (length == 0)
    has_null = bool((live & ((slots.codes != 0) | ~ok)).any())
    codes = np.where(null, np.uint16(_NULL + 2 * layer), slots.codes)
    codes = np.where(empty, np.uint16(_EMPTY + 2 * layer), codes)

    counts = np.where(expand, length, 1)
    group = np.repeat(np.arange(len(idx)), counts)
    first = np.cumsum(counts) - counts
    pos = np.arange(len(group), dtype=np.int64) - first[group]
    new_idx = np.where(expand[group], start[group] + pos, -1)
    old_rep = np.zeros(len(idx), dtype=np.uint16) if slots.rep is None else slots.rep
    # Until the leaf, ``rep`` holds the ordinal (1 = outermost) of the outermost list an
    # entry starts: the level depends on how many lists the leaf's path holds.  A live
    # entry starting a list takes this list unless it starts an outer one; entries that
    # ended above keep theirs.
    head_rep = np.where(live & (old_rep == 0), np.uint16(ordinal), old_rep)
    new_rep = np.where(pos == 0, head_rep[group], np.uint16(0)).astype(np.uint16)
    return _Slots(
        new_idx, new_rep, codes[group], [*slots.nulls, has_null],
        [*slots.empties, bool(empty.any())], False,
    )  # fmt: skip


def _leaf(path: LeafPath, arr: pa.Array, slots: _Slots, num_rows: int) -> LeafBatch:
    layer = len(path.lists) - 1
    slots = _item_layer(slots, _validity(arr), layer)
    gathered = False
    if slots.identity:
        values = arr
    else:
        visible = slots.idx[slots.idx >= 0]
        first = int(visible[0]) if len(visible) else 0
        if len(visible) == 0 or int(visible[-1]) - first + 1 == len(visible):
            # Indices only grow, so a run without gaps is a slice (no copy).
            values = arr.slice(first, len(visible))
        else:
            values = arr.take(pa.array(visible, type=pa.int64()))
            gathered = _holds_nulls(arr)
    codes = slots.codes if slots.codes.any() else None
    rep = slots.rep
    if rep is not None:
        top = np.uint16(path.num_lists + 1)
        rep = np.where(rep > 0, top - rep, rep).astype(np.uint16)
    return LeafBatch(
        values, rep, codes, tuple(slots.nulls), tuple(slots.empties), num_rows, path.lists,
        gathered,
    )  # fmt: skip


def _holds_nulls(arr: pa.Array) -> bool:
    """Does ``arr`` or (a fixed-size list) any layer of its items hold a null."""
    if arr.null_count:
        return True
    return pa.types.is_fixed_size_list(arr.type) and _holds_nulls(arr.values)


def shred(paths: Sequence[LeafPath], schema: pa.Schema, batch: pa.RecordBatch) -> list[LeafBatch]:
    """Split one batch (of ``schema``'s columns and types) into its leaf columns, in
    the order of ``paths`` (which came from ``schema``, metadata included)."""
    n = batch.num_rows
    shredder = _Shredder(iter(paths), n)
    # Every layer makes new arrays rather than writing into these, so columns share them.
    ramp, no_codes = np.arange(n, dtype=np.int64), np.zeros(n, np.uint16)
    for column, field in zip(batch.columns, schema, strict=True):
        shredder.visit(column, field, _Slots(ramp, None, no_codes, [], [], True), 0, 0)
    return shredder.out


class _Shredder:
    """The walk of :func:`shred`: a class, not a recursive closure, whose reference
    cycle would keep every batch's arrays until a garbage collection."""

    def __init__(self, paths: Iterator[LeafPath], num_rows: int) -> None:
        self.paths = paths
        self.num_rows = num_rows
        self.out: list[LeafBatch] = []

    def visit(self, arr: pa.Array, field: pa.Field, slots: _Slots, depth: int, lists: int) -> None:
        dtype = arr.type
        n = self.num_rows
        if pa.types.is_struct(dtype) and dtype.num_fields == 0 and not is_packed_struct(field):
            self.out.append(_empty_struct(next(self.paths), arr, slots, n))
        elif pa.types.is_struct(dtype) and not is_packed_struct(field):
            slots = _item_layer(slots, _validity(arr), depth)
            for i, child in enumerate(dtype):
                self.visit(arr.field(i), child, slots, depth + 1, lists)
        elif is_list_like(dtype):
            slots = _list_layer(slots, arr, depth, lists + 1)
            self.visit(arr.values, item_field(dtype), slots, depth + 1, lists + 1)
        elif depth == 0 and _validity(arr) is None:
            # A top-level column without nulls (most of them): its values as they are.
            path = next(self.paths)
            self.out.append(LeafBatch(arr, None, None, (False,), (False,), n, path.lists))
        else:
            self.out.append(_leaf(next(self.paths), arr, slots, n))


def _empty_struct(path: LeafPath, arr: pa.Array, slots: _Slots, num_rows: int) -> LeafBatch:
    """An empty struct's column: one entry per row and no values.

    As in the reference, its pages carry one layer and no levels, so every row
    reads as a valid empty struct: a null one (or one under a null struct) could
    not be told apart and is refused.
    """
    if arr.null_count or slots.codes.any():
        raise UnsupportedTypeError(
            f"column {path.name!r}: an empty struct with nulls (its own or a parent's) "
            "cannot be written in Lance file format 2.1+"
        )
    return LeafBatch(pa.nulls(num_rows), None, None, (False,), (False,), num_rows, path.lists)


@dataclass(frozen=True)
class PageLevels:
    """The levels of one page of one leaf column, numbered."""

    rep: NDArray[np.uint16] | None
    defs: NDArray[np.uint16] | None
    layers: tuple[pb.RepDefLayer.ValueType, ...]  # innermost first
    max_rep: int
    max_visible: int | None  # def levels above it have no item (None: no list layer)
    num_rows: int

    @property
    def visible(self) -> NDArray[np.bool_] | None:
        """Which entries have an item (None: all of them)."""
        if self.defs is None or self.max_visible is None:
            return None
        return self.defs <= self.max_visible

    @property
    def num_entries(self) -> int:
        levels = self.rep if self.rep is not None else self.defs
        return 0 if levels is None else len(levels)


def _numbering(
    lists: tuple[bool, ...], nulls: Sequence[bool], empties: Sequence[bool]
) -> tuple[NDArray[np.uint16], list[pb.RepDefLayer.ValueType], int]:
    """Code -> level table, the layers innermost first, and the highest level."""
    meanings: list[pb.RepDefLayer.ValueType] = []
    widths: list[int] = []
    for is_list, null, empty in zip(lists, nulls, empties, strict=True):
        if is_list:
            kind = (
                pb.REPDEF_NULL_AND_EMPTY_LIST if null and empty
                else pb.REPDEF_NULLABLE_LIST if null
                else pb.REPDEF_EMPTYABLE_LIST if empty
                else pb.REPDEF_ALL_VALID_LIST
            )  # fmt: skip
        else:
            kind = pb.REPDEF_NULLABLE_ITEM if null else pb.REPDEF_ALL_VALID_ITEM
        meanings.append(kind)
        widths.append(int(null) + int(empty))
    table = np.zeros(1 + 2 * len(lists), dtype=np.uint16)
    current = sum(widths)
    for layer, (null, empty) in enumerate(zip(nulls, empties, strict=True)):
        if null and empty:
            table[_NULL + 2 * layer], table[_EMPTY + 2 * layer] = current - 1, current
        elif null:
            table[_NULL + 2 * layer] = current
        elif empty:
            table[_EMPTY + 2 * layer] = current
        current -= widths[layer]
    return table, meanings[::-1], sum(widths)


def _max_visible(
    lists: tuple[bool, ...], layers_inner_first: list[pb.RepDefLayer.ValueType]
) -> int | None:
    if not any(lists):
        return None
    inner_items = len(lists) - 1 - max(i for i, is_list in enumerate(lists) if is_list)
    return sum(
        1 if kind == pb.REPDEF_NULLABLE_ITEM else 0 for kind in layers_inner_first[:inner_items]
    )


def page_levels(path: LeafPath, batches: Sequence[LeafBatch]) -> PageLevels:
    """Number the levels of batches that make one page."""
    layers = len(path.lists)
    nulls = [any(b.nulls[i] for b in batches) for i in range(layers)]
    empties = [any(b.empties[i] for b in batches) for i in range(layers)]
    table, meanings, max_def = _numbering(path.lists, nulls, empties)
    num_rows = sum(b.num_rows for b in batches)
    rep = None
    if path.num_lists:
        rep = _concat([b.rep for b in batches if b.rep is not None])
    defs = None
    if max_def:
        pieces = [
            np.zeros(b.num_entries, np.uint16) if b.codes is None else table[b.codes]
            for b in batches
        ]
        defs = _concat(pieces)
    return PageLevels(
        rep, defs, tuple(meanings), path.num_lists, _max_visible(path.lists, meanings), num_rows
    )


def _concat(pieces: list[NDArray[np.uint16]]) -> NDArray[np.uint16]:
    if not pieces:
        return np.zeros(0, dtype=np.uint16)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def row_starts(levels: PageLevels) -> NDArray[np.int64]:
    """Entry index at which each row starts (the last entry is the end)."""
    if levels.rep is None:
        return np.arange(levels.num_rows + 1, dtype=np.int64)
    starts = np.flatnonzero(levels.rep == levels.max_rep)
    return np.append(starts, len(levels.rep)).astype(np.int64)
