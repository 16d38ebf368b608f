"""The JSONB codec of JSON columns, against bytes pylance 14 wrote for the same
documents (read off its data files) and the text it prints them back as."""

from __future__ import annotations

import decimal
import json
import math
import random
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError, InvalidJSONError, UnsupportedEncodingError
from lancelet.file import jsonb


@pytest.fixture(scope="module", autouse=True)
def _compiled_for_small_columns() -> Iterator[None]:
    """The tests' columns are small: they take the compiled paths all the same."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonb, "COMPILED_MIN_BYTES", 0)
        yield


@pytest.fixture(scope="module")
def monkeypatch_env() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


# document -> (pylance's JSONB, hex; pylance's text)
KNOWN = {
    "0": ("200000002000000100", "0"),
    "-129": ("200000002000000340ff7f", "-129"),
    "65536": ("20000000200000055000010000", "65536"),
    "1e100": ("20000000200000096054b249ad2594c37d", "1e+100"),
    "1.0": ("2000000020000009603ff0000000000000", "1.0"),
    '"a"': ("200000001000000161", '"a"'),
    "[]": ("80000000", "[]"),
    "[null,true]": ("800000020000000040000000", "[null,true]"),
    ' { "k" : [ 1 , 2 ] } ': (
        "4000000110000001500000106b80000002200000022000000250015002",
        '{"k":[1,2]}',
    ),
}


@pytest.mark.parametrize("doc", list(KNOWN))
def test_bytes_and_text_match_pylance(doc: str) -> None:
    stored, text = KNOWN[doc]
    assert jsonb.encode(doc).hex() == stored
    assert jsonb.decode(bytes.fromhex(stored)) == text


def test_floats_print_as_lance_prints_them() -> None:
    printed = [jsonb.format_float(v) for v in (1e-5, 1e-7, 1e15, 1e16, -0.0, 1.2e-5)]
    assert printed == ["0.00001", "1e-7", "1000000000000000.0", "1e+16", "-0.0", "0.000012"]


def test_bad_documents_are_refused() -> None:
    with pytest.raises(InvalidJSONError):
        jsonb.encode('{"a": 1, "a": 2}')
    with pytest.raises(CorruptFileError):
        jsonb.decode(b"\x80\x00\x00\x02")  # two entries announced, none there
    with pytest.raises(UnsupportedEncodingError):
        jsonb.decode(bytes.fromhex("2000000070000000"))  # entry kind 7


# -- whole columns: the compiled printer against the reference, document by document --

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(1 << 70), 1 << 70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda kids: (
        st.lists(kids, max_size=5)
        | st.dictionaries(
            st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=6),
            kids,
            max_size=5,
        )
    ),
    max_leaves=30,
)


def _column(docs: Sequence[bytes | None]) -> pa.Array:
    return pa.array(docs, pa.large_binary())


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.none() | _VALUES.map(jsonb.encode_value), max_size=12), jit_on=st.booleans()
)
def test_columns_print_as_each_document_does(
    values: list[bytes | None], jit_on: bool, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    monkeypatch_env.setenv("LANCELET_JIT", "1" if jit_on else "0")
    expected = [None if v is None else jsonb.decode(v) for v in values]
    assert jsonb.decode_column(_column(values)).to_pylist() == expected
    # A slice starts its offsets inside the buffers.
    if len(values) > 2:
        assert jsonb.decode_column(_column(values).slice(1)).to_pylist() == expected[1:]


@settings(max_examples=200, deadline=None)
@given(value=_VALUES, cut=st.integers(0, 64), flip=st.integers(0, 255), at=st.integers(0, 200))
def test_damaged_documents_print_or_fail_as_the_reference(
    value: object, cut: int, flip: int, at: int, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """A damaged document: the column prints what the reference prints, or raises
    the reference's error."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    doc = bytearray(jsonb.encode_value(value))
    if doc:
        doc[at % len(doc)] ^= flip
    damaged = bytes(doc[: max(len(doc) - cut, 0)])
    try:
        expected: object = jsonb.decode(damaged)
    except (CorruptFileError, UnsupportedEncodingError) as exc:
        with pytest.raises(type(exc)):
            jsonb.decode_column(_column([b"\x80\x00\x00\x00", damaged]))
        return
    assert jsonb.decode_column(_column([b"\x80\x00\x00\x00", damaged])).to_pylist() == [
        "[]",
        expected,
    ]


