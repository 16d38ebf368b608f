"""Repetition and definition levels -> the validity and offsets of every layer.

A leaf column's page lists *entries*: one per leaf item, plus one per null or empty
list (and per list hidden under a null parent), each with a repetition level
(``rep``) and a definition level (``def``).  Its ``layers`` (``RepDefLayer``) name
the leaf's own item first, then each ancestor, outermost last.

Definition levels count up from the innermost layer: 0 is "valid all the way", and
each layer owns the next ``1`` (nullable item, nullable list, emptyable list) or ``2``
(null list, then empty list) values; an entry's level is that of its *outermost*
null or empty layer.  Repetition levels count list layers from the innermost (1) up:
``rep = r > 0`` starts a new list at list layer ``r`` (and so at every list layer
inside it), ``rep = 0`` continues the innermost list.

Each layer has *elements*, the entries that are a value of that layer's Arrow array.
With ``c`` list layers below a layer, an entry is an element of it when

* ``rep >= c`` (it starts a new element rather than continuing one below), and
* its definition level belongs to a layer with at most ``c`` list layers at or
  below it (``levels_to_rep``): a null or empty list at or above the next list layer
  hides the entry from this layer.

A list layer ``m`` (``m`` lists at or below it) has elements ``rep >= m`` with
``levels_to_rep <= m``; its children are the elements of the layer below it; the
offset of each list is the number of children before its entry.  All of this is a
few whole-array numpy passes per layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file.v2_1.read.values import I64, Bools

ALL_VALID_ITEM = pb.REPDEF_ALL_VALID_ITEM
ALL_VALID_LIST = pb.REPDEF_ALL_VALID_LIST
NULLABLE_ITEM = pb.REPDEF_NULLABLE_ITEM
NULLABLE_LIST = pb.REPDEF_NULLABLE_LIST
EMPTYABLE_LIST = pb.REPDEF_EMPTYABLE_LIST
NULL_AND_EMPTY_LIST = pb.REPDEF_NULL_AND_EMPTY_LIST

_DEF_LEVELS: dict[int, int] = {
    ALL_VALID_ITEM: 0,
    ALL_VALID_LIST: 0,
    NULLABLE_ITEM: 1,
    NULLABLE_LIST: 1,
    EMPTYABLE_LIST: 1,
    NULL_AND_EMPTY_LIST: 2,
}
_LISTS = frozenset({ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST})


def is_list(layer: int) -> bool:
    return layer in _LISTS


@dataclass(frozen=True)
class LayerShape:
    """The static facts of a page's layers."""

    layers: tuple[int, ...]
    bases: tuple[int, ...]  # the definition level just below each layer's own
    max_def: int
    max_rep: int
    levels_to_rep: np.ndarray  # per definition level: list layers at or below its owner
    max_visible: int  # definition levels up to here mark entries that have an item

    @staticmethod
    def of(layers: tuple[int, ...]) -> LayerShape:
        unknown = [x for x in layers if x not in _DEF_LEVELS]
        if unknown or not layers:
            raise CorruptFileError(f"unknown or missing repetition/definition layers {layers}")
        if is_list(layers[0]):
            raise CorruptFileError("the innermost repetition/definition layer is a list")
        bases, lt, lists, base = [], [0], 0, 0
        max_visible = None
        for layer in layers:
            bases.append(base)
            if is_list(layer):
                if max_visible is None:
                    max_visible = base
                lists += 1
            lt.extend([lists] * _DEF_LEVELS[layer])
            base += _DEF_LEVELS[layer]
        return LayerShape(
            tuple(layers),
            tuple(bases),
            base,
            lists,
            np.asarray(lt, dtype=np.int64),
            base if max_visible is None else max_visible,
        )


@dataclass(frozen=True)
class Layer:
    """One layer of a decoded leaf: how many elements, which are valid (None: all),
    and for a list layer the offsets (one more than the elements) into the layer below."""

    count: int
    validity: Bools | None
    offsets: I64 | None = None


