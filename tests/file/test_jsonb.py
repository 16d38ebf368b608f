"""The JSONB codec of JSON columns, against bytes pylance 14 wrote for the same
documents (read off its data files) and the text it prints them back as."""

from __future__ import annotations

import pytest

from lancelet.errors import CorruptFileError, InvalidJSONError, UnsupportedEncodingError
from lancelet.file import jsonb

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