@pytest.mark.parametrize("inner", [b"\xc3\xa9", b"\xe2\x82\xac!", b"\xff\xfe", b"\xc3"])
def test_string_bytes_print_as_the_reference(
    inner: bytes, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """A string's bytes print as they are: UTF-8 (two and three bytes) as the reference
    prints it; bytes that are not UTF-8 fail as in the reference."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    doc = jsonb.encode_value({"s": "a" * len(inner)}).replace(b"a" * len(inner), inner)
    try:
        expected: object = jsonb.decode(doc)
    except (CorruptFileError, UnicodeDecodeError) as exc:
        with pytest.raises(type(exc)):
            jsonb.decode_column(_column([doc, jsonb.encode_value(1)]))
        return
    got = jsonb.decode_column(_column([doc, jsonb.encode_value(1)])).to_pylist()
    assert got == [expected, "1"]


_SAMPLES = [
    {"k": [1.5, -2, "a\\tb", None, True, {"n": -(1 << 63)}], "": 1e300, "z": [[]]},
    ["x", 0, 255, -129, 1 << 64 - 1, 0.0, False],
    "scalar",
    3.25,
]


@pytest.mark.parametrize("value", _SAMPLES)
def test_every_byte_damaged_prints_or_fails_as_the_reference(value: object) -> None:
    """Each byte of a document changed several ways, and each truncation: the column
    prints what the reference prints, or raises the reference's error."""
    doc = jsonb.encode_value(value)
    damaged = [doc[:n] for n in range(len(doc))]
    for at in range(len(doc)):
        for flip in (0x01, 0x04, 0x08, 0x10, 0x40, 0x80, 0xFF):
            changed = bytearray(doc)
            changed[at] ^= flip
            damaged.append(bytes(changed))
    for bad in damaged:
        try:
            expected = jsonb.decode(bad)
        except (CorruptFileError, UnsupportedEncodingError) as exc:
            with pytest.raises(type(exc)):
                jsonb.decode_column(_column([bad]))
            continue
        assert jsonb.decode_column(_column([bad, doc])).to_pylist() == [expected, jsonb.decode(doc)]


# -- whole columns: the compiled parser against the reference, document by document --

_BOUNDARY_INTS = [
    sign * (1 << bits) + step
    for bits in (7, 8, 15, 16, 31, 32, 63, 64, 70)
    for sign in (1, -1)
    for step in (-1, 0, 1)
]
_INTS = st.integers(-(1 << 70), 1 << 70) | st.sampled_from(_BOUNDARY_INTS) | st.integers(-300, 300)
_STRINGS = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)
_TEXT_VALUES = st.recursive(
    st.none() | st.booleans() | _INTS | st.floats() | _STRINGS,
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(_STRINGS, kids, max_size=5),
    max_leaves=30,
)
_DUMPS_OPTIONS = st.fixed_dictionaries(
    {
        "separators": st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\r\n"), ("\n,", ":")]),
        "indent": st.sampled_from([None, 0, 2, "\t", " \r\n"]),
        "ensure_ascii": st.booleans(),
        "sort_keys": st.booleans(),
    }
)


def _hard_number(digits: str, fraction: str, exponent: int | None, negative: bool) -> str:
    """Number text by JSON's grammar from random parts (often far from a double)."""
    whole = digits.lstrip("0") or "0"
    text = ("-" if negative else "") + whole + (f".{fraction}" if fraction else "")
    return text if exponent is None else f"{text}e{exponent:+d}"


def _halfway(value: float, nudge: int) -> str:
    """The exact decimal halfway between ``value`` and the next double up, or just
    beside it (``nudge``): the cases rounding gets wrong."""
    with decimal.localcontext() as context:
        context.prec = 1200
        low, high = decimal.Decimal(value), decimal.Decimal(math.nextafter(value, math.inf))
        middle = (low + high) / 2
        middle += nudge * (high - low) / decimal.Decimal(10**30)
        return format(middle, "e")


