"""Datasets on S3 written by one library and continued by the other.

Every version's expected rows come from :mod:`tests.store.rows`, a Python model of
what each commit did; both pylance and lancelet must read exactly those rows at every
version, by ``version=`` and by ``checkout_version``, and pylance's ``validate()``
must pass on what lancelet wrote.
"""

from __future__ import annotations

import re
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from tests.store import rows
from tests.store.conftest import S3Place
from tests.store.rows import Rows
from tests.versions import STORAGE_VERSION

V2_MANIFEST = re.compile(r"_versions/\d{20}\.manifest$")


def _check_version(s3: S3Place, version: int, want: Rows) -> None:
    theirs = lance.dataset(s3.uri, version=version, storage_options=s3.options)
    ours = ll.dataset(s3.uri, version=version, storage_options=s3.options)
    assert theirs.version == ours.version == version
    assert rows.of(theirs.to_table()) == want, f"pylance at version {version}"
    assert rows.of(ours.to_table()) == want, f"lancelet at version {version}"
    assert theirs.count_rows() == ours.count_rows() == len(want)


def _check_history(s3: S3Place, history: dict[int, Rows]) -> None:
    for version, want in history.items():
        _check_version(s3, version, want)
    latest_theirs = lance.dataset(s3.uri, storage_options=s3.options)
    latest_ours = ll.dataset(s3.uri, storage_options=s3.options)
    assert latest_theirs.version == latest_ours.version == max(history)
    assert [v["version"] for v in latest_theirs.versions()] == sorted(history)
    assert [v["version"] for v in latest_ours.versions()] == sorted(history)
    # checkout_version moves between versions in both libraries alike.
    for version, want in history.items():
        assert rows.of(latest_ours.checkout_version(version).to_table()) == want
        assert rows.of(latest_theirs.checkout_version(version).to_table()) == want
    latest_theirs.validate()
    latest_ours.validate()


def test_lancelet_writes_pylance_continues_lancelet_continues(s3: S3Place) -> None:
    opts = s3.options
    history: dict[int, Rows] = {}
    current = rows.make(range(30))
    ds = ll.write_dataset(rows.table(current), s3.uri, max_rows_per_file=10, storage_options=opts)
    history[ds.version] = current
    assert ds.version == 1
    assert any(V2_MANIFEST.search(k) for k in s3.objects())

    # pylance reads what lancelet wrote, appends and deletes.
    theirs = lance.dataset(s3.uri, storage_options=opts)
    theirs.validate()
    assert rows.of(theirs.to_table()) == current
    added = rows.make(range(30, 40), "py")
    theirs = lance.write_dataset(rows.table(added), s3.uri, mode="append", storage_options=opts)
    current = {**current, **added}
    history[theirs.version] = current
    theirs.delete("k % 5 = 0")
    current = rows.without(current, lambda k: k % 5 == 0)
    history[theirs.version] = current
    assert theirs.version == 3

    # lancelet continues: append, delete, update, merge_insert.
    added = rows.make(range(40, 50), "ll")
    ours = ll.write_dataset(rows.table(added), s3.uri, mode="append", storage_options=opts)
    current = {**current, **added}
    history[ours.version] = current
    ours.delete("k < 3")
    current = rows.without(current, lambda k: k < 3)
    history[ours.version] = current
    ours.update({"s": "'updated'"}, where="k >= 45")
    current = {k: ("updated", x) if k >= 45 else (s, x) for k, (s, x) in current.items()}
    history[ours.version] = current
    source = rows.make(range(48, 53), "merged")
    (ours.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()).execute(
        rows.table(source)
    )
    current = {**current, **source}
    history[ours.version] = current
    assert ours.version == 7

    # pylance once more, on lancelet's rewritten fragments.
    theirs = lance.dataset(s3.uri, storage_options=opts)
    theirs.update({"x": "x + 100"}, where="k = 7")
    current = {**current, 7: (current[7][0], current[7][1] + 100)}
    history[theirs.version] = current

    _check_history(s3, history)


