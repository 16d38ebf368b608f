"""The change data feed on Spark (``readChangeFeed``), batch and streaming.

Datasets with stable row ids, written by pylance and by lancelet, go through
appends, deletes, updates, upserts and a compaction.  What each commit changed is
worked out independently of lancelet: pylance reads the versions before and after
it, rows keyed by row id; an id only before was deleted, one only after inserted,
one in both with other values updated (every update here changes a value).  Spark's
rows are compared with that as multisets."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

import lancelet
from lancelet.dataset.engine import Location, open_snapshot
from lancelet.spark.bridge import bridge_jar
from lancelet.transaction.store import DatasetStore
from tests.storage import remove_file
from tests.versions import STORAGE_VERSION

DATA = ("k", "v", "s")
Change = tuple[Any, ...]  # the data columns, then _change_type and _commit_version


def rows(start: int, stop: int, tag: int = 0) -> pa.Table:
    k = np.arange(start, stop, dtype=np.int64)
    return pa.table({"k": k, "v": k * 10 + tag, "s": pa.array([f"s{i}" for i in k])})


def build(uri: str, writer: Any) -> None:
    """Versions 1-2 write and append, 3 deletes, 4 updates, 5 upserts, then a
    compaction (one or more versions) and an append."""
    writer.write_dataset(
        rows(0, 40),
        uri,
        max_rows_per_file=15,
        enable_stable_row_ids=True,
        data_storage_version=STORAGE_VERSION,
    )
    writer.write_dataset(rows(40, 60), uri, mode="append", max_rows_per_file=15)
    dataset = writer.dataset(uri)
    dataset.delete("k < 4 OR k = 45")
    dataset.update({"v": "v + 1"}, where="k >= 20 AND k < 25")
    upsert = dataset.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
    upsert.execute(rows(55, 70, tag=7))  # 55-59 updated, 60-69 inserted
    dataset = writer.dataset(uri)
    dataset.optimize.compact_files(target_rows_per_fragment=1000)
    writer.write_dataset(rows(70, 75), uri, mode="append")


def expected(uri: str, start: int, end: int, row_id: bool = False) -> Counter[Change]:
    """Each commit's changes in [start, end], from pylance's snapshots (see above)."""
    out: Counter[Change] = Counter()
    for version in range(start, end + 1):
        before = _by_row_id(uri, version - 1, row_id) if version > 1 else {}
        after = _by_row_id(uri, version, row_id)
        for key in before.keys() - after.keys():
            out[(*before[key], "delete", version)] += 1
        for key in after.keys() - before.keys():
            out[(*after[key], "insert", version)] += 1
        for key in before.keys() & after.keys():
            if before[key] != after[key]:
                out[(*before[key], "update_preimage", version)] += 1
                out[(*after[key], "update_postimage", version)] += 1
    return out


def _by_row_id(uri: str, version: int, row_id: bool) -> dict[int, tuple[Any, ...]]:
    table = lance.dataset(uri, version=version).to_table(with_row_id=True)
    names = [*DATA, "_rowid"] if row_id else list(DATA)
    return {r["_rowid"]: tuple(r[n] for n in names) for r in table.to_pylist()}


def changes(
    rows_: Iterable[Any], names: Iterable[str] = (*DATA, "_change_type", "_commit_version")
) -> Counter[Change]:
    """Spark's rows (or tuples) as a multiset of their ``names`` columns."""
    return Counter(tuple(r[n] for n in names) for r in rows_)


