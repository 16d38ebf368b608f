"""JSON indices (``IndexConfig("json", {"target_index_type": ..., "path": ...})``)
against pylance: the same files and manifest details, each library using the other's
index for ``json_get_*`` filters, with the same results as a scan."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from lance.file import LanceFileReader
from lance.indices import IndexConfig as PylanceConfig

import lancelet as ll
from lancelet.errors import ArgumentError, UnsupportedIndexError, UnsupportedOptionError
from lancelet.indices import IndexConfig
from tests.versions import STORAGE_VERSION

DOCS = ['{"x": 7, "y": 10}', '{"x": 11, "y": 22}', '{"y": 0}', '{"x": 10}', None, '{"x": null}']
DOCS += ['{"x": 10}', "[1, 2]", '"x"', '{"z": 1}']
NESTED = ['{"x": {"a": 3}}', '{"x": {"a": 5}, "y": 1}', '{"x": 1}', '{"y": 2}', None, "[1]"]


def _table(docs: list[str | None]) -> pa.Table:
    return pa.table({"jsons": pa.array(docs, pa.json_()), "id": list(range(len(docs)))})


def _write(uri: Path, docs: list[str | None]) -> None:
    lance.write_dataset(
        _table(docs), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=4
    )


def _params(target: str, path: str) -> dict[str, str]:
    return {"target_index_type": target, "path": path}


def _index_dir(uri: Path) -> Path:
    (uid,) = os.listdir(uri / "_indices")
    return uri / "_indices" / uid


def _files(uri: Path) -> dict[str, tuple[pa.Table, dict[bytes, bytes]]]:
    """Every index file's rows and schema metadata, as pylance reads them."""
    out = {}
    for name in sorted(os.listdir(_index_dir(uri))):
        table = LanceFileReader(str(_index_dir(uri) / name)).read_all().to_table()
        out[name] = (table.replace_schema_metadata(), dict(table.schema.metadata or {}))
    return out


def _details(uri: Path) -> list[tuple[str, bytes, int | None]]:
    manifest = ll.dataset(uri)._manifest
    return [
        (i.index_details.type_url, i.index_details.value, i.index_version)
        for i in manifest.indices
        if i.index_details is not None
    ]


@pytest.mark.parametrize(
    ("target", "path"),
    [("btree", "x"), ("BTREE", "$.x"), ("bitmap", "x"), ("zonemap", "x"), ("btree", "x.a")],
)
def test_lancelet_writes_what_pylance_writes(tmp_path: Path, target: str, path: str) -> None:
    docs = NESTED if path == "x.a" else DOCS
    for who in ("pylance", "lancelet"):
        _write(tmp_path / who, docs)
    lance.dataset(tmp_path / "pylance").create_scalar_index(
        "jsons", PylanceConfig("json", _params(target, path))
    )
    ll.dataset(tmp_path / "lancelet").create_scalar_index(
        "jsons", IndexConfig("json", _params(target, path))
    )
    assert _details(tmp_path / "lancelet") == _details(tmp_path / "pylance")
    ours, theirs = _files(tmp_path / "lancelet"), _files(tmp_path / "pylance")
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert ours[name][0].equals(theirs[name][0]), name
        assert ours[name][1] == theirs[name][1], name
    mine, reference = ll.dataset(tmp_path / "lancelet"), lance.dataset(tmp_path / "pylance")
    assert mine.describe_indices()[0].details == reference.describe_indices()[0].details
    assert mine.stats.index_stats("jsons_idx") | {"updated_at_timestamp_ms": 0} == (
        reference.stats.index_stats("jsons_idx") | {"updated_at_timestamp_ms": 0}
    )


FILTERS = [
    "json_get_int(jsons, 'x') = 10",
    "json_get_int(jsons, 'x') > 7",
    "json_get_int(jsons, 'x') BETWEEN 8 AND 11",
    "json_get_int(jsons, 'x') IN (7, 11)",
    "json_get_int(jsons, 'x') IS NULL",
    "json_get_int(jsons, 'x') IS NOT NULL AND id > 2",
    "json_get_int(jsons, 'x') < 10 OR id = 2",
    "json_get_int(jsons, 'y') = 10",  # another path: no index
]
# Getters of another type than the index's values: pylance 14 searches its int64
# index with the float literal and finds nothing (and panics for the string getter);
# lancelet scans.
OTHER_TYPES = ["json_get_float(jsons, 'x') = 10", "json_get_string(jsons, 'x') = '10'"]


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
def test_each_reads_and_uses_the_others_index(tmp_path: Path, writer: str) -> None:
    uri = tmp_path / "ds"
    _write(uri, DOCS)
    if writer == "pylance":
        lance.dataset(uri).create_scalar_index(
            "jsons", PylanceConfig("json", _params("btree", "x"))
        )
    else:
        ll.dataset(uri).create_scalar_index("jsons", IndexConfig("json", _params("btree", "x")))
    theirs, ours = lance.dataset(uri), ll.dataset(uri)
    for condition in FILTERS:
        expected = theirs.to_table(filter=condition, use_scalar_index=False)
        assert ours.to_table(filter=condition) == expected, condition
        assert theirs.to_table(filter=condition) == expected, condition
    for condition in FILTERS[:5]:  # the int getter on an int index: both use it
        assert "ScalarIndexQuery" in theirs.scanner(filter=condition).explain_plan()
        plan = ours.scanner(filter=condition).explain_plan()
        assert "ScalarIndexQuery" in plan and "answered=false" not in plan, condition
    for condition in [FILTERS[-1], *OTHER_TYPES]:  # lancelet scans the rows
        expected = theirs.to_table(filter=condition, use_scalar_index=False)
        assert ours.to_table(filter=condition) == expected, condition
        plan = ours.scanner(filter=condition).explain_plan()
        assert "ScalarIndexQuery" not in plan or "answered=false" in plan, condition
    wrong = theirs.to_table(filter=OTHER_TYPES[0])
    assert wrong.num_rows == 0 < ours.to_table(filter=OTHER_TYPES[0]).num_rows


