"""The API boundary: every pylance keyword is honoured, ignored only when it tunes speed,
or refused; wrong argument types and values fail up front naming the argument; URIs
lancelet cannot serve are refused; datasets lancelet cannot write to are left alone;
datasets and fragments pickle."""

from __future__ import annotations

import inspect
import pickle
import re
import struct
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import lance.fragment
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import table_pb2
from lancelet.dataset.core.options import PYLANCE_KEYWORDS, TUNING
from lancelet.errors import (
    ArgumentError,
    UnsupportedOptionError,
    UnsupportedVersionError,
    URIError,
)
from tests.dataset.util import keyed_table, snapshot
from tests.storage import list_names, present, read_file, write_file

TABLE = keyed_table(0, 50)


@pytest.fixture
def ds(tmp_path: Path) -> ll.LanceDataset:
    return ll.write_dataset(TABLE, tmp_path / "ds", max_rows_per_file=20)


# -- every keyword of the pylance-named API ----------------------------------------------

# (pylance's callable, lancelet's callable, the name lancelet's option table uses)
SIGNATURES = [
    (lance.dataset, ll.dataset, "dataset"),
    (lance.write_dataset, ll.write_dataset, "write_dataset"),
    (lance.fragment.write_fragments, ll.fragment.write_fragments, "write_fragments"),
    (lance.LanceDataset.commit, ll.LanceDataset.commit, "LanceDataset.commit"),
    (lance.LanceDataset.scanner, ll.LanceDataset.scanner, "scanner"),
    (lance.LanceDataset.to_table, ll.LanceDataset.to_table, "scanner"),
    (lance.LanceDataset.to_batches, ll.LanceDataset.to_batches, "scanner"),
    (lance.LanceDataset.add_columns, ll.LanceDataset.add_columns, "add_columns"),
    (lance.LanceDataset.insert, ll.LanceDataset.insert, "write_dataset"),
    (lance.LanceDataset.sample, ll.LanceDataset.sample, "sample"),
    (lance.LanceDataset.take, ll.LanceDataset.take, "take"),
    (lance.LanceDataset.drop, ll.LanceDataset.drop, "drop"),
    (
        lance.LanceDataset.cleanup_old_versions,
        ll.LanceDataset.cleanup_old_versions,
        "cleanup_old_versions",
    ),
    (lance.LanceFragment.create, ll.LanceFragment.create, "LanceFragment.create"),
    (lance.LanceFragment.scanner, ll.LanceFragment.scanner, "scanner"),
    (lance.LanceFragment.to_table, ll.LanceFragment.to_table, "scanner"),
    (lance.LanceFragment.to_batches, ll.LanceFragment.to_batches, "scanner"),
]


def _parameters(fn: Callable[..., Any]) -> set[str]:
    return {
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and name != "self"
    }


@pytest.mark.parametrize(
    ("theirs", "ours", "call"),
    SIGNATURES,
    # Named, not by their reprs: a function's repr holds its address, which differs
    # between the processes that collect the tests.
    ids=lambda x: getattr(x, "__qualname__", str(x)),
)
def test_every_pylance_keyword_is_known(
    theirs: Callable[..., Any], ours: Callable[..., Any], call: str
) -> None:
    """A keyword is a parameter of ours, a tuning knob, or in the table of keywords that
    are refused unless given their default; none can fall through unseen."""
    known = _parameters(ours) | set(PYLANCE_KEYWORDS.get(call, ())) | TUNING
    if call == "scanner":
        known |= _parameters(ll.LanceDataset.scanner)
    missing = sorted(_parameters(theirs) - known - {"data_obj", "kwargs"})
    assert not missing, f"{call}: pylance keywords lancelet does not account for: {missing}"


REFUSED_SCAN_OPTIONS = [
    {"batch_size_bytes": 1024},
    {"index_segments": ["x"]},
    {"fast_search": True},
    {"blob_handling": "all_binary"},
    {"row_addr_allowlist": b"\x00"},
    {"row_addr_blocklist": b"\x00"},
]


