"""The JSONB codec of JSON columns, against bytes pylance 14 wrote for the same
documents (read off its data files) and the text it prints them back as."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError, InvalidJSONError, UnsupportedEncodingError
from lancelet.file import jsonb


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


def _column(docs: list[bytes | None]) -> pa.Array:
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
