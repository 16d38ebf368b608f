"""DataFusion's string functions in lancelet, compared with pylance: values, result
types (string, large_string, string_view) and NULLs, in projections and filters."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.expr.pylance_sql import (
    Pair,
    assert_refused,
    assert_same_filter,
    assert_same_projection,
    edge_table,
    write_pair,
)

_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return write_pair(edge_table(), Path(tmp_path_factory.mktemp("strings")))


EXPRESSIONS = [
    # concat: NULLs read as '', numbers and dates as text; string_view when the
    # argument types differ (a NULL literal counts as another type).
    "concat(s, 'x')",
    "concat(s, NULL)",
    "concat(NULL, s)",
    "concat(s)",
    "concat(s, ls)",
    "concat(ls, ls)",
    "concat(ls, 'x')",
    "concat(s, i, i8, u)",
    "concat(s, d)",
    "concat(s, dec)",
    "concat(s, true)",
    "concat_ws(',', s, 'x')",
    "concat_ws(',', s, NULL, 'y')",
    "concat_ws(s, 'a', 'b')",
    "concat_ws(',', i, dec)",
    "concat_ws(',', s)",
    "concat_ws(',', ls, 'x')",
    "concat_ws(s, s, i)",
    "starts_with(s, 'a')",
    "starts_with(s, '')",
    "starts_with(s, NULL)",
    "ends_with(s, 'e')",
    "ends_with(ls, 'x')",
    "octet_length(s)",
    "octet_length(ls)",
    "char_length(s)",
    "character_length(ls)",
    "length(s)",
    "bit_length(s)",
    "left(s, 2)",
    "left(s, -2)",
    "left(s, 0)",
    "left(s, NULL)",
    "left(ls, 1)",
    "right(s, 2)",
    "right(s, -2)",
    "right(s, 0)",
    "right(ls, 1)",
    "coalesce(substr(s, 2))",
    "coalesce(substr(s, 0, 2))",
    "coalesce(substr(s, -1, 3))",
    "coalesce(substr(s, 2, 0))",
    "coalesce(substr(s, 100))",
    "coalesce(substr(s, 2, NULL))",
    "coalesce(substr(ls, 2, 1))",
    "coalesce(substring(s from 2 for 2))",
    "coalesce(substring(s for 2))",
    "coalesce(substr(s, 2, -1))",
    "lpad(s, 7)",
    "lpad(s, 7, 'xy')",
    "lpad(s, 2, 'xy')",
    "lpad(s, -1, 'x')",
    "lpad(s, 7, '')",
    "lpad(ls, 4, 'x')",
    "rpad(s, 7, 'xy')",
    "rpad(s, 9, '-')",
    "rpad(ls, 4, 'xy')",
    "ltrim(s)",
    "rtrim(s)",
    "btrim(s)",
    "ltrim(s, 'ap')",
    "rtrim(s, ' pd')",
    "btrim(s, 'ap ')",
    "btrim(s, '')",
    "btrim(s, NULL)",
    "coalesce(trim(s))",
    "coalesce(trim(both 'a' from s))",
    "coalesce(trim(leading 'a' from s))",
    "coalesce(trim(trailing 'c' from s))",
    "replace(s, 'p', 'PP')",
    "replace(s, '', 'X')",
    "replace(s, 'p', '')",
    "replace(s, '', '\\')",
    "replace(ls, 'x', 'yy')",
    "repeat(s, 2)",
    "repeat(s, 0)",
    "repeat(s, -1)",
    "repeat(s, i8)",
    "reverse(s)",
    "reverse(ls)",
    "strpos(s, 'p')",
    "strpos(s, '')",
    "instr(s, 'ß')",
    "strpos(s, 'ÄB')",
    "strpos(ls, 'x')",
    "coalesce(position('p' in s))",
    "split_part(s, ',', 1)",
    "split_part(s, ',', 3)",
    "split_part(s, ',', -1)",
    "split_part(s, ',', -2)",
    "split_part(s, ',', 10)",
    "split_part(s, '', 1)",
    "split_part(s, '', 2)",
    "split_part(s, ',', 0)",
    "translate(s, 'ap', 'AP')",
    "translate(s, 'ap', 'A')",
    "translate(s, 'ß', 'ss')",
    "translate(s, 'aa', 'xy')",
    "translate(ls, 'e', 'E')",
    "ascii(s)",
    "ascii(ls)",
    "chr(u)",
    "chr(i)",
    "to_hex(i)",
    "to_hex(i8)",
    "to_hex(id)",
    "to_hex(u)",
    "regexp_replace(s, 'p', 'X')",
    "regexp_replace(s, 'p', 'X', 'g')",
    "regexp_replace(s, 'P', 'X', 'gi')",
    "regexp_replace(s, '(a)(p)', '\\2\\1', 'g')",
    "regexp_replace(s, '(a)(p)', '$2$1', 'g')",
    "regexp_replace(s, '(a)', '${1}x', 'g')",
    "regexp_replace(s, '', 'X', 'g')",
    "regexp_replace(s, 'x*', '-', 'g')",
    "regexp_replace(s, '^', '>')",
    "regexp_replace(s, 'p', NULL)",
    "regexp_replace(s, '(p)', '$1x', 'g')",
    "regexp_replace(s, '(p)', '$2', 'g')",
    "regexp_replace(s, '(p)', '$$1', 'g')",
    "regexp_replace(s, '(p)', 'a\\b', 'g')",
    "regexp_count(s, 'p')",
    "regexp_count(s, 'P', 1, 'i')",
    # string_view carries through the functions that keep their argument's type.
    "btrim(left(s, 2))",
    "lpad(left(s, 2), 3)",
    "replace(left(s, 2), 'a', 'b')",
    "repeat(left(s, 2), 2)",
    "reverse(left(s, 2))",
    "translate(left(s, 2), 'a', 'b')",
    "regexp_replace(left(s, 2), 'a', 'b')",
    "split_part(left(s, 2), 'a', 1)",
    "concat(left(s, 2), 'x')",
    "coalesce(left(s, 2), s)",
    "nullif(s, left(s, 2))",
    "btrim(concat(s, NULL))",
]


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_matches_pylance(sql: str, pair: Pair) -> None:
    assert_same_projection(pair, sql)
    assert_same_filter(pair, f"({sql}) IS NULL")


FILTERS = [
    "starts_with(s, 'a')",
    "NOT ends_with(s, 'e')",
    "concat(s, 'x') = 'applex'",
    "left(s, 2) = 'ap'",
    "char_length(s) > 5",
    "strpos(s, 'p') = 2",
    "split_part(s, ',', 2) = 'b'",
    "regexp_replace(s, '[aeiou]', '', 'g') = 'ppl'",
    "regexp_count(s, 'p') > 1",
    "lpad(s, 3, '*') = '*  '",
    "ascii(s) = 97",
]


@pytest.mark.parametrize("sql", FILTERS)
def test_filters_match_pylance(sql: str, pair: Pair) -> None:
    assert_same_filter(pair, sql)


REFUSED = [
    # Arguments pyarrow takes as options only.
    ("starts_with(s, s)", "literal"),
    ("left(s, i8)", "literal"),
    ("lpad(s, 3, s)", "literal"),
    ("replace(s, s, 'x')", "literal"),
    ("strpos(s, s)", "literal"),
    ("regexp_replace(s, s, 'x')", "literal"),
    # Conversions to text pylance makes differently from pyarrow.
    ("concat(s, f)", "does not convert double"),
    ("concat(s, ts)", "does not convert timestamp"),
    # Differences between RE2 and Rust's regex, and replacements RE2 cannot write.
    ("regexp_replace(s, '\\d', 'x')", "\\d"),
    ("regexp_replace(s, '(?P<n>a)', '$n')", "$0 to $9"),
    ("regexp_count(s, 'x*')", "matches ''"),
    ("regexp_count(s, 'a', 2)", "position 1"),
    ("lpad(s, 5000, 'ab')", "at most 4096"),
    ("to_hex(f)", "must be an integer"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED)
def test_refused(sql: str, message: str, pair: Pair) -> None:
    assert_refused(pair, sql, message)


# --- random strings --------------------------------------------------------------------

# Code points of every width, combining marks, an emoji with a modifier, separators.
_ALPHABET = st.sampled_from([*"aAbß, _-.xyz", "é", "e\u0301", "😀", "👍🏽", "Ω", "\t", "ÿ"])
_TEXT = st.lists(_ALPHABET, max_size=6).map("".join)


def _strings(draw: st.DrawFn) -> list[str | None]:
    return draw(st.lists(st.none() | _TEXT, min_size=1, max_size=12))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@st.composite
def string_calls(draw: st.DrawFn) -> tuple[list[str | None], list[str]]:
    values = _strings(draw)
    small = st.integers(-4, 8)
    text = _quoted(draw(_TEXT))
    short = _quoted(draw(st.lists(_ALPHABET, min_size=1, max_size=3).map("".join)))
    calls = [
        f"concat(s, {text}, s)",
        f"concat_ws({short}, s, {text}, s)",
        f"starts_with(s, {text})",
        f"ends_with(s, {text})",
        "octet_length(s)",
        "char_length(s)",
        f"left(s, {draw(small)})",
        f"right(s, {draw(small)})",
        f"lpad(s, {draw(small)}, {short})",
        f"rpad(s, {draw(small)}, {short})",
        f"ltrim(s, {short})",
        f"rtrim(s, {short})",
        f"btrim(s, {short})",
        f"replace(s, {short}, {text})",
        f"repeat(s, {draw(small)})",
        "reverse(s)",
        f"strpos(s, {short})",
        f"split_part(s, {short}, {draw(st.integers(1, 4)) * draw(st.sampled_from([1, -1]))})",
        f"coalesce(substr(s, {draw(small)}, {draw(st.integers(0, 6))}))",
        f"translate(s, {short}, {_quoted(draw(_TEXT))})",
        "ascii(s)",
        f"regexp_replace(s, {short}, {text}, 'g')",
    ]
    return values, calls


@_SETTINGS
@given(case=string_calls())
def test_random_strings_match_pylance(
    case: tuple[list[str | None], list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    values, calls = case
    table = pa.table(
        {"id": pa.array(range(len(values)), pa.int64()), "s": pa.array(values, pa.string())}
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_strings")))
    for sql in calls:
        assert_same_projection(pair, sql)


@_SETTINGS
@given(
    codes=st.lists(
        st.none() | st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c < 0xE000),
        min_size=1,
        max_size=12,
    ),
    numbers=st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=12),
)
def test_random_code_points_and_numbers_match_pylance(
    codes: list[int | None], numbers: list[int | None], tmp_path_factory: pytest.TempPathFactory
) -> None:
    size = min(len(codes), len(numbers))
    table = pa.table(
        {
            "id": pa.array(range(size), pa.int64()),
            "c": pa.array(codes[:size], pa.int64()),
            "n": pa.array(numbers[:size], pa.int64()),
        }
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_codes")))
    for sql in ("chr(c)", "ascii(chr(c))", "to_hex(n)", "to_hex(c)"):
        assert_same_projection(pair, sql)