_DIGITS = st.text("0123456789", min_size=1, max_size=40)
_NUMBER_TEXTS = (
    st.builds(
        _hard_number,
        _DIGITS,
        st.text("0123456789", max_size=30),
        st.none() | st.integers(-400, 400),
        st.booleans(),
    )
    | st.builds(
        _halfway,
        st.floats(min_value=0, max_value=1e308, allow_nan=False, allow_infinity=False),
        st.sampled_from([-1, 0, 0, 1]),
    )
    | st.sampled_from(
        [
            "1e23",
            "8.589973e9",
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "4.9406564584124654e-324",
            "2.4703282292062328e-324",
            "2.4703282292062327e-324",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "9007199254740993",
            "18446744073709551617",
            "-9223372036854775809",
            "1e400",
            "-1e400",
            "1e-400",
            "-0.0",
            "-0",
            "0e0",
            "0.0e-0",
            "1E+2",
            "10000000000000000000000",
        ]
    )
)


def _refs(texts: list[str | None]) -> list[bytes | None] | type[BaseException]:
    """The reference's documents, or the class of the error it raises."""
    try:
        return [None if t is None else jsonb.encode(t) for t in texts]
    except Exception as exc:  # whatever the reference raises
        return type(exc)


def _check_column(
    texts: list[str | None], monkeypatch: pytest.MonkeyPatch, beyond_limits: bool = False
) -> None:
    """The compiled column equals the reference's documents, or raises its error;
    each document alone takes the compiled path exactly when the reference takes it
    (or, ``beyond_limits``, goes to the reference where the reference takes it)."""
    monkeypatch.setenv("LANCELET_JIT", "1")
    expected = _refs(texts)
    column = pa.array(texts, pa.string())
    if isinstance(expected, list):
        assert jsonb.encode_column(column).to_pylist() == expected
    else:
        with pytest.raises(expected):
            jsonb.encode_column(column)
    for text in texts:
        alone = jsonb._encode_compiled(pa.array([text], pa.string()))
        single = _refs([text])
        if isinstance(single, list) and not beyond_limits:
            assert alone is not None, text
            assert alone.to_pylist() == single, text
        elif isinstance(single, list):
            assert alone is None or alone.to_pylist() == single, text
        else:
            assert alone is None, text


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.none() | _TEXT_VALUES, max_size=8),
    options=_DUMPS_OPTIONS,
    allow_nan=st.booleans(),
)
def test_dumped_columns_encode_as_each_document_does(
    values: list[object],
    options: dict[str, Any],
    allow_nan: bool,
    monkeypatch_env: pytest.MonkeyPatch,
) -> None:
    texts: list[str | None] = []
    for value in values:
        try:
            texts.append(
                None if value is None else json.dumps(value, allow_nan=allow_nan, **options)
            )
        except ValueError:  # NaN or infinity without allow_nan
            texts.append(json.dumps(None))
    _check_column(texts, monkeypatch_env)


@settings(max_examples=300, deadline=None)
@given(numbers=st.lists(_NUMBER_TEXTS, min_size=1, max_size=8), spaces=st.sampled_from(["", " \n"]))
def test_number_texts_encode_as_python_rounds_them(
    numbers: list[str], spaces: str, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """Hard-to-round decimals, alone, in arrays and as object values."""
    texts: list[str | None] = [f"[{spaces}{(',' + spaces).join(numbers)}{spaces}]"]
    texts += numbers
    texts.append("{" + ",".join(f'"{k}":{n}' for k, n in enumerate(numbers)) + "}")
    _check_column(texts, monkeypatch_env)


def test_arrow_rounds_decimal_text_as_python_does() -> None:
    """The compiled path's floats come from Arrow's parser: the same double as
    Python's ``float`` for each of many hard cases (bits compared, so -0.0 and
    infinities count)."""
    rng = random.Random(31)
    texts = ["1e23", "2.4703282292062328e-324", "2.4703282292062327e-324", "1e-400", "1e400"]
    for _ in range(4000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 60)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 25)))
        exponent = rng.choice([None, rng.randint(-350, 330), rng.randint(-30, 30)])
        texts.append(_hard_number(digits, fraction, exponent, rng.random() < 0.5))
        value = rng.choice([rng.random(), rng.uniform(0, 1e308), 2.0 ** rng.randint(-1074, 1023)])
        texts.append(_halfway(value, rng.choice([-1, 0, 1])))
        texts.append(str(rng.randint(1 << 64, 1 << rng.randint(65, 1100))))  # float(int)
    text = np.frombuffer("".join(texts).encode(), np.uint8)
    ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
    parsed = jsonb._parse_floats(text, ends)
    assert parsed is not None
    expected = np.array([float(t) for t in texts], np.float64)
    assert (parsed.view(np.uint64) == expected.view(np.uint64)).all()


