"""lancelet.debug: the texts' layout, and the facts in them checked against pylance's
texts of the same dataset (field ids and types, file versions, transaction kinds)."""

from __future__ import annotations

import re
from pathlib import Path

import lance
import lance.debug as pylance_debug
import pyarrow as pa
import pytest

import lancelet
from lancelet import debug
from lancelet.table.debug_text import NONE, Bare, Struct, Wrapped, render, some

# name, id, parent id and logical type of each field, in the order a text lists them.
_FIELD = re.compile(
    r'Field \{\n\s+name: "([^"]*)",\n\s+id: (-?\d+),\n\s+parent_id: (-?\d+),\n'
    r'\s+logical_type: LogicalType\(\n\s+"([^"]*)"'
)


def _fields(text: str) -> list[tuple[str, ...]]:
    return [m.groups() for m in _FIELD.finditer(text)]


@pytest.fixture
def uri(tmp_path: Path) -> Path:
    path = tmp_path / "ds"
    table = pa.table(
        {
            "a": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array([{"x": 1.5, "y": "p"}] * 3),
            "l": pa.array([[1], [], [2, 3]], pa.list_(pa.int32())),
            "b": [True, False, None],
        }
    )
    ds = lancelet.write_dataset(table, path)
    ds.add_columns({"c": "a * 2"})
    return path


def test_render_layout() -> None:
    value = Struct(
        "Outer",
        [
            ("name", 'say "hi"'),
            ("items", [1, 2]),
            ("empty", []),
            ("flag", False),
            ("maybe", some(Wrapped("Kind", ("int64",)))),
            ("nothing", some(None)),
            ("map", {"k": b"v"}),
            ("inner", Struct("Unit", [])),
            ("enum", Bare("PLAIN")),
        ],
    )
    assert render(value) == (
        "Outer {\n"
        '    name: "say \\"hi\\"",\n'
        "    items: [\n        1,\n        2,\n    ],\n"
        "    empty: [],\n"
        "    flag: false,\n"
        '    maybe: Some(\n        Kind(\n            "int64",\n        ),\n    ),\n'
        "    nothing: None,\n"
        '    map: {\n        "k": "v",\n    },\n'
        "    inner: Unit,\n"
        "    enum: PLAIN,\n"
        "}"
    )
    assert render(NONE) == "None"


def test_schema_fields_match_pylance(uri: Path) -> None:
    ours = debug.format_schema(lancelet.dataset(uri))
    theirs = pylance_debug.format_schema(lance.dataset(uri))
    assert ours.startswith("Schema {\n    fields: [\n        Field {\n")
    assert _fields(ours) == _fields(theirs)
    assert len(_fields(ours)) == 8  # a, s, s.x, s.y, l, l.item, b, c


def test_manifest_text(uri: Path) -> None:
    ds = lancelet.dataset(uri)
    ours = debug.format_manifest(ds)
    theirs = pylance_debug.format_manifest(lance.dataset(uri))
    assert ours.startswith("Manifest {\n    schema: Schema {")
    assert _fields(ours) == _fields(theirs)
    assert f"\n    version: {ds.version},\n" in ours
    assert "fragments: [\n        Fragment {" in ours
    assert 'library: "lancelet"' in ours  # the writer, as the manifest records it


def test_fragment_text_matches_pylance(uri: Path) -> None:
    ds = lancelet.dataset(uri)
    fragment = ds.get_fragments()[0].metadata
    ours = debug.format_fragment(fragment, ds)
    theirs = pylance_debug.format_fragment(
        lance.dataset(uri).get_fragments()[0].metadata, lance.dataset(uri)
    )
    assert ours.startswith("PrettyPrintableFragment {")
    versions = re.compile(r"(major|minor)_version: (\d+)")
    assert versions.findall(ours) == versions.findall(theirs)
    paths = re.compile(r'path: "([^"]+)"')
    assert paths.findall(ours) == paths.findall(theirs)
    # Each file's schema: the fields it holds, nested in their structs.
    assert _fields(ours) == _fields(theirs)


def test_format_fragment_refuses_other_values(uri: Path) -> None:
    ds = lancelet.dataset(uri)
    with pytest.raises(TypeError, match="FragmentMetadata"):
        debug.format_fragment(ds.get_fragments()[0], ds)  # type: ignore[arg-type]


def test_transactions_match_pylance(uri: Path) -> None:
    ds = lancelet.dataset(uri)
    ds.delete("a = 1")
    ds.update({"a": "7"}, where="a = 2")
    lancelet.write_dataset(ds.to_table().slice(0, 1), uri, mode="append")
    ds = lancelet.dataset(uri)
    ours = debug.list_transactions(ds)
    theirs = pylance_debug.list_transactions(lance.dataset(uri))
    kind = re.compile(r"\n    operation: (\w+) \{")
    assert [kind.findall(t) for t in ours] == [kind.findall(t) for t in theirs]
    assert [k for t in ours for k in kind.findall(t)] == [
        "Append",
        "Update",
        "Delete",
        "Merge",
        "Overwrite",
    ]
    read_version = re.compile(r"^Transaction \{\n    read_version: (\d+),")
    assert [read_version.findall(t) for t in ours] == [read_version.findall(t) for t in theirs]
    assert debug.list_transactions(ds, max_transactions=2) == ours[:2]
    assert debug.list_transactions(ds, max_transactions=0) == []
    older = debug.list_transactions(lancelet.dataset(uri, version=2))
    assert older == ours[3:]
