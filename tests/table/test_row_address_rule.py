"""Row addresses are packed and unpacked only by ``lancelet.table.row_address``.

The layout (fragment id in the high 32 bits, offset in the low 32) written by hand
in several modules drifts: one copy masks with a signed constant, another forgets a
cast.  This check reads the source for the idioms of that arithmetic (shifts by 32,
32-bit masks) anywhere but the module that owns it and code whose bit arithmetic is
not about row addresses.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lancelet.table import row_address

_SRC = Path(__file__).resolve().parents[2] / "src" / "lancelet"

_IDIOMS = re.compile(
    r"(<<|>>)\s*(np\.uint64\()?\s*32\b"  # a shift by 32
    r"|0x[fF]{4}_?[fF]{4}"  # a 32-bit mask (or the 64-bit all-ones sentinel)
    r"|4294967295|4294967296"  # the same numbers spelt in decimal
    r"|shiftright\(.*,\s*32\)"  # Spark's shift
)

# Modules allowed the idioms, each with the reason.
_ALLOWED = {
    "table/row_address.py": "the module that owns the layout",
    "file/codecs": "byte-level codecs (FSST headers and hashes), not row addresses",
    "index/_sbbf.py": "Bloom filter hashing splits 64-bit hashes, not row addresses",
}


def _allowed(path: Path, root: Path) -> bool:
    relative = path.relative_to(root).as_posix()
    return any(relative == a or relative.startswith(a + "/") for a in _ALLOWED)


def hand_written_addresses(root: Path = _SRC) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if _allowed(path, root) or "_proto" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _IDIOMS.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_row_addresses_only_through_row_address() -> None:
    found = hand_written_addresses()
    assert not found, (
        "row-address arithmetic outside lancelet/table/row_address.py; use its helpers "
        "(pack, unpack, fragment_ids, offsets, of_row, fragment_of, ...):\n" + "\n".join(found)
    )


def test_the_check_sees_the_idioms(tmp_path: Path) -> None:
    # The check must be able to fail: each idiom, written in a module, is reported.
    lines = [
        "a = (f << 32) | o",
        "f = a >> np.uint64(32)",
        "o = a & 0xFFFF_FFFF",
        "o = a & 0xffffffff",
        "x = F.shiftright(F.col('_rowaddr'), 32)",
        "limit = 4294967296",
    ]
    (tmp_path / "mod.py").write_text("\n".join([*lines, "fine = a << 16", "ok = 2 * 32"]))
    assert len(hand_written_addresses(tmp_path)) == len(lines)


# -- the helpers, against Python integer arithmetic ----------------------------------

_PARTS = st.integers(0, 2**32 - 1)


@given(st.lists(st.tuples(_PARTS, _PARTS), max_size=50))
def test_pack_and_unpack(rows: list[tuple[int, int]]) -> None:
    fragments = np.array([f for f, _ in rows], dtype=np.uint32)
    offsets = np.array([o for _, o in rows], dtype=np.uint32)
    packed = row_address.pack(fragments, offsets)
    assert packed.dtype == np.uint64
    assert packed.tolist() == [f * 2**32 + o for f, o in rows]
    ids, offs = row_address.unpack(packed)
    assert ids.dtype == offs.dtype == np.uint32
    assert ids.tolist() == fragments.tolist() and offs.tolist() == offsets.tolist()
    for (f, o), address in zip(rows, packed.tolist(), strict=True):
        assert row_address.of_row(f, o) == address
        assert (row_address.fragment_of(address), row_address.offset_of(address)) == (f, o)


@given(_PARTS, st.integers(0, 1000), st.integers(0, 1000))
def test_one_fragment(fragment: int, start: int, count: int) -> None:
    expected = [fragment * 2**32 + start + k for k in range(count)]
    assert row_address.of_range(fragment, start, start + count).tolist() == expected
    offsets = np.arange(start, start + count, dtype=np.int64)
    assert row_address.of_offsets(fragment, offsets).tolist() == expected
    first, end = row_address.fragment_span(fragment)
    assert (first, end) == (fragment * 2**32, (fragment + 1) * 2**32)
    assert row_address.fragment_starts(np.array([fragment])).tolist() == [first]


@given(st.lists(st.tuples(st.integers(0, 5), _PARTS), max_size=60))
def test_runs_and_split_by_fragment(rows: list[tuple[int, int]]) -> None:
    addresses = np.array(sorted({f * 2**32 + o for f, o in rows}), dtype=np.uint64)
    bounds = row_address.fragment_runs(addresses).tolist()
    expected: dict[int, list[int]] = {}
    for a in addresses.tolist():
        expected.setdefault(a // 2**32, []).append(a % 2**32)
    starts = [0]
    for count in [len(v) for v in expected.values()]:
        starts.append(starts[-1] + count)
    assert bounds == (starts if len(addresses) else [0])
    split = row_address.by_fragment(addresses)
    assert {k: v.tolist() for k, v in split.items()} == expected