def feed(spark: SparkSession, uri: str, **options: str) -> DataFrame:
    reader = spark.read.format("lance").option("readChangeFeed", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(uri)


def latest(uri: str) -> int:
    return int(lance.dataset(uri).version)


def committed_at(uri: str, version: int) -> int:
    """When ``version`` was committed, in microseconds since the epoch."""
    return int(open_snapshot(Location(uri), version).manifest.timestamp_ns // 1000)


def iso(micros: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=micros)
    return moment.isoformat()


@pytest.fixture(scope="module", params=["pylance", "lancelet"])
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("cdf") / "ds")
    build(uri, lance if request.param == "pylance" else lancelet)
    return uri


@pytest.fixture(scope="module")
def pylance_history(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("cdf") / "ds")
    build(uri, lance)
    return uri


# -- batch reads ---------------------------------------------------------------------------


def test_every_range_is_the_independent_difference(spark: SparkSession, history: str) -> None:
    end = latest(history)
    df = feed(spark, history, startingVersion="1")
    assert [(f.name, f.dataType) for f in df.schema.fields[-3:]] == [
        ("_change_type", st.StringType()),
        ("_commit_version", st.LongType()),
        ("_commit_timestamp", st.TimestampType()),
    ]
    assert df.columns == [*DATA, "_change_type", "_commit_version", "_commit_timestamp"]
    want = expected(history, 1, end)
    assert {c[-2] for c in want} == {"insert", "delete", "update_preimage", "update_postimage"}
    assert changes(df.collect()) == want
    for start, stop in ((3, 5), (4, 4), (6, end)):
        got = feed(spark, history, startingVersion=str(start), endingVersion=str(stop))
        assert changes(got.collect()) == expected(history, start, stop), (start, stop)
    # An ending version past the latest reads to the latest, as Delta does.
    beyond = feed(spark, history, startingVersion="5", endingVersion=str(end + 10))
    assert changes(beyond.collect()) == expected(history, 5, end)
    stamps = df.select("_commit_version", F.unix_micros("_commit_timestamp")).distinct()
    assert {(v, t) for v, t in stamps.collect()} == {
        (v, committed_at(history, v)) for v in {c[-1] for c in want}
    }


def test_timestamps_map_to_versions_as_in_delta(spark: SparkSession, history: str) -> None:
    end = latest(history)
    at_3, at_5 = committed_at(history, 3), committed_at(history, 5)
    # The first version committed at or after the start, the last at or before the end.
    got = feed(spark, history, startingTimestamp=iso(at_3), endingTimestamp=iso(at_5))
    assert changes(got.collect()) == expected(history, 3, 5)
    after_3 = feed(spark, history, startingTimestamp=iso(at_3 + 1), endingVersion="4")
    assert changes(after_3.collect()) == expected(history, 4, 4)
    # Both instants between the same two commits: nothing, not an error.
    between = feed(spark, history, startingTimestamp=iso(at_3 + 1), endingTimestamp=iso(at_3 + 2))
    assert between.count() == 0
    to_latest = feed(spark, history, startingTimestamp=iso(committed_at(history, end)))
    assert changes(to_latest.collect()) == expected(history, end, end)
    with pytest.raises(Exception, match="after the latest version"):
        feed(spark, history, startingTimestamp=iso(committed_at(history, end) + 10**9)).collect()


def test_columns_row_ids_and_filters(spark: SparkSession, history: str) -> None:
    end = latest(history)
    want = expected(history, 1, end, row_id=True)
    df = feed(spark, history, startingVersion="1", with_row_id="true")
    assert df.columns == [*DATA, "_rowid", "_change_type", "_commit_version", "_commit_timestamp"]
    names = (*DATA, "_rowid", "_change_type", "_commit_version")
    assert changes(df.collect(), names) == want

    def only(kind: str | None = None, version: int | None = None) -> Counter[Change]:
        return Counter(
            {c: n for c, n in want.items() if kind in (None, c[-2]) and version in (None, c[-1])}
        )

    deletes = df.where("_change_type = 'delete'")
    assert changes(deletes.collect(), names) == only("delete")
    assert deletes.count() == sum(only("delete").values())
    at_4 = df.where(F.col("_commit_version") == 4)
    assert changes(at_4.collect(), names) == only(version=4)
    updates = df.where("_change_type LIKE 'update%' AND _commit_version >= 5 AND k > 56")
    assert changes(updates.collect(), names) == Counter(
        {c: n for c, n in want.items() if c[-2].startswith("update") and c[-1] >= 5 and c[0] > 56}
    )
    if bridge_jar() is not None:
        # Filters pushed into the read; COUNT(*) answered from metadata while planning.
        plan = at_4._jdf.queryExecution().executedPlan().toString()
        assert "pushed" in plan and "_commit_version" in plan, plan
        counting = df.selectExpr("count(*)")._jdf.queryExecution().executedPlan().toString()
        assert "LocalTableScan" in counting, counting
    picked = df.select("_commit_version", "k").where("_change_type = 'insert'")
    assert sorted(tuple(r) for r in picked.collect()) == sorted(
        (c[-1], c[0]) for c, n in only("insert").items() for _ in range(n)
    )
    counts = {r[0]: r[1] for r in df.groupBy("_change_type").count().collect()}
    assert counts == dict(Counter(c[-2] for c in want.elements()))
    assert df.count() == sum(want.values())
    # The columns option, and a commit cut into several tasks.
    narrow = feed(spark, history, startingVersion="1", columns="k", rows_per_partition="4")
    assert narrow.columns == ["k", "_change_type", "_commit_version", "_commit_timestamp"]
    assert narrow.rdd.getNumPartitions() > end
    assert changes(narrow.collect(), ("k", "_change_type", "_commit_version")) == Counter(
        (c[0], c[-2], c[-1]) for c in want.elements()
    )


def test_errors_name_what_is_wrong(
    spark: SparkSession, pylance_history: str, tmp_path: Path
) -> None:
    history = pylance_history
    end = latest(history)
    with pytest.raises(Exception, match="startingVersion or startingTimestamp is required"):
        feed(spark, history).collect()
    with pytest.raises(Exception, match="CDC range from start 4 to end 3 was invalid"):
        feed(spark, history, startingVersion="4", endingVersion="3").collect()
    with pytest.raises(Exception, match="Start version cannot be greater than the latest"):
        feed(spark, history, startingVersion=str(end + 1)).collect()
    with pytest.raises(Exception, match="readChangeFeed cannot be combined with versionAsOf"):
        feed(spark, history, startingVersion="1", versionAsOf="2").collect()
    with pytest.raises(Exception, match="option ignoreDeletes does not apply"):
        feed(spark, history, startingVersion="1", ignoreDeletes="true").collect()
    with pytest.raises(Exception, match="unknown change feed option"):
        feed(spark, history, startingVersion="1", nearest="[1]").collect()
    # A cleaned-up version in the range (or the one before it) is an error; after it, not.
    copy = str(tmp_path / "copy")
    shutil.copytree(history, copy)
    location = DatasetStore(copy).manifest_location(2)
    assert location is not None
    remove_file(Path(copy) / "_versions" / location.name)
    for start in (2, 3):
        with pytest.raises(Exception, match="version 2 is not found"):
            feed(spark, copy, startingVersion=str(start), endingVersion="4").collect()
    after = feed(spark, copy, startingVersion="4", endingVersion="5")
    assert changes(after.collect()) == expected(history, 4, 5)
    plain = str(tmp_path / "plain")
    lance.write_dataset(rows(0, 10), plain, data_storage_version=STORAGE_VERSION)
    with pytest.raises(Exception, match="stable row ids"):
        feed(spark, plain, startingVersion="1").collect()


# -- streams -------------------------------------------------------------------------------


class Stream:
    """One streaming query of the feed into a sink idempotent per batch (a dict by
    batch id), rerun on the same checkpoint as a restarted query."""

    def __init__(self, spark: SparkSession, uri: str, checkpoint: Path, **options: str) -> None:
        self.spark, self.uri, self.options = spark, uri, options
        self.checkpoint = str(checkpoint)
        self.batches: dict[int, list[tuple[Any, ...]]] = {}

    def load(self) -> DataFrame:
        reader = self.spark.readStream.format("lance").option("readChangeFeed", "true")
        for key, value in {"with_row_id": "true", **self.options}.items():
            reader = reader.option(key, value)
        return reader.load(self.uri)

    def __call__(self, df: DataFrame | None = None) -> list[int]:
        """Run until everything committed so far is read (from a new DataFrame, unless
        one is given); the batches' sizes."""
        query = (
            (df or self.load())
            .writeStream.foreachBatch(self._sink)
            .option("checkpointLocation", self.checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    def _sink(self, df: DataFrame, batch_id: int) -> None:
        names = (*DATA, "_rowid", "_change_type", "_commit_version")
        self.batches[batch_id] = [tuple(r) for r in df.select(*names).collect()]

    def delivered(self) -> Counter[Change]:
        out = Counter(r for rows_ in self.batches.values() for r in rows_)
        keys = Counter((r[-1], r[3], r[-2]) for r in out.elements())
        assert max(keys.values(), default=1) == 1, "a change was delivered twice"
        return out


@pytest.fixture
def stream_uri(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        rows(0, 30),
        uri,
        max_rows_per_file=10,
        enable_stable_row_ids=True,
        data_storage_version=STORAGE_VERSION,
    )
    lance.write_dataset(rows(30, 40), uri, mode="append")
    return uri


def test_stream_from_a_version_exactly_once(
    spark: SparkSession, stream_uri: str, tmp_path: Path
) -> None:
    uri = stream_uri
    run = Stream(spark, uri, tmp_path / "checkpoint", startingVersion="2", maxFilesPerTrigger="1")
    assert run() == [10]
    dataset = lance.dataset(uri)
    dataset.delete("k < 3")
    dataset.update({"v": "v + 1"}, where="k = 35")
    dataset.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(
        rows(38, 43, tag=7)
    )
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    lance.write_dataset(rows(43, 45), uri, mode="append")
    sizes = run()  # a restarted query: the commits after the last one delivered
    assert sizes == [3, 2, 7, 2]  # one commit each (the compaction changed no rows)
    assert run() == []
    assert run.delivered() == expected(uri, 2, latest(uri), row_id=True)
    with pytest.raises(Exception, match="endingVersion bounds a batch read"):
        Stream(spark, uri, tmp_path / "bounded", endingVersion="3")()


def test_stream_starts_with_the_snapshot_as_inserts(
    spark: SparkSession, stream_uri: str, tmp_path: Path
) -> None:
    uri = stream_uri
    run = Stream(spark, uri, tmp_path / "checkpoint", maxRowsPerTrigger="25")
    assert run() == [20, 20]  # fragments of 10 rows
    first = latest(uri)
    lance.dataset(uri).delete("k >= 5 AND k < 8")
    lance.write_dataset(rows(40, 70), uri, mode="append")
    assert run() == [3, 30]  # at least one commit per batch
    # A commit that changes the schema stops a stream reading the older one; a query
    # from a new DataFrame reads on, with the new schema.
    old = run.load()
    lance.dataset(uri).add_columns(pa.field("w", pa.int64()))  # nulls: no row changes
    more = rows(70, 72).append_column("w", pa.array([0, 0], pa.int64()))
    lance.write_dataset(more, uri, mode="append")
    with pytest.raises(Exception, match="the schema changed"):
        run(old)
    assert run() == [2]
    snapshot = Counter((*r, "insert", first) for r in _by_row_id(uri, first, True).values())
    assert run.delivered() == snapshot + expected(uri, first + 1, latest(uri), row_id=True)