@pytest.mark.parametrize("option", REFUSED_SCAN_OPTIONS, ids=lambda o: next(iter(o)))
def test_scan_options_that_change_results_are_refused(
    ds: ll.LanceDataset, option: dict[str, Any]
) -> None:
    with pytest.raises(UnsupportedOptionError, match=next(iter(option))):
        ds.to_table(**option)
    # A fragment's scans take fewer keywords; the others are TypeErrors there, as in
    # pylance.
    fragment_takes = next(iter(option)) in _parameters(lance.LanceFragment.to_table)
    with pytest.raises(UnsupportedOptionError if fragment_takes else TypeError):
        ds.get_fragments()[0].to_table(**option)


def test_tuning_options_are_accepted_and_change_nothing(ds: ll.LanceDataset) -> None:
    tuned = ds.to_table(
        batch_readahead=2,
        fragment_readahead=1,
        scan_in_order=False,
        io_buffer_size=1 << 20,
        late_materialization=True,
        use_stats=False,
        use_scalar_index=False,
        prefilter=True,
        disable_scoring_autoprojection=True,
    )
    assert tuned.equals(TABLE)


def test_tuning_keywords_belong_to_their_calls(ds: ll.LanceDataset, tmp_path: Path) -> None:
    ll.dataset(ds.uri, index_cache_size=10, block_size=1 << 20)  # pylance's own knobs
    with pytest.raises(TypeError, match="use_scalar_index"):
        ll.write_dataset(TABLE, tmp_path / "x", use_scalar_index=True)
    with pytest.raises(TypeError, match="prefilter"):
        ll.dataset(ds.uri, prefilter=True)


def test_unknown_keywords_are_type_errors(ds: ll.LanceDataset, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="colums"):
        ds.to_table(colums=["k"])  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="overwrite"):
        ll.write_dataset(TABLE, tmp_path / "x", overwrite=True)
    with pytest.raises(TypeError, match="versoin"):
        ll.dataset(ds.uri, versoin=1)
    assert not present(tmp_path / "x")


@pytest.mark.parametrize(
    ("call", "kwargs"),
    [
        ("write_dataset", {"target_all_bases": True}),
        ("write_dataset", {"external_blob_mode": "ingest"}),
        ("commit", {"commit_timeout": timedelta(seconds=1)}),
        ("cleanup_old_versions", {"versions": [1]}),
    ],
)
def test_other_refused_options(
    ds: ll.LanceDataset, tmp_path: Path, call: str, kwargs: dict[str, Any]
) -> None:
    before = snapshot(ds.uri)
    calls: dict[str, Callable[[], Any]] = {
        "dataset": lambda: ll.dataset(ds.uri, **kwargs),
        "write_dataset": lambda: ll.write_dataset(TABLE, ds.uri, mode="append", **kwargs),
        "commit": lambda: ll.LanceDataset.commit(
            ds.uri, ll.LanceOperation.Delete([], [], "k < 0"), ds.version, **kwargs
        ),
        "cleanup_old_versions": lambda: ds.cleanup_old_versions(**kwargs),
        "add_columns": lambda: ds.add_columns({"k2": "k * 2"}, **kwargs),
        "fragment_create": lambda: ll.LanceFragment.create(ds.uri, TABLE, **kwargs),
    }
    with pytest.raises(UnsupportedOptionError, match=next(iter(kwargs))):
        calls[call]()
    assert snapshot(ds.uri) == before


def test_strict_batch_size_gives_exact_batches(ds: ll.LanceDataset, tmp_path: Path) -> None:
    # Fragments of 20 rows and a filter make ragged batches unless told otherwise.
    kwargs: dict[str, Any] = {"filter": "k % 3 <> 0", "batch_size": 7}
    ragged = [b.num_rows for b in ds.to_batches(**kwargs)]
    assert any(n < 7 for n in ragged[:-1])
    strict = list(ds.to_batches(strict_batch_size=True, **kwargs))
    sizes = [b.num_rows for b in strict]
    assert all(n == 7 for n in sizes[:-1]) and 0 < sizes[-1] <= 7
    theirs = lance.write_dataset(TABLE, tmp_path / "p", max_rows_per_file=20)
    want = theirs.to_table(filter="k % 3 <> 0")
    assert pa.Table.from_batches(strict).equals(want)
    their_sizes = [b.num_rows for b in theirs.to_batches(strict_batch_size=True, **kwargs)]
    assert sizes == their_sizes