def _json_string(value: str, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


_STRING_TEXTS = st.builds(_json_string, _STRINGS, st.booleans()) | st.sampled_from(
    [
        '"\\u0061"',
        '"a"',
        '"\\/"',
        '"\\uD83D\\uDE00"',
        '"\\ud83d\\ude00"',
        '"\\u00e9"',
        '"é"',
        '"\\ud800"',
        '"\\udc00"',
        '"\\ud800\\u0041"',
        '"\\ud800x"',
        '"\\ud800\\ud800"',
        '"\\ud800\\udc00\\udc00"',
        '"\\u12"',
        '"\\x41"',
        '"\\U0041"',
        '"\u0001"',
        '"\u007f"',
    ]
)
# Quoted as they come: raw control characters (refused), any escape.
_RAW_STRINGS = st.text(
    st.characters(max_codepoint=0x21, exclude_characters='"') | st.characters(max_codepoint=0xFF)
).map(lambda text: f'"{text}"')
# Near-numbers: the grammar's characters in any order (mostly refused).
_NUMBERISH = st.text("0123456789-+.eE", min_size=1, max_size=8)
_SPACE = st.sampled_from(["", " ", "\n", "\t", "\r", " \n\t ", "\u00a0", "\f"])


@st.composite
def _documents(draw: st.DrawFn, depth: int = 0) -> str:
    """JSON-ish text: whitespace anywhere, escapes, literals, keys that repeat."""
    kind = draw(st.integers(0, 9 if depth < 4 else 5))
    if kind <= 1:
        return draw(_STRING_TEXTS | _RAW_STRINGS)
    if kind <= 3:
        return draw(_NUMBER_TEXTS | _INTS.map(str) | _NUMBERISH)
    if kind <= 5:
        return draw(st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity"]))
    space = draw(_SPACE)
    items = draw(st.lists(_documents(depth + 1), max_size=4))
    if kind <= 7:
        return "[" + space + f"{space},{space}".join(items) + space + "]"
    keys = draw(st.lists(_STRING_TEXTS, min_size=len(items), max_size=len(items)))
    pairs = [f"{k}{space}:{space}{v}" for k, v in zip(keys, items, strict=True)]
    return "{" + space + f",{space}".join(pairs) + space + "}"


_MUTATION_CHARS = st.sampled_from(
    [*'{}[],:"\\ \t\nx0159-+.eEuNIa', "\u0001", "\u001f", "é", "\u00a0", "😀"]
) | st.characters(max_codepoint=0x7F)


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    """A document with a few characters deleted, inserted or replaced, or cut."""
    text = draw(_documents())
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["delete", "insert", "replace", "cut", "structure"]))
        char = draw(_MUTATION_CHARS)
        marks = [i for i, c in enumerate(text) if c in ',:[]{}"\\']
        if how == "structure" and marks:
            # A comma, colon, bracket, quote or backslash swapped for another character.
            at, how = marks[draw(st.integers(0, len(marks) - 1))], "replace"
        if how == "delete":
            text = text[:at] + text[at + 1 :]
        elif how == "insert":
            text = text[:at] + char + text[at:]
        elif how == "replace":
            text = text[:at] + char + text[at + 1 :]
        elif how == "cut":
            text = text[:at]
    return text


