"""``lancelet info``: checked against pylance's answers and the files on disk."""

from __future__ import annotations

import os
from datetime import timezone
from pathlib import Path

import lance
import pyarrow as pa

from tests.cli.conftest import Cli, Writer, rows


def _data_file_sizes(path: str) -> dict[str, int]:
    data = Path(path) / "data"
    return {name: os.path.getsize(data / name) for name in os.listdir(data)}


def test_info_json_agrees_with_pylance(run: Cli, busy_dataset: str) -> None:
    info = run.json("info", busy_dataset)
    theirs = lance.dataset(busy_dataset)
    assert info["version"] == theirs.version == 4
    assert info["latest_version"] == theirs.latest_version
    committed = theirs.versions()[-1]["timestamp"].astimezone(timezone.utc)
    assert info["timestamp"] == committed.isoformat()
    assert info["data_storage_version"] == theirs.data_storage_version
    assert info["schema"] == [
        {"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in theirs.schema
    ]
    assert info["fragments"] == len(theirs.get_fragments()) == 5
    assert info["rows"] == theirs.count_rows() == 135
    assert info["deleted_rows"] == theirs.stats.dataset_stats()["num_deleted_rows"] == 5
    assert info["physical_rows"] == 140
    # Only writes, appends and a delete: every file in data/ is in this version.
    sizes = _data_file_sizes(busy_dataset)
    assert info["data_files"] == len(sizes)
    assert info["data_bytes"] == sum(sizes.values())
    assert info["data_files_of_unknown_size"] == 0
    assert info["deletion_files"] == len(os.listdir(Path(busy_dataset) / "_deletions")) == 1
    assert info["tags"] == {"first": 1}
    assert info["features"] == {
        "stable_row_ids": False,
        "deletion_files": True,
        "table_config": bool(theirs.config()),
        "external_base_paths": False,
        "mixed_file_versions": False,
    }
    assert info["config"] == theirs.config()


def test_index_coverage_agrees_with_pylance_statistics(run: Cli, busy_dataset: str) -> None:
    (index,) = run.json("info", busy_dataset)["indices"]
    stats = lance.dataset(busy_dataset).stats.index_stats("id_idx")
    assert index["name"] == "id_idx"
    assert index["type"] == stats["index_type"] == "BTree"
    assert index["columns"] == ["id"]
    assert index["segments"] == stats["num_segments"] == 1
    assert index["fragments_covered"] == stats["num_indexed_fragments"] == 4
    assert index["fragments_total"] == 5
    assert index["rows_not_indexed"] == stats["num_unindexed_rows"] == 40


def test_an_older_version_by_number_and_by_tag(run: Cli, busy_dataset: str) -> None:
    theirs = lance.dataset(busy_dataset, version=1)
    for version in ("1", "first"):
        info = run.json("info", busy_dataset, "--version", version)
        assert info["version"] == 1
        assert info["latest_version"] == 4
        assert info["rows"] == theirs.count_rows() == 100
        assert info["fragments"] == len(theirs.get_fragments()) == 4
        assert info["indices"] == []
        assert info["deletion_files"] == 0
    assert run.json("info", busy_dataset, "-v", "2")["deleted_rows"] == 5


def test_stable_row_ids_and_nullability(run: Cli, tmp_path: Path, writer: Writer) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("point", pa.struct([pa.field("x", pa.float32())])),
            pa.field("vector", pa.list_(pa.float32(), 4)),
        ]
    )
    table = pa.table(
        {
            "id": [1, 2],
            "point": [{"x": 1.0}, None],
            "vector": [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]],
        },
        schema=schema,
    )
    path = str(tmp_path / "stable")
    writer(table, path, enable_stable_row_ids=True)
    info = run.json("info", path)
    theirs = lance.dataset(path)
    assert info["features"]["stable_row_ids"] is theirs.has_stable_row_ids is True
    assert info["features"]["table_config"] is False
    theirs.update_config({"owner": "tests"})
    configured = run.json("info", path)
    assert configured["features"]["table_config"] is True
    assert configured["config"] == lance.dataset(path).config() == {"owner": "tests"}
    assert info["schema"] == [
        {"name": "id", "type": "int64", "nullable": False},
        {"name": "point", "type": str(schema.field("point").type), "nullable": True},
        {"name": "vector", "type": "fixed_size_list<item: float>[4]", "nullable": True},
    ]
    assert [f["type"] for f in info["schema"]] == [str(f.type) for f in theirs.schema]