def test_pylance_defaults_read_and_continued_by_lancelet(s3: S3Place) -> None:
    opts = s3.options
    first = rows.make(range(20))
    theirs = lance.write_dataset(rows.table(first), s3.uri, storage_options=opts)
    # pylance's defaults, which lancelet must read: format 2.2, v2 manifest names.
    assert theirs.data_storage_version == "2.2"
    manifests = [k for k in s3.objects() if "/_versions/" in k and k.endswith(".manifest")]
    assert manifests and all(V2_MANIFEST.search(k) for k in manifests)

    ours = ll.dataset(s3.uri, storage_options=opts)
    assert ours.data_storage_version == "2.2"
    assert rows.of(ours.to_table()) == first
    ours.validate()
    more = rows.make(range(20, 25), "ll")
    ours = ll.write_dataset(rows.table(more), s3.uri, mode="append", storage_options=opts)
    ours.delete("k = 0")
    want = rows.without({**first, **more}, lambda k: k == 0)
    _check_history(s3, {1: first, 2: {**first, **more}, 3: want})
    # lancelet's new data file is in the dataset's format, and on a v2 name.
    new_files = lance.dataset(s3.uri, storage_options=opts).get_fragments()[-1].data_files()
    assert [f.file_major_version for f in new_files] == [2]
    assert [f.file_minor_version for f in new_files] == [2]
    manifests = [k for k in s3.objects() if "/_versions/" in k and k.endswith(".manifest")]
    assert len(manifests) == 3 and all(V2_MANIFEST.search(k) for k in manifests)


def test_tags_across_libraries(s3: S3Place) -> None:
    opts = s3.options
    v1 = rows.make(range(10))
    ours = ll.write_dataset(rows.table(v1), s3.uri, storage_options=opts)
    v2 = rows.make(range(10, 15))
    ll.write_dataset(rows.table(v2), s3.uri, mode="append", storage_options=opts)
    ours = ll.dataset(s3.uri, storage_options=opts)
    ours.tags.create("first", 1)
    theirs = lance.dataset(s3.uri, storage_options=opts)
    theirs.tags.create("second", 2)

    for tags in (ours.tags, theirs.tags, ll.dataset(s3.uri, storage_options=opts).tags):
        listed = tags.list()
        assert {name: info["version"] for name, info in listed.items()} == {
            "first": 1,
            "second": 2,
        }
    both = {**v1, **v2}
    assert rows.of(lance.dataset(s3.uri, version="first", storage_options=opts).to_table()) == v1
    assert rows.of(ll.dataset(s3.uri, version="second", storage_options=opts).to_table()) == both
    assert rows.of(ll.dataset(s3.uri, version="first", storage_options=opts).to_table()) == v1
    assert rows.of(theirs.checkout_version("second").to_table()) == both

    ours.tags.update("second", 1)
    assert lance.dataset(s3.uri, storage_options=opts).tags.get_version("second") == 1
    theirs.tags.delete("first")
    assert set(ll.dataset(s3.uri, storage_options=opts).tags.list()) == {"second"}
    ours.tags.delete("second")
    assert lance.dataset(s3.uri, storage_options=opts).tags.list() == {}
    assert not any("/_refs/tags/" in k for k in s3.objects())


def _data_keys(s3: S3Place) -> set[str]:
    return {k for k in s3.objects("ds/data/")}


def _referenced(s3: S3Place) -> set[str]:
    """The data files of the latest version, as pylance lists them."""
    theirs = lance.dataset(s3.uri, storage_options=s3.options)
    return {f"ds/data/{f.path}" for frag in theirs.get_fragments() for f in frag.data_files()}


@pytest.mark.parametrize("cleaner", ["lancelet", "pylance"])
def test_cleanup_old_versions(s3: S3Place, cleaner: str) -> None:
    opts = s3.options
    ll.write_dataset(rows.table(rows.make(range(10))), s3.uri, storage_options=opts)
    second = rows.table(rows.make(range(10, 20)))
    lance.write_dataset(second, s3.uri, mode="overwrite", storage_options=opts)
    third = rows.table(rows.make(range(20, 25)))
    ll.write_dataset(third, s3.uri, mode="append", storage_options=opts)
    lance.dataset(s3.uri, storage_options=opts).delete("k = 10")
    want = rows.make(k for k in range(11, 25))
    assert len(_data_keys(s3)) == 3

    if cleaner == "lancelet":
        ll.dataset(s3.uri, storage_options=opts).cleanup_old_versions(older_than=timedelta(0))
    else:
        lance.dataset(s3.uri, storage_options=opts).cleanup_old_versions(older_than=timedelta(0))
    _check_history(s3, {4: want})
    # The first version's data file is gone; the live ones remain.
    assert _data_keys(s3) == _referenced(s3)
    assert len(_data_keys(s3)) == 2
    manifests = [k for k in s3.objects("ds/_versions/") if k.endswith(".manifest")]
    assert len(manifests) == 1

    # Both libraries keep writing after the cleanup.
    ll.write_dataset(rows.table(rows.make([100])), s3.uri, mode="append", storage_options=opts)
    _check_history(s3, {4: want, 5: {**want, **rows.make([100])}})