INFERENCE = [
    ['{"x": 1.5}', '{"x": 2}'],  # an integer where floats are: a float
    ['{"x": "a"}', '{"x": "b"}', '{"y": 1}'],
    ['{"x": true}', '{"x": false}'],
    ['{"y": 1}', None, '{"x": null}'],  # every value null: strings
    ['{"x": 9223372036854775807}', '{"x": -9223372036854775808}'],
    ['{"x": 18446744073709551615}', '{"x": 1}'],  # beyond int64: a float
    ['{"x": -0.0}', '{"x": 1e300}'],
]


@pytest.mark.parametrize("docs", INFERENCE)
def test_value_types_are_inferred_as_pylance_infers_them(tmp_path: Path, docs: list[Any]) -> None:
    for who in ("pylance", "lancelet"):
        _write(tmp_path / who, docs)
    lance.dataset(tmp_path / "pylance").create_scalar_index(
        "jsons", PylanceConfig("json", _params("btree", "x"))
    )
    ll.dataset(tmp_path / "lancelet").create_scalar_index(
        "jsons", IndexConfig("json", _params("btree", "x"))
    )
    ours, theirs = _files(tmp_path / "lancelet"), _files(tmp_path / "pylance")
    for name in ours:
        assert ours[name][0].equals(theirs[name][0]), name


REFUSED_BY_BOTH = [
    ['{"x": 1}', '{"x": 1.5}'],  # a float where integers are
    ['{"x": "a"}', '{"x": 1}'],
    ['{"x": true}', '{"x": 1}'],
    ['{"x": [1]}'],
    ['{"x": {"a": 1}}'],
    ['{"x": 1}', '{"x": [1]}'],
]


@pytest.mark.parametrize("docs", REFUSED_BY_BOTH)
def test_values_of_two_types_are_refused_as_in_pylance(tmp_path: Path, docs: list[Any]) -> None:
    _write(tmp_path / "ds", docs)
    with pytest.raises(ValueError):
        lance.dataset(tmp_path / "ds").create_scalar_index(
            "jsons", PylanceConfig("json", _params("btree", "x"))
        )
    with pytest.raises(ArgumentError, match="JSON"):
        ll.dataset(tmp_path / "ds").create_scalar_index(
            "jsons", IndexConfig("json", _params("btree", "x"))
        )
    assert ll.dataset(tmp_path / "ds").describe_indices() == []
    # The files written before the refusal are gone (pylance's failed build wrote none).
    assert not any(p.is_file() for p in (tmp_path / "ds").glob("_indices/**/*"))