def test_get_fragments_refuses_a_filter(ds: ll.LanceDataset) -> None:
    with pytest.raises(UnsupportedOptionError, match="filter"):
        ds.get_fragments(filter="k > 5")


# -- argument types and values ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"batch_size": 0}, ArgumentError, "batch_size"),
        ({"batch_size": -3}, ArgumentError, "batch_size"),
        ({"batch_size": "10"}, TypeError, "batch_size"),
        ({"limit": "10"}, TypeError, "limit"),
        ({"limit": 2.5}, TypeError, "limit"),
        ({"limit": True}, TypeError, "limit"),
        ({"limit": -1}, ArgumentError, "limit"),
        ({"offset": -1}, ArgumentError, "offset"),
        ({"with_row_id": "yes"}, TypeError, "with_row_id"),
        ({"filter": 5}, TypeError, "filter"),
        ({"fragments": [1]}, TypeError, "fragments"),
    ],
)
def test_bad_scan_arguments(
    ds: ll.LanceDataset, kwargs: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        list(ds.to_batches(**kwargs))


def test_huge_limits_and_offsets_mean_all_or_nothing(ds: ll.LanceDataset) -> None:
    assert ds.to_table(limit=2**63).equals(TABLE)
    assert ds.to_table(limit=2**70, offset=45).equals(TABLE.slice(45))
    assert ds.to_table(offset=2**64).num_rows == 0


def test_count_rows_refuses_what_pylance_drops(ds: ll.LanceDataset) -> None:
    # pylance's count_rows ignores a limit (counting every row); lancelet refuses it.
    for kwargs in ({"limit": 1}, {"offset": 2}, {"columns": ["k"]}):
        with pytest.raises(UnsupportedOptionError):
            ds.count_rows("k > 1", **kwargs)
    assert ds.count_rows("k > 1") == 48


@pytest.mark.parametrize(
    ("indices", "error"),
    [
        (["a"], TypeError),
        ([1.5], TypeError),
        ([True], TypeError),
        ([1, None], TypeError),
        (pa.array(["1"]), TypeError),
        (pa.array([1, None]), ArgumentError),
        # As pylance: a position its binding cannot convert to 64 unsigned bits is an
        # OverflowError, one past the rows is out of range.
        ([2**70], OverflowError),
        ([2**63], IndexError),
        ([50], IndexError),
        ([-1], OverflowError),
    ],
)
def test_bad_take_indices(ds: ll.LanceDataset, indices: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        ds.take(indices)


def test_take_wants_a_flat_list(ds: ll.LanceDataset) -> None:
    for indices in ([[0, 1]], 1):
        with pytest.raises(TypeError, match="flat"):
            ds.take(indices)


def test_take_accepts_every_integer_kind(ds: ll.LanceDataset) -> None:
    import numpy as np

    want = TABLE.take([3, 1])
    for indices in ([3, 1], np.array([3, 1], np.uint8), pa.array([3, 1], pa.int16()), (3, 1)):
        assert ds.take(indices).equals(want)
    assert ds.take([]).num_rows == 0


@pytest.mark.parametrize(
    ("action", "error", "names"),
    [
        (lambda d: d.update(["v"]), TypeError, "updates"),
        (lambda d: d.update({"v": 1}), TypeError, "updates"),
        (lambda d: d.update_config({"k": 1}), TypeError, "values"),
        (lambda d: d.delete_config_keys("k"), TypeError, "keys"),
        (lambda d: d.cleanup_old_versions(older_than="yesterday"), TypeError, "older_than"),
        (lambda d: d.cleanup_old_versions(retain_versions="2"), TypeError, "retain_versions"),
        (lambda d: d.delete(5), TypeError, "filter"),
    ],
)
def test_bad_arguments_to_changes(
    ds: ll.LanceDataset, action: Callable[[ll.LanceDataset], Any], error: type, names: str
) -> None:
    before = snapshot(ds.uri)
    with pytest.raises(error, match=names):
        action(ds)
    assert snapshot(ds.uri) == before


# -- locations ----------------------------------------------------------------------------


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    ll.write_dataset(TABLE, "~/data/ds")
    assert not present(tmp_path / "~")
    assert lance.dataset(tmp_path / "home" / "data" / "ds").to_table().equals(TABLE)
    assert ll.dataset("~/data/ds").to_table().equals(TABLE)


def test_file_uris(tmp_path: Path) -> None:
    path = tmp_path / "a dir" / "ds"
    ll.write_dataset(TABLE, path.as_uri())  # file:///.../a%20dir/ds
    assert lance.dataset(path).to_table().equals(TABLE)
    assert ll.dataset(f"file://{path}").count_rows() == 50
    with pytest.raises(URIError, match="host"):
        ll.dataset(f"file://elsewhere{path}")


@pytest.mark.parametrize(
    "uri", ["hdfs://n/x", "s3+ddb://bucket/x", "http://host/x", "ftp://h/x", "wasb://c/x"]
)
def test_unknown_schemes_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    monkeypatch.chdir(tmp_path)
    scheme = uri.split(":")[0]
    with pytest.raises(URIError, match=re.escape(f"'{scheme}'")):
        ll.write_dataset(TABLE, uri)
    with pytest.raises(URIError):
        ll.dataset(uri)
    with pytest.raises(URIError):
        ll.fragment.write_fragments(TABLE, uri)
    with pytest.raises(URIError):
        ll.file.LanceFileWriter(uri + "/f.lance", TABLE.schema)
    assert list_names(tmp_path) == []


def test_nul_bytes_in_paths(tmp_path: Path) -> None:
    with pytest.raises(URIError, match="NUL"):
        ll.write_dataset(TABLE, f"{tmp_path}/a\0b")
    with pytest.raises(URIError, match="NUL"):
        ll.file.LanceFileReader(f"{tmp_path}/a\0b.lance")
    with pytest.raises(TypeError):
        ll.dataset(5)  # type: ignore[arg-type]


# -- datasets lancelet cannot add files to ----------------------------------------------


def _without_data_format(uri: Path) -> None:
    """Rewrite the (only) manifest as writers did before the data_format field: the
    same message without it, in the manifest file layout (length-prefixed message, then
    u64 offset, u16 major, u16 minor, b"LANC")."""
    versions = uri / "_versions"
    (name,) = [n for n in list_names(versions) if n.endswith(".manifest")]
    path = versions / name
    data = read_file(path)
    offset = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (length,) = struct.unpack_from("<I", data, offset)
    pb = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
    assert pb.HasField("data_format") and not pb.HasField("index_section")
    pb.ClearField("data_format")
    pb.ClearField("transaction_section")  # it pointed into the bytes left behind
    body = pb.SerializeToString()
    write_file(path, struct.pack("<I", len(body)) + body + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))


@pytest.mark.parametrize("strip_format", [False, True])
def test_legacy_datasets_get_legacy_files(tmp_path: Path, strip_format: bool) -> None:
    """Writes to a legacy (0.1) dataset, one marked so or one from before the mark,
    add legacy files, as pylance's do."""
    uri = tmp_path / "legacy"
    lance.write_dataset(TABLE, uri, data_storage_version="legacy")
    if strip_format:
        _without_data_format(uri)
    assert ll.dataset(uri).data_storage_version == "0.1"
    ll.write_dataset(TABLE, uri, mode="append")
    fragments = ll.fragment.write_fragments(TABLE.slice(0, 5), uri)
    version = ll.dataset(uri).version
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(fragments), read_version=version)
    ll.dataset(uri).add_columns({"k2": "k * 2"})
    ll.dataset(uri).add_columns({"one": "1"})
    ll.dataset(uri).merge(pa.table({"k": pa.array(range(50)), "z": pa.array(range(50))}), "k")
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.data_storage_version == "0.1"
    assert theirs.count_rows() == 105
    assert ll.dataset(uri).to_table().equals(theirs.to_table())
    assert theirs.to_table(columns=["k2", "one", "z"]).slice(50, 3).to_pylist() == [
        {"k2": 0, "one": 1, "z": 0},
        {"k2": 2, "one": 1, "z": 1},
        {"k2": 4, "one": 1, "z": 2},
    ]
    pairs = {(f.file_major_version, f.file_minor_version) for g in theirs.get_fragments()
             for f in g.metadata.files}  # fmt: skip
    assert pairs == {(0, 2)}


