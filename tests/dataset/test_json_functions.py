"""Lance's JSON functions (json_extract, json_get_int, ...) against pylance: the same
calls on the same dataset give the same values, and fail on the same rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import FilterError, FilterEvaluationError

DOCS: list[Any] = [
    {
        "a": {
            "b": "x",
            "n": 1,
            "f": 1.5,
            "t": True,
            "arr": [1, "2", 3.0, None, "x", True, {"k": 1}],
            "s": "35",
            "st": "TRUE",
            "sf": "9.5",
            "nul": None,
            "o": {"z": 1},
            "1": "one",
        },
        "arr": ["python", "1", 1],
        "e": [],
    },
    [1, 2, {"a": 3}],
    "str",
    5,
    None,
    {"a": None},
]

EXPRESSIONS = [
    "json_extract(data, '$.a.b')",
    "json_extract(data, '$.a')",
    "json_extract(data, '$.a.arr[1]')",
    "json_extract(data, '$[2].a')",
    "json_extract(data, '$.a.nul')",
    "json_extract(data, '$')",
    "json_extract(data, '$.a.1')",
    "json_extract(data, '$[-1]')",
    "json_exists(data, '$.a.nul')",
    "json_exists(data, '$.a.zz')",
    "json_exists(data, '$[0]')",
    "json_array_contains(data, '$.arr', 'python')",
    "json_array_contains(data, '$.arr', '1')",
    "json_array_contains(data, '$.a.arr', '3')",
    "json_array_contains(data, '$.a.arr', 'true')",
    "json_array_contains(data, '$.a.b', 'x')",
    "json_array_length(data, '$.arr')",
    "json_array_length(data, '$.a.b')",
    "json_array_length(data, '$')",
    "json_array_length(data, '$.zz')",
    "json_get(data, 'a')",
    "json_get(data, '0')",
    "json_get(data, 2)",
    "json_get_string(json_get(data, 'a'), 'b')",
    "json_get_string(json_get(data, 'a'), 'f')",
    "json_get_string(json_get(data, 'a'), 't')",
    "json_get_string(json_get(data, 'a'), 'nul')",
    "json_get_string(data, 1)",
    "json_get_int(json_get(data, 'a'), 'n')",
    "json_get_int(json_get(data, 'a'), 's')",
    "json_get_int(json_get(data, 'a'), 'f')",
    "json_get_int(json_get(data, 'a'), 'sf')",
    "json_get_int(json_get(data, 'a'), 't')",
    "json_get_int(data, -1)",
    "json_get_float(json_get(data, 'a'), 'sf')",
    "json_get_float(json_get(data, 'a'), 't')",
    "json_get_bool(json_get(data, 'a'), 't')",
    "json_get_bool(json_get(data, 'a'), 'st')",
]

# One value per row, for the conversions that fail on some values.
VALUES: list[Any] = [2.5, -2.5, "2.5", "1e3", " 5", 1e30, "TRUE", "1", "false", False, "+3"]
VALUES += ["0x10", 18446744073709551615, "abc", 0.49999999999999994, None, [1], {"a": 1}]


def _write(tmp_path: Path, docs: list[Any]) -> str:
    texts = [None if d is None else json.dumps(d) for d in docs]
    table = pa.table({"id": range(len(docs)), "data": pa.array(texts, pa.json_())})
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri)
    return uri


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_projection_matches_pylance(tmp_path: Path, expression: str) -> None:
    uri = _write(tmp_path, DOCS)
    theirs = lance.dataset(uri).to_table(columns={"v": expression})["v"]
    ours = ll.dataset(uri).to_table(columns={"v": expression})["v"]
    assert ours.type == theirs.type
    assert ours.to_pylist() == theirs.to_pylist()


@pytest.mark.parametrize("function", ["int", "float", "bool", "string"])
def test_conversions_match_pylance_row_by_row(tmp_path: Path, function: str) -> None:
    uri = _write(tmp_path, [{"v": v} for v in VALUES])
    expression = f"json_get_{function}(data, 'v')"

    def each_row(dataset: Any) -> list[Any]:
        out = []
        for row in range(len(VALUES)):
            try:
                got = dataset.to_table(columns={"v": expression}, filter=f"id = {row}")
                out.append(got["v"].to_pylist()[0])
            except ValueError:  # pylance: ArrowInvalid
                out.append("error")
        return out

    assert each_row(ll.dataset(uri)) == each_row(lance.dataset(uri))


@pytest.mark.parametrize(
    "where",
    [
        "json_extract(data, '$.a.b') = '\"x\"'",
        "json_get_int(json_get(data, 'a'), 'n') > 0",
        "json_get(data, 'a') IS NOT NULL",
        "json_array_length(data, '$') > 2 OR json_exists(data, '$.e')",
    ],
)
def test_filters_match_pylance(tmp_path: Path, where: str) -> None:
    uri = _write(tmp_path, DOCS)
    theirs = lance.dataset(uri).to_table(filter=where)["id"].to_pylist()
    assert ll.dataset(uri).to_table(filter=where)["id"].to_pylist() == theirs


def test_a_failing_conversion_is_a_value_error(tmp_path: Path) -> None:
    uri = _write(tmp_path, [{"v": "abc"}])
    with pytest.raises(FilterEvaluationError, match="integer"):
        ll.dataset(uri).to_table(filter="json_get_int(data, 'v') > 1")


@pytest.mark.parametrize(
    "expression",
    [
        "json_extract(data, '$.a[*]')",
        "json_exists(data, 'a.b')",
        "json_get(data, id)",
        "json_get(id, 'a')",
        "json_array_contains(data, '$.a', 1)",
    ],
)
def test_unsupported_calls_are_refused(tmp_path: Path, expression: str) -> None:
    uri = _write(tmp_path, DOCS)
    with pytest.raises(FilterError):
        ll.dataset(uri).to_table(filter=f"{expression} IS NOT NULL")