@pytest.mark.parametrize("name", ["a b", "a%20b", "a%2520b", "x%C3%BC"])
def test_percent_encoded_paths_name_the_same_keys(s3: S3Place, name: str) -> None:
    # pylance percent-decodes the path of an object-store URI; lancelet must find the
    # same keys, whichever library wrote the dataset.
    opts = s3.options
    table = rows.table(rows.make(range(3)))
    lance.write_dataset(table, f"s3://{s3.bucket}/py/{name}/ds", storage_options=opts)
    ll.write_dataset(table, f"s3://{s3.bucket}/ll/{name}/ds", storage_options=opts)
    prefixes = {k.split("/ds/")[0] for k in s3.objects()}
    assert {p.removeprefix("py/") for p in prefixes if p.startswith("py/")} == {
        p.removeprefix("ll/") for p in prefixes if p.startswith("ll/")
    }
    for writer in ("py", "ll"):
        uri = f"s3://{s3.bucket}/{writer}/{name}/ds"
        assert ll.dataset(uri, storage_options=opts).to_table().equals(table)
        assert lance.dataset(uri, storage_options=opts).to_table().equals(table)


def test_fragments_written_apart_and_committed(s3: S3Place) -> None:
    opts = s3.options
    first = rows.make(range(5))
    ll.write_dataset(rows.table(first), s3.uri, storage_options=opts)
    more = rows.make(range(5, 12), "frag")
    fragments = ll.fragment.write_fragments(
        rows.table(more), s3.uri, max_rows_per_file=4, storage_options=opts
    )
    assert len(fragments) == 2
    ll.LanceDataset.commit(
        s3.uri, ll.LanceOperation.Append(fragments), read_version=1, storage_options=opts
    )
    extra = rows.make([50], "single")
    fragment = ll.LanceFragment.create(s3.uri, rows.table(extra), storage_options=opts)
    ll.LanceDataset.commit(
        s3.uri, ll.LanceOperation.Append([fragment]), read_version=2, storage_options=opts
    )
    _check_history(s3, {1: first, 2: {**first, **more}, 3: {**first, **more, **extra}})


def test_data_written_by_each_reads_the_same(
    s3: S3Place, capfd: pytest.CaptureFixture[str]
) -> None:
    # A table with nested and nullable columns, written by each library to S3.
    table = pa.table(
        {
            "k": pa.array(range(300), pa.int64()),
            "tags": pa.array([[i % 3] * (i % 4) for i in range(300)], pa.list_(pa.int32())),
            "pt": pa.array(
                [None if i % 7 == 0 else {"x": i / 2, "y": f"p{i}"} for i in range(300)],
                pa.struct([("x", pa.float64()), ("y", pa.string())]),
            ),
        }
    )
    opts = s3.options
    ours = f"s3://{s3.bucket}/ours"
    theirs = f"s3://{s3.bucket}/theirs"
    ll.write_dataset(table, ours, max_rows_per_file=128, storage_options=opts)
    lance.write_dataset(
        table,
        theirs,
        max_rows_per_file=128,
        data_storage_version=STORAGE_VERSION,
        storage_options=opts,
    )
    for uri in (ours, theirs):
        assert lance.dataset(uri, storage_options=opts).to_table().equals(table)
        assert ll.dataset(uri, storage_options=opts).to_table().equals(table)
        got = ll.dataset(uri, storage_options=opts).to_table(filter="k >= 290", columns=["k"])
        assert got.column("k").to_pylist() == list(range(290, 300))
    # Bytes fetched from S3 are placed as aligned as a memory map's: Arrow's compute
    # engine, which filters use, warned of unaligned buffers before.
    assert "poorly aligned" not in capfd.readouterr().err