def test_newer_format_datasets_get_files_of_their_format(tmp_path: Path) -> None:
    uri = tmp_path / "new"
    lance.write_dataset(TABLE, uri)  # pylance's default format, 2.2
    ll.write_dataset(TABLE, uri, mode="append")
    ll.dataset(uri).add_columns({"one": "1"})
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.data_storage_version == "2.2"
    versions = {
        (f.file_major_version, f.file_minor_version)
        for fragment in ds.get_fragments()
        for f in fragment.metadata.files
    }
    assert versions == {(2, 2)}
    # An overwrite keeps the format, as pylance's does, unless another is named.
    ll.write_dataset(TABLE, uri, mode="overwrite")
    assert lance.dataset(uri).data_storage_version == "2.2"
    assert lance.dataset(uri).to_table().equals(TABLE)
    ll.write_dataset(TABLE, uri, mode="overwrite", data_storage_version="2.0")
    assert lance.dataset(uri).to_table().equals(TABLE)
    assert lance.dataset(uri).data_storage_version == "2.0"


def test_legacy_datasets_are_overwritten_in_their_format(tmp_path: Path) -> None:
    """An overwrite keeps the legacy format unless another is named, as pylance's does."""
    uri = tmp_path / "old"
    lance.write_dataset(TABLE, uri, data_storage_version="legacy")
    ll.write_dataset(TABLE.slice(0, 10), uri, mode="overwrite")
    assert lance.dataset(uri).data_storage_version == "0.1"
    assert lance.dataset(uri).to_table().equals(ll.dataset(uri).to_table())
    assert lance.dataset(uri).to_table(columns=["k"]).equals(TABLE.slice(0, 10).select(["k"]))
    ll.write_dataset(TABLE, uri, mode="overwrite", data_storage_version="2.0")
    assert lance.dataset(uri).data_storage_version == "2.0"
    assert lance.dataset(uri).to_table().equals(TABLE)