def check_levels(shape: LayerShape, rep: np.ndarray | None, defs: np.ndarray | None) -> None:
    """Refuse levels that no layer defines, before they index anything."""
    if (rep is None) != (shape.max_rep == 0):
        raise CorruptFileError(
            f"the page has {shape.max_rep} list layers but "
            f"{'no' if rep is None else 'some'} repetition levels"
        )
    if rep is not None and len(rep) and int(rep.max()) > shape.max_rep:
        raise CorruptFileError(
            f"repetition level {int(rep.max())} is above the page's {shape.max_rep} list layers"
        )
    if defs is not None and len(defs) and int(defs.max()) > shape.max_def:
        raise CorruptFileError(
            f"definition level {int(defs.max())} is above the page's maximum {shape.max_def}"
        )
    if rep is not None and defs is not None and len(rep) != len(defs):
        raise CorruptFileError(f"{len(rep)} repetition levels but {len(defs)} definition levels")


def visible(shape: LayerShape, defs: np.ndarray | None, count: int) -> Bools:
    """Which entries carry an item (not a null or empty list, nor one hidden by them)."""
    if defs is None or shape.max_rep == 0:
        return np.ones(count, dtype=bool)
    out: Bools = defs <= shape.max_visible
    return out


def unravel(
    shape: LayerShape, rep: np.ndarray | None, defs: np.ndarray | None, num_values: int
) -> list[Layer]:
    """Every layer of a run of whole rows, innermost first.

    ``num_values`` is the number of items the levels go with; the entries of the
    innermost layer must be exactly that many.
    """
    check_levels(shape, rep, defs)
    n = len(rep) if rep is not None else len(defs) if defs is not None else num_values
    if rep is not None and n and int(rep[0]) != shape.max_rep:
        raise CorruptFileError("the levels of a row range do not start at a row")
    lt = shape.levels_to_rep[defs] if defs is not None else None
    out: list[Layer] = []
    below = 0  # list layers below the current one
    child: Bools | None = None
    for index, layer in enumerate(shape.layers):
        base = shape.bases[index]
        if is_list(layer):
            mask = _elements(rep, lt, below + 1, n)
            assert child is not None
            out.append(_list_layer(layer, base, rep, defs, mask, child, below + 1))
            below += 1
        else:
            mask = _elements(rep, lt, below, n)
            valid = None
            if layer == NULLABLE_ITEM and defs is not None:
                valid = defs[mask] <= base
            out.append(Layer(int(mask.sum()), valid))
        child = mask
    if out[0].count != num_values:
        raise CorruptFileError(f"the levels describe {out[0].count} items but {num_values} exist")
    return out


def _elements(rep: np.ndarray | None, lt: np.ndarray | None, lists: int, n: int) -> Bools:
    mask = np.ones(n, dtype=bool)
    if rep is not None and lists:
        mask &= rep >= lists
    if lt is not None:
        mask &= lt <= lists
    return mask


def _list_layer(
    layer: int,
    base: int,
    rep: np.ndarray | None,
    defs: np.ndarray | None,
    mask: Bools,
    child: Bools,
    number: int,
) -> Layer:
    assert rep is not None
    starts = rep >= number
    _check_owners(starts, child)
    before: I64 = np.cumsum(child) - child
    offsets = np.empty(int(mask.sum()) + 1, dtype=np.int64)
    offsets[:-1] = before[mask]
    offsets[-1] = int(child.sum())
    valid = None
    if defs is not None and layer in (NULLABLE_LIST, NULL_AND_EMPTY_LIST):
        d = defs[mask]
        valid = d <= base
        if layer == NULL_AND_EMPTY_LIST:
            valid |= d == base + 2
    return Layer(len(offsets) - 1, valid, offsets)


def _check_owners(starts: Bools, child: Bools) -> None:
    """Every child that continues a list must follow a list start that holds items."""
    follows = child & ~starts
    if not follows.any():
        return
    positions = np.arange(len(starts))
    owner = np.maximum.accumulate(np.where(starts, positions, -1))
    owner_f = owner[follows]
    if bool(np.any(owner_f < 0)) or not bool(child[owner_f].all()):
        raise CorruptFileError("a list item follows a null or empty list, or no list at all")