def test_the_table_shows_the_same_facts(run: Cli, busy_dataset: str) -> None:
    shown = run("info", busy_dataset).stdout
    theirs = lance.dataset(busy_dataset)
    total = sum(_data_file_sizes(busy_dataset).values())
    for fact in (
        f"rows                 │ {theirs.count_rows()} ",
        "deleted rows         │ 5 ",
        f"({total} bytes)",
        f"data storage version │ {theirs.data_storage_version} ",
        "first -> 1",
        "deletion_files",
    ):
        assert fact in shown, (fact, shown)
    assert "│ id_idx │ BTree │ id      │ 1        │ 4 / 5             │ 40 " in shown
    assert "│ name  │ string │ yes      │" in shown


def test_an_empty_dataset(run: Cli, tmp_path: Path, writer: Writer) -> None:
    path = str(tmp_path / "empty")
    writer(rows(0, 0), path)
    info = run.json("info", path)
    assert info["rows"] == lance.dataset(path).count_rows() == 0
    assert info["fragments"] == len(lance.dataset(path).get_fragments()) == 0
    assert info["data_bytes"] == 0
    assert "No indices." in run("info", path).stdout


def test_index_segments_and_deleted_rows_not_indexed(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "segments")
    lance.write_dataset(rows(0, 50), path)
    lance.dataset(path).create_scalar_index("name", "BITMAP")
    lance.write_dataset(rows(50, 20), path, mode="append")
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    lance.write_dataset(rows(70, 30), path, mode="append")
    lance.dataset(path).delete("id >= 90")  # in the fragment no segment covers
    (index,) = run.json("info", path)["indices"]
    stats = lance.dataset(path).stats.index_stats("name_idx")
    assert index["type"] == stats["index_type"]
    assert index["columns"] == ["name"]
    assert index["segments"] == stats["num_segments"] == 2
    assert index["fragments_covered"] == stats["num_indexed_fragments"] == 2
    assert index["fragments_total"] == len(lance.dataset(path).get_fragments()) == 3
    assert index["rows_not_indexed"] == stats["num_unindexed_rows"] == 20


def test_a_vector_index_and_the_fragment_reuse_index(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "reuse")
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array([float(i % 17) for i in range(300 * 4)], pa.float32()), 4
    )
    table = pa.table({"id": pa.array(range(300), pa.int64()), "v": vectors})
    lance.write_dataset(table, path, max_rows_per_file=50)
    lance.dataset(path).create_scalar_index("id", "BTREE")
    lance.dataset(path).create_index("v", "IVF_FLAT", num_partitions=2)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=150, defer_index_remap=True)
    theirs = lance.dataset(path)
    described = {index.name: index for index in theirs.describe_indices()}
    shown = {index["name"]: index for index in run.json("info", path)["indices"]}
    assert sorted(shown) == sorted(described) == ["__lance_frag_reuse", "id_idx", "v_idx"]
    for name, index in shown.items():
        assert index["type"] == described[name].index_type
        assert index["columns"] == described[name].field_names
        assert index["segments"] == len(described[name].segments) == 1
    reuse = shown["__lance_frag_reuse"]
    assert (reuse["fragments_covered"], reuse["rows_not_indexed"]) == (None, None)
    for name in ("id_idx", "v_idx"):
        stats = theirs.stats.index_stats(name)
        assert shown[name]["fragments_covered"] == stats["num_indexed_fragments"] == 2
        assert shown[name]["rows_not_indexed"] == stats["num_unindexed_rows"] == 0
    table_text = run("info", path).stdout
    assert "│ __lance_frag_reuse │ FragmentReuse │         │ 1        │ -" in table_text