def test_what_lancelet_does_not_build_is_refused(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(uri, DOCS)
    ours = ll.dataset(uri)
    with pytest.raises(UnsupportedIndexError, match="bloomfilter"):
        ours.create_scalar_index("jsons", IndexConfig("json", _params("bloomfilter", "x")))
    with pytest.raises(ArgumentError, match="paths of object keys"):
        ours.create_scalar_index("jsons", IndexConfig("json", _params("btree", "$[0]")))
    with pytest.raises(UnsupportedOptionError, match="target_index_parameters"):
        params = {**_params("zonemap", "x"), "target_index_parameters": '{"rows_per_zone": 2}'}
        ours.create_scalar_index("jsons", IndexConfig("json", params))
    with pytest.raises(UnsupportedOptionError, match="extra"):
        ours.create_scalar_index(
            "jsons", IndexConfig("json", {**_params("btree", "x"), "extra": 1})
        )
    with pytest.raises(ArgumentError, match="JSON column"):
        ours.create_scalar_index("id", IndexConfig("json", _params("btree", "x")))
    stable = tmp_path / "stable"
    ll.write_dataset(_table(DOCS), stable, enable_stable_row_ids=True)
    with pytest.raises(UnsupportedOptionError, match="stable row ids"):
        ll.dataset(stable).create_scalar_index("jsons", IndexConfig("json", _params("btree", "x")))
    assert ll.dataset(uri).describe_indices() == []


def test_optimize_and_compaction_keep_the_index_as_pylance_does(tmp_path: Path) -> None:
    def history(uri: Path, lib: Any, config: Any) -> Any:
        lib.write_dataset(_table(DOCS), uri, max_rows_per_file=4)
        lib.dataset(uri).create_scalar_index("jsons", config("json", _params("btree", "x")))
        lib.write_dataset(_table(['{"x": 8}', '{"x": 70}']), uri, mode="append")
        lib.dataset(uri).optimize.optimize_indices()
        after_optimize = lib.dataset(uri)
        segments = [
            (sorted(s.fragment_ids), s.index_version)
            for s in after_optimize.describe_indices()[0].segments
        ]
        lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
        compacted = lib.dataset(uri)
        return segments, after_optimize.version, compacted.describe_indices()[0].segments

    ours = history(tmp_path / "ours", ll, IndexConfig)
    theirs = history(tmp_path / "theirs", lance, PylanceConfig)
    assert ours[:2] == theirs[:2]
    assert [sorted(s.fragment_ids) for s in ours[2]] == [sorted(s.fragment_ids) for s in theirs[2]]
    for uri in (tmp_path / "ours", tmp_path / "theirs"):
        condition = "json_get_int(jsons, 'x') IN (8, 70, 11)"
        assert "ScalarIndexQuery" in ll.dataset(uri).scanner(filter=condition).explain_plan()
        expected = lance.dataset(uri).to_table(filter=condition, use_scalar_index=False)
        assert ll.dataset(uri).to_table(filter=condition) == expected
        assert lance.dataset(uri).to_table(filter=condition) == expected


def test_an_update_of_another_type_is_refused_by_both(tmp_path: Path) -> None:
    for lib, config, who in ((ll, IndexConfig, "ours"), (lance, PylanceConfig, "theirs")):
        uri = tmp_path / who
        lib.write_dataset(_table(DOCS), uri)
        lib.dataset(uri).create_scalar_index("jsons", config("json", _params("btree", "x")))
        lib.write_dataset(_table(['{"x": 1.5}']), uri, mode="append")
        with pytest.raises((ValueError, OSError)):
            lib.dataset(uri).optimize.optimize_indices()


_values = {
    "int": st.integers(-5, 5),
    "float": st.sampled_from([-1.5, 0.0, 2.0, 3.25]),
    "string": st.sampled_from(["a", "b", "10", ""]),
    "bool": st.booleans(),
}
_getter = {
    "int": "json_get_int",
    "float": "json_get_float",
    "string": "json_get_string",
    "bool": "json_get_bool",
}


@st.composite
def _cases(draw: st.DrawFn) -> tuple[list[str | None], str, str]:
    kind = draw(st.sampled_from(sorted(_values)))
    docs: list[str | None] = []
    for _ in range(draw(st.integers(1, 12))):
        choice = draw(st.sampled_from(["value", "value", "missing", "null", "sqlnull"]))
        if choice == "value":
            docs.append(json.dumps({"x": draw(_values[kind]), "k": 1}))
        else:
            docs.append({"missing": '{"k": 1}', "null": '{"x": null}', "sqlnull": None}[choice])
    getter_kind = draw(st.sampled_from([kind, *_getter]))
    getter = _getter[getter_kind]
    literal = draw(_values[getter_kind])
    rendered = json.dumps(literal) if isinstance(literal, bool) else repr(literal)
    rendered = f"'{literal}'" if isinstance(literal, str) else rendered.lower()
    op = draw(st.sampled_from(["=", "<", ">=", "!="]))
    condition = draw(
        st.sampled_from(
            [
                f"{getter}(jsons, 'x') {op} {rendered}",
                f"{getter}(jsons, 'x') IS NULL",
                f"{getter}(jsons, 'x') IN ({rendered})",
            ]
        )
    )
    return docs, draw(st.sampled_from(["btree", "bitmap", "zonemap"])), condition


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases())
def test_indexed_filters_give_the_scans_rows(case: tuple[list[str | None], str, str]) -> None:
    docs, target, condition = case
    note(f"{docs} {target} {condition}")
    with tempfile.TemporaryDirectory() as root:
        for who, lib, config in (("ours", ll, IndexConfig), ("theirs", lance, PylanceConfig)):
            uri = Path(root) / who
            lance.write_dataset(
                _table(docs), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=4
            )
            lib.dataset(uri).create_scalar_index("jsons", config("json", _params(target, "x")))
        for who in ("ours", "theirs"):
            uri = Path(root) / who
            try:
                expected = lance.dataset(uri).to_table(filter=condition, use_scalar_index=False)
            except (OSError, ValueError):
                continue  # a value the getter cannot convert: no answer to compare
            assert ll.dataset(uri).to_table(filter=condition) == expected
