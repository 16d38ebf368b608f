"""Fuzzing the 2.1 / 2.2 reader through its public paths (``LanceFileReader`` and
``lancelet.dataset``) on checked-in pylance 14 fixtures that hold every layout and
compression pylance writes (:mod:`tests.fuzz.structural_fixture`).

Unlike :mod:`tests.fuzz.test_fuzz_v2_1`, which counts every byte as payload, the
mutants here know which bytes are structure (:mod:`tests.fuzz.structural_regions`):
a flip of the footer, an offset table, a page layout, a chunk metadata word or
header, a bit width, a run length, a repetition index entry, a full-zip control word
or value length must be refused or change nothing.  Flips of payload (values,
definition levels, compressed streams) may give other rows, never a crash, a hang,
a foreign exception or an invalid array.  Truncations and hostile page layouts
(every number of every layout set to sizes no file justifies) complete the set.

Each campaign is seeded and has a time budget; ``python -m
tests.fuzz.test_fuzz_structural N`` runs N times the mutants without time limits.
"""

from __future__ import annotations

import copy
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import any_pb2
from google.protobuf.message import Message

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file import LanceFileReader
from tests.file import surgery
from tests.fuzz import structural_fixture as fx
from tests.fuzz.harness import (
    Campaign,
    Mutant,
    Outcome,
    assert_acceptable,
    replacement,
    truncations,
)
from tests.fuzz.structural_regions import Regions, regions

CHECK = "tests.fuzz.structural_checks:read_everything"


def stratified(where: Regions, kind: str, per_label: int, seed: int) -> list[Mutant]:
    """``per_label`` seeded single-byte changes in each kind of ``kind`` bytes
    (``"structure"`` or ``"payload"``), so rare kinds (a bit width, a first offset)
    are hit as surely as common ones."""
    by_label: dict[str, list[range]] = {}
    for span, label in where.named:
        if label.startswith(kind):
            by_label.setdefault(label, []).append(span)
    out = []
    for number, (_, ranges) in enumerate(sorted(by_label.items())):
        out += flips(ranges, per_label, seed + number, payload=kind == "payload")
    order = np.random.default_rng(seed).permutation(len(out))
    return [out[i] for i in order]  # every kind early, whatever the time budget allows


def flips(ranges: list[range], count: int, seed: int, payload: bool) -> list[Mutant]:
    """``count`` seeded single-byte changes at distinct offsets inside ``ranges``."""
    offsets = np.concatenate([np.arange(r.start, r.stop) for r in ranges])
    rng = np.random.default_rng(seed)
    picks = rng.choice(offsets, min(count, offsets.size), replace=False)
    out = []
    for offset in picks.tolist():
        choice = int(rng.integers(0, 10))
        if choice < 8:
            kind, value = "xor", 1 << int(rng.integers(0, 8))
        else:
            kind, value = "set", 0 if choice == 8 else 0xFF
        out.append(Mutant(fx.DATA, kind, offset, value, payload=payload))
    return out


# -- hostile page layouts ----------------------------------------------------------------


def _layout(page: object) -> pb.PageLayout:
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(page.encoding.direct.encoding)  # type: ignore[attr-defined]
    msg = pb.PageLayout()
    msg.ParseFromString(wrapper.value)
    return msg


def _set_layout(page: object, msg: pb.PageLayout) -> None:
    wrapper = any_pb2.Any()
    wrapper.Pack(msg, type_url_prefix="/")
    page.encoding.direct.encoding = wrapper.SerializeToString()  # type: ignore[attr-defined]


