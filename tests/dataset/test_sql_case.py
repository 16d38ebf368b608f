"""upper() and lower(): Unicode's full case mapping, as pylance maps case.

The characters whose full mapping differs from Arrow's one-character kernels are found
here by comparing Python's mapping (full, with final sigma) with Arrow's over all of
Unicode, independently of lancelet.  Those Python maps to one character other than
Arrow's are Unicode version differences (pylance follows Unicode 16): lancelet refuses
text holding them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet
from lancelet.errors import FilterError
from tests.versions import STORAGE_VERSION

ALL_CHARS = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]


@functools.cache
def differing(direction: str) -> tuple[list[str], list[str]]:
    """The characters whose full ``direction`` mapping (Python's) differs from Arrow's
    kernel: those mapped to several characters (SpecialCasing), and those mapped to
    another single character (a difference of Unicode versions)."""
    arrow = getattr(pc, f"utf8_{direction}")(pa.array(ALL_CHARS)).to_pylist()
    python = [getattr(c, direction)() for c in ALL_CHARS]
    special = [c for c, a, p in zip(ALL_CHARS, arrow, python, strict=True) if a != p]
    return [c for c in special if len(getattr(c, direction)()) > 1], [
        c for c in special if len(getattr(c, direction)()) == 1
    ]


def _unknown() -> set[str]:
    return set(differing("upper")[1]) | set(differing("lower")[1])


def _write(path: Path, texts: list[str | None]) -> None:
    table = pa.table(
        {"id": pa.array(range(len(texts)), pa.int64()), "s": pa.array(texts, pa.string())}
    )
    lance.write_dataset(table, path, data_storage_version=STORAGE_VERSION)


def _mapped(dataset: lance.LanceDataset | lancelet.LanceDataset) -> pa.Table:
    return dataset.to_table(columns={"u": "upper(s)", "l": "lower(s)"})


def test_every_code_point_as_pylance_maps_it(tmp_path: Path) -> None:
    """Every character on its own, but those lancelet refuses (tested below)."""
    unknown = _unknown()
    assert "ß" in differing("upper")[0] and "İ" in differing("lower")[0]
    texts: list[str | None] = [c for c in ALL_CHARS if c not in unknown]
    _write(tmp_path / "d", texts)
    expected = _mapped(lance.dataset(tmp_path / "d"))
    got = _mapped(lancelet.dataset(tmp_path / "d"))
    for column in ("u", "l"):
        wrong = pc.invert(pc.equal(got[column], expected[column]))
        positions = np.flatnonzero(wrong.to_numpy(zero_copy_only=False))
        assert [texts[i] for i in positions[:20]] == []


def test_unicode_version_differences_refused(tmp_path: Path) -> None:
    """Where Arrow's and Python's Unicode disagree on a one-character mapping, lancelet
    refuses (pylance's answer follows its Unicode, 16, which may be either)."""
    unknown = sorted(_unknown())
    assert unknown  # in this environment there are some (Unicode 14, 16 and 17)
    _write(tmp_path / "d", [f"x{c}y" for c in unknown])
    dataset = lancelet.dataset(tmp_path / "d")
    for i, char in enumerate(unknown):
        for function in ("upper", "lower"):
            if char not in differing(function)[1]:
                continue
            with pytest.raises(FilterError, match=f"U\\+{ord(char):04X}"):
                dataset.to_table(columns={"r": f"{function}(s)"}, filter=f"id = {i}")


# Characters to build text from: the special ones, Greek around final sigma, the
# case-ignorable ones that final sigma looks past, and plain ones.
_GREEK = "ΣσςΑαΒβΟΔΥΕ"
_IGNORABLE = "'.\u00ad\u0301\u02bc:"


@functools.cache
def _alphabet() -> list[str]:
    special = sorted(set(differing("upper")[0]) | set(differing("lower")[0]))
    return special + list(_GREEK) + list(_IGNORABLE) + list("aZ 9-ÄöI\u0131")


@st.composite
def texts(draw: st.DrawFn) -> list[str | None]:
    alphabet = st.sampled_from(_alphabet()) | st.characters(
        blacklist_categories=("Cs",), blacklist_characters=sorted(_unknown())
    )
    text = st.text(alphabet, max_size=12)
    return draw(st.lists(st.none() | text, min_size=1, max_size=30))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=texts())
def test_text_as_pylance_maps_it(
    values: list[str | None], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("case") / "d"
    _write(path, values)
    oracle, dataset = lance.dataset(path), lancelet.dataset(path)
    assert _mapped(dataset) == _mapped(oracle)
    # In filters: the rows whose mapped text equals the mapping of the first value.
    first = next((v for v in values if v is not None), "")
    for function in ("upper", "lower"):
        target = getattr(first, function)().replace("'", "''")
        sql = f"{function}(s) = '{target}'"
        expected = oracle.to_table(filter=sql, columns=["id"])["id"].to_pylist()
        assert dataset.to_table(filter=sql, columns=["id"])["id"].to_pylist() == expected


WORDS = ["Straße", "ΣΑΣ", "İstanbul", "ﬁx", "ΟΔΥΣΣΕΥΣ Σ", "aΣ.b", "plain", None, "ǰ", "ᾳ"]


def test_update_and_add_columns(tmp_path: Path) -> None:
    for name in ("pylance", "lancelet"):
        _write(tmp_path / name, WORDS)
    for library, name in ((lance, "pylance"), (lancelet, "lancelet")):
        library.dataset(tmp_path / name).add_columns({"u": "upper(s)", "l": "lower(s)"})
        library.dataset(tmp_path / name).update({"s": "lower(upper(s))"}, where="id < 6")
    expected = lance.dataset(tmp_path / "pylance").to_table()
    got = lance.dataset(tmp_path / "lancelet").to_table()
    assert got.sort_by("id") == expected.sort_by("id")
    assert got.sort_by("id")["u"].to_pylist()[:4] == ["STRASSE", "ΣΑΣ", "İSTANBUL", "FIX"]
    assert got.sort_by("id")["l"].to_pylist()[1] == "σας"


def test_constants_fold_to_the_full_mapping(tmp_path: Path) -> None:
    _write(tmp_path / "d", ["x"])
    sql = "upper('Straße') = 'STRASSE' AND lower('ΣΑΣ') = 'σας' AND upper('ﬁx') = 'FIX'"
    assert lance.dataset(tmp_path / "d").count_rows(filter=sql) == 1
    assert lancelet.dataset(tmp_path / "d").count_rows(filter=sql) == 1