@settings(max_examples=600, deadline=None)
@given(texts=st.lists(st.none() | _documents() | _mutated(), min_size=1, max_size=6))
def test_texts_and_mutations_encode_or_fail_as_the_reference(
    texts: list[str | None], monkeypatch_env: pytest.MonkeyPatch
) -> None:
    _check_column(texts, monkeypatch_env)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        '{"a":1,"b":{"c":1,"c":2}}',
        '{"\\u0061":1,"a":2}',
        '{"é":1,"\\u00e9":2}',
        '{"b":1,"a":2,"ab":3,"":4,"é":5,"z":6}',
        "[" * 128 + "]" * 128,
        "[" * 7,
        "1" * 5000 + ".0",
        "0." + "0" * 5000 + "1",
        "2." + "4" * 3000 + "e-324",
        "1" * 4301,
        '{"a":[' * 5,
        '[{"":' * 4,
        "[" * 129 + "]" * 129,
        "1" * 309,
        "1" * 310,
        "9" * 309,
        "-" + "9" * 309,
        "-" + "9" * 400,
        "17976931348623158" + "0" * 292,
        "17976931348623157" + "0" * 292,
        "",
        " ",
        "[1,]",
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "+1",
        "nul",
        "[1] x",
        '"\\ud800"',
        '{"\\ud800": 1}',
        '"\\udc00"',
        "[NaN,-NaN]",
        "Infinityx",
        '"a\x00"',
        "\u00a01",
        "[1]\u00a0",
        "1.e5",
        "[1.E+5]",
        '"\x1f"',
        "[1;2]",
        '"\\uDBFF\\uDFFF"',
        "-Infinity",
        "-0",
        "[-0,0,-0.0]",
    ],
)
def test_edge_documents_encode_or_fail_as_the_reference(
    text: str, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    deep = text.startswith("[" * 129)  # nested past the kernel's stack
    _check_column([text, '{"k": [1]}'], monkeypatch_env, beyond_limits=deep)


def test_big_objects_sort_their_keys(monkeypatch_env: pytest.MonkeyPatch) -> None:
    """Keys past the insertion sort's runs go through its merges."""
    rng = random.Random(5)
    keys = list(
        {
            "".join(rng.choice("ab\u00e9\U0001f600") for _ in range(rng.randint(0, 6)))
            for _ in range(3000)
        }
    )
    text = json.dumps({k: i for i, k in enumerate(keys)}, ensure_ascii=False)
    _check_column([text, text.replace("}", ', "a": 1}')], monkeypatch_env)


def test_columns_of_every_string_type(monkeypatch_env: pytest.MonkeyPatch) -> None:
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    texts = ['{"b": [1, 2.5]}', None, '"x"', "[]"]
    expected = [None if t is None else jsonb.encode(t) for t in texts]
    for kind in (pa.string(), pa.large_string(), pa.string_view()):
        column = pa.array(texts, kind)
        assert jsonb.encode_column(column).to_pylist() == expected
        assert jsonb.encode_column(column.slice(1)).to_pylist() == expected[1:]
    assert jsonb.encode_column(pa.array([], pa.string())).to_pylist() == []
    assert jsonb.encode_column(pa.array([None, None], pa.string())).to_pylist() == [None, None]


_EVERY_CHANGE_SAMPLES = [
    '{"a": [1.5e5, -2, "x\\n\\u00e9y"], "b": {"c": null, "d": true}, "e": false, "f": NaN}',
    '[0, -0.0, 1E+2, "\\ud83d\\ude00", {}, [], Infinity, -Infinity]',
]
_EVERY_CHAR = [chr(c) for c in range(0x80)] + ["\u00a0", "\u0085", "\u2028", "é", "😀"]


@pytest.mark.parametrize("sample", _EVERY_CHANGE_SAMPLES)
def test_every_character_changed_encodes_or_fails_as_the_reference(
    sample: str, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """Each character of a document deleted, or replaced by or preceded by each ASCII
    character (and a few others): alone, each takes the compiled path exactly when
    the reference encodes it, to the same bytes."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    changed = {sample[:at] + sample[at + 1 :] for at in range(len(sample))}
    for at in range(len(sample)):
        for char in _EVERY_CHAR:
            changed.add(sample[:at] + char + sample[at + 1 :])
            changed.add(sample[:at] + char + sample[at:])
    for text in sorted(changed):
        alone = jsonb._encode_compiled(pa.array([text], pa.string()))
        expected = _refs([text])
        assert alone is None if isinstance(expected, type) else alone.to_pylist() == expected, text


@pytest.mark.parametrize("jit_on", [True, False])
def test_invalid_utf8_fails_as_the_reference(
    jit_on: bool, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """Arrow strings are UTF-8 unless built unchecked: such a column fails alike on
    both paths (the kernel copies string bytes as they are, so it must not see it)."""
    monkeypatch_env.setenv("LANCELET_JIT", "1" if jit_on else "0")
    offsets = pa.py_buffer(np.array([0, 3, 5], np.int32).tobytes())
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b'"\xff"[]')])
    with pytest.raises(UnicodeDecodeError):
        jsonb.encode_column(bad)


# -- floats: the compiled printer's Ryu against the reference's repr --

_DOUBLES = (
    st.integers(0, (1 << 64) - 1).map(lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0])
    | st.floats()
    | st.integers(-(1 << 63), 1 << 63).map(float)
    | st.decimals(allow_nan=False, allow_infinity=False, places=4).map(float)
)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_DOUBLES, min_size=1, max_size=50))
def test_floats_print_as_the_reference(
    values: list[float], monkeypatch_env: pytest.MonkeyPatch
) -> None:
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    docs = [jsonb.encode_value(v) for v in values] + [jsonb.encode_value(values)]
    expected = [jsonb.decode(d) for d in docs]
    assert jsonb.decode_column(_column(docs)).to_pylist() == expected


def test_every_exponent_prints_as_the_reference(monkeypatch_env: pytest.MonkeyPatch) -> None:
    """Each binary exponent, with the mantissas where Ryu's bounds are uneven or exact."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    mantissas = (0, 1, 2, 3, (1 << 52) - 1, 1 << 51, (1 << 51) + 1)
    bits = [s | (e << 52) | m for s in (0, 1 << 63) for e in range(2048) for m in mantissas]
    values = [struct.unpack("<d", b.to_bytes(8, "little"))[0] for b in bits]
    docs = [b"\x20\x00\x00\x00\x20\x00\x00\x09\x60" + struct.pack(">d", v) for v in values]
    expected = [jsonb.decode(d) for d in docs]
    assert jsonb.decode_column(_column(docs)).to_pylist() == expected


def test_columns_printing_longer_than_stored(monkeypatch_env: pytest.MonkeyPatch) -> None:
    """Text several times its JSONB (escaped control characters, long floats): the
    output grows as it goes."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    values: list[Any] = ["\x01" * n for n in range(0, 3000, 7)]
    values += [[-1.2345678901234567e-300] * n for n in range(0, 300, 3)]
    docs = [jsonb.encode_value(v) for v in values]
    expected = [jsonb.decode(d) for d in docs]
    assert jsonb.decode_column(_column(docs)).to_pylist() == expected
    assert jsonb.decode_column(_column(docs[::-1])).to_pylist() == expected[::-1]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.none() | _VALUES.map(jsonb.encode_value), max_size=20),
    parts=st.integers(2, 5),
)
def test_columns_printed_in_parts(
    values: list[bytes | None], parts: int, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """A column split between threads prints as one: parts that fit their share of
    the buffer move down, a part that grows is copied, a damaged one gives it up."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    monkeypatch_env.setattr(jsonb, "PART_MIN_BYTES", 1)
    monkeypatch_env.setattr(jsonb, "WORKERS", parts)
    expected = [None if v is None else jsonb.decode(v) for v in values]
    assert jsonb.decode_column(_column(values)).to_pylist() == expected
    escaped = jsonb.encode_value("\x01" * 100)  # text six times its JSONB
    longer = [*values, *[escaped] * 50, *values]
    wanted = [*expected, *[jsonb.decode(escaped)] * 50, *expected]
    assert jsonb.decode_column(_column(longer)).to_pylist() == wanted
    with pytest.raises(CorruptFileError):
        jsonb.decode_column(_column([*values, b"\x80\x00\x00\x02", *values]))


def test_integers_at_every_digit_count_print_as_json_dumps(
    monkeypatch_env: pytest.MonkeyPatch,
) -> None:
    """The compiled printer counts an integer's digits before writing them back to
    front: each count from 1 to 20 at its edges, both signs, to the 64-bit limits."""
    monkeypatch_env.setenv("LANCELET_JIT", "1")
    edges = {10**k + d for k in range(20) for d in (-1, 0, 1)} | {(1 << 64) - 1, 1 << 63}
    values = sorted(v for v in edges | {-v for v in edges} if -(1 << 63) <= v < 1 << 64)
    docs = [jsonb.encode_value(v) for v in values] + [jsonb.encode_value(values)]
    expected = [json.dumps(v) for v in values] + [json.dumps(values, separators=(",", ":"))]
    assert jsonb.decode_column(_column(docs)).to_pylist() == expected