def _numbers(message: Message, path: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    """Paths to every integer field set in a message tree (repeated ones by index)."""
    for field, value in message.ListFields():
        if field.message_type is not None:
            items = value if field.is_repeated else [value]
            for i, item in enumerate(items):
                step = (field.name, i) if field.is_repeated else (field.name,)
                yield from _numbers(item, (*path, *step))
        elif field.type in (field.TYPE_UINT64, field.TYPE_UINT32, field.TYPE_INT32):
            if field.is_repeated:
                for i in range(len(value)):
                    yield (*path, field.name, i)
            else:
                yield (*path, field.name)


def _assign(message: Message, path: tuple[object, ...], value: int) -> None:
    node: object = message
    for step in path[:-1]:
        node = node[step] if isinstance(step, int) else getattr(node, str(step))  # type: ignore[index]
    last = path[-1]
    if isinstance(last, int):
        node[last] = value  # type: ignore[index]
    else:
        setattr(node, last, value)


def _hostile(field_path: tuple[object, ...]) -> list[int]:
    name = next(str(s) for s in reversed(field_path) if isinstance(s, str))
    if name in ("layers", "scheme"):
        return [0, 1, 5, 7]
    if name.startswith("bits") or name in ("uncompressed_bits_per_value", "items_per_value"):
        return [0, 1, 3, 63, 65, 255, 2**31 - 1, 2**32 - 1]
    return [0, 1, 2**31 - 1, 2**32 - 1, 2**40, 2**63, 2**64 - 1]


Edit = tuple[str, int, int, tuple[object, ...], int]  # label, column, page, path, value


def layout_edits(data: bytes) -> list[Edit]:
    """Every single hostile change to one number of the layout of a column's first and
    last page, and to each page's row count (``path`` empty)."""
    parts = surgery.parse(data)
    out: list[Edit] = []
    for c, column in enumerate(parts.columns):
        for p in sorted({0, len(column.pages) - 1}):
            msg = _layout(column.pages[p])
            for path in _numbers(msg):
                for value in _hostile(path):
                    label = f"column {c} page {p}: {'.'.join(map(str, path))} = {value}"
                    out.append((label, c, p, path, value))
        for p in range(len(column.pages)):
            for value in (0, 1, 2**32, 2**64 - 1):
                out.append((f"column {c} page {p}: length {value}", c, p, (), value))
    return out


def _apply(data: bytes, edit: Edit) -> bytes | None:
    _, c, p, path, value = edit
    forged = surgery.parse(data)
    page = forged.columns[c].pages[p]
    if not path:
        page.length = value
        return surgery.emit(forged)
    msg = _layout(page)
    edited = copy.deepcopy(msg)
    try:
        _assign(edited, path, value)
    except (TypeError, ValueError):
        return None
    if edited == msg:
        return None
    _set_layout(page, edited)
    return surgery.emit(forged)


def hostile_layouts(root: Path, count: int, seed: int) -> list[Mutant]:
    data = (root / fx.DATA).read_bytes()
    edits = layout_edits(data)
    rng = np.random.default_rng(seed)
    out = []
    for index in rng.permutation(len(edits)).tolist():
        forged = _apply(data, edits[index])
        if forged is not None:
            out.append(replacement(fx.DATA, forged, edits[index][0]))
        if len(out) == count:
            break
    return out


# -- campaigns -----------------------------------------------------------------------------


def copy_fixture(version: str, into: Path) -> Path:
    root = into / f"structural-{version}"
    shutil.copytree(fx.folder(version), root)
    return root


def test_fixture_reads_as_written() -> None:
    """The pristine fixtures read as the values they were written from."""
    for version in ("2.1", "2.2"):
        got = LanceFileReader(fx.folder(version) / fx.DATA).read_all().to_table()
        assert got.equals(fx.table(version))


# What the 2.2 fixture must hold for the campaign to cover every layout and codec.
EXPECTED_2_2 = {
    "structure: chunk metadata",
    "structure: chunk header",
    "structure: value bit width",
    "structure: def bit width",
    "structure: rep bit width",
    "structure: rep out_of_line_bitpacking",
    "structure: def run block header",
    "structure: def run lengths",
    "structure: value run lengths",
    "structure: value first offset",
    "structure: value compressed size",
    "structure: dictionary compressed size",
    "structure: repetition index",
    "structure: full-zip repetition index",
    "structure: control word",
    "structure: value length",
    "structure: packed field length",
    "payload: def out_of_line_bitpacking",
    "payload: value flat",
    "payload: value bit-packed values",
    "payload: value byte_stream_split",
    "payload: value compressed bytes",
    "payload: value packed_struct",
    "payload: value fixed_size_list",
    "payload: value bytes",
    "payload: dictionary compressed bytes",
    "payload: fixed-width rows",
    "payload: packed variable field",
    "payload: constant page definition levels",
    "payload: column metadata (unguarded)",
}


def test_the_fixture_holds_every_layout() -> None:
    """The byte map is a partition of the file and finds every kind of byte."""
    for version in ("2.1", "2.2"):
        path = fx.folder(version) / fx.DATA
        where = regions(path)
        cover = np.zeros(path.stat().st_size, dtype=np.int64)
        for span, _ in where.named:
            cover[span.start : span.stop] += 1
        assert bool(np.all(cover == 1)), f"{version}: bytes mapped {set(cover.tolist())} times"
    missing = EXPECTED_2_2 - set(regions(fx.folder("2.2") / fx.DATA).labels)
    assert not missing, missing


def run(root: Path, mutants: list[Mutant], budget_s: float) -> list[Outcome]:
    return Campaign(root, CHECK, mutants, budget_s=budget_s).run()


# Per version: (structure flips per kind, payload flips per kind, truncations, hostile
# layouts, seconds).  One campaign each: a worker's start costs as much as many mutants.
PLAN = {"2.2": (2, 1, 5, 25, 16.0), "2.1": (1, 1, 4, 15, 10.0)}


@pytest.mark.parametrize("version", list(PLAN))
def test_mutants_read_as_the_original_or_fail(tmp_path: Path, version: str) -> None:
    structure, payload, cuts, layouts, budget_s = PLAN[version]
    root = copy_fixture(version, tmp_path)
    where = regions(root / fx.DATA)
    mutants = stratified(where, "structure", structure, seed=21)
    mutants += stratified(where, "payload", payload, seed=22)
    mutants += truncations(root, fx.DATA, cuts, seed=23)
    mutants += hostile_layouts(root, layouts, seed=24)
    order = np.random.default_rng(25).permutation(len(mutants))
    outcomes = run(root, [mutants[i] for i in order], budget_s)
    print(f"{version}: {len(outcomes)} of {len(mutants)} mutants ran")
    assert_acceptable(outcomes, minimum=len(mutants) // 3)
    refused = [o for o in outcomes if not o.mutant.payload and o.kind == "error"]
    assert len(refused) > len(outcomes) // 2


def hunt(scale: int) -> None:
    """A long campaign over both fixtures; prints each misbehaving mutant."""
    with tempfile.TemporaryDirectory() as tmp:
        for version in ("2.1", "2.2"):
            root = copy_fixture(version, Path(tmp))
            where = regions(root / fx.DATA)
            mutants = flips(where.structure, 400 * scale, seed=scale, payload=False)
            mutants += stratified(where, "structure", 10 * scale, seed=scale + 4)
            mutants += flips(where.payload, 200 * scale, seed=scale + 1, payload=True)
            mutants += truncations(root, fx.DATA, 20 * scale, seed=scale + 2)
            mutants += hostile_layouts(root, 300 * scale, seed=scale + 3)
            outcomes = run(root, mutants, 10_000)
            kinds: dict[str, int] = {}
            for o in outcomes:
                kinds[o.kind] = kinds.get(o.kind, 0) + 1
            bad = [o for o in outcomes if not o.acceptable]
            print(f"{version}: {len(outcomes)} mutants {kinds}; {len(bad)} misbehaved")
            for o in bad:
                print(f"  {o.kind}: {o.mutant.describe()}: {o.detail[-600:]!r}")


if __name__ == "__main__":
    hunt(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