def test_a_file_format_lancelet_cannot_read_is_not_called_corrupt(tmp_path: Path) -> None:
    uri = tmp_path / "new"
    lance.write_dataset(TABLE, uri, data_storage_version="2.3")
    assert ll.dataset(uri).count_rows() == TABLE.num_rows
    with pytest.raises(UnsupportedVersionError, match="2.3"):
        ll.dataset(uri).to_table()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_datasets_of_format_2_1_and_2_2_read(tmp_path: Path, version: str) -> None:
    pytest.importorskip("lancelet.file.codecs.rle")  # pylance run-length encodes this table
    uri = tmp_path / "new"
    lance.write_dataset(TABLE, uri, data_storage_version=version)
    assert ll.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


# -- pickling -------------------------------------------------------------------------------


def test_datasets_fragments_and_metadata_pickle(ds: ll.LanceDataset) -> None:
    ds.delete("k % 7 = 0")
    fragment = ds.get_fragments()[0]
    metadata = fragment.metadata
    assert metadata.deletion_file is not None
    again = pickle.loads(pickle.dumps(metadata))
    assert again == metadata
    assert again.to_json() == metadata.to_json()
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.version == ds.version
    assert copy.to_table().equals(ds.to_table())
    assert pickle.loads(pickle.dumps(fragment)).to_table().equals(fragment.to_table())
    ds.delete("k = 1")  # the copy stays at its version
    assert copy.version == ds.version - 1
    assert pickle.loads(pickle.dumps(copy)).count_rows() == copy.count_rows()
