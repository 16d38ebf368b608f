"""lancelet's errors are caught by the builtin class pylance raises for the same failure.

Each case runs one failing call on pylance and on lancelet (each on its own copy of the
same pylance-written dataset).  The most specific builtin that pylance's exception is
an instance of must also catch lancelet's, and lancelet's must still be a
LanceletError, so code written for either library keeps working.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import LanceletError
from tests.storage import list_names, write_file

# Each case copies one pylance-written dataset for each library with shutil.
pytestmark = pytest.mark.local_files("copies datasets with shutil for both libraries")

# Most specific first: a FileNotFoundError is an OSError, a NotImplementedError a
# RuntimeError.
BUILTINS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    NotImplementedError,
    KeyError,
    IndexError,
    OverflowError,
    TypeError,
    ValueError,
    OSError,
    RuntimeError,
    AttributeError,
    # pylance's Rust panics (pyo3's PanicException derives from BaseException).
    BaseException,
)

TABLE = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})


def builtin_of(exc: BaseException) -> type[BaseException]:
    for cls in BUILTINS:
        if isinstance(exc, cls):
            return cls
    raise AssertionError(f"{type(exc).__mro__} derives from none of {BUILTINS}")


Call = Callable[[ModuleType, Path], Any]


def _corrupt_manifest(lib: ModuleType, uri: Path) -> Any:
    versions = uri / "_versions"
    for name in list_names(versions):
        if name.endswith(".manifest"):
            write_file(versions / name, b"garbage" * 10)
    return lib.dataset(uri)


def _corrupt_data_file(lib: ModuleType, uri: Path) -> Any:
    for name in list_names(uri / "data"):
        write_file(uri / "data" / name, b"garbage" * 10)
    return lib.dataset(uri).to_table()


def _missing_data_file(lib: ModuleType, uri: Path) -> Any:
    for name in list_names(uri / "data"):
        (uri / "data" / name).unlink()
    return lib.dataset(uri).to_table()


def _duplicate_tag(lib: ModuleType, uri: Path) -> Any:
    ds = lib.dataset(uri)
    ds.tags.create("t", 1)
    return ds.tags.create("t", 1)


def _duplicate_index(lib: ModuleType, uri: Path) -> Any:
    ds = lib.dataset(uri)
    ds.create_scalar_index("a", "BTREE", name="ia")
    return ds.create_scalar_index("a", "BTREE", name="ia", replace=False)


def _incompatible_commit(lib: ModuleType, uri: Path) -> Any:
    lib.dataset(uri).delete("a = 1")
    lib.LanceDataset.commit(uri, lib.LanceOperation.Restore(1), read_version=2)
    # A delete read at version 1 loses to the restore committed since.
    return lib.LanceDataset.commit(uri, lib.LanceOperation.Delete([], [], "a = 3"), read_version=1)


SOURCE = pa.table({"a": [2, 4], "b": ["q", "w"]})


def _merge(lib: ModuleType, uri: Path) -> Any:
    return lib.dataset(uri).merge_insert("a")


def _lists(lib: ModuleType, uri: Path) -> Any:
    """A dataset beside the shared one with a list and a string column."""
    return lib.write_dataset(
        pa.table({"l": [[1], [2, 3]], "s": ["p", "q"]}), uri.parent / "lists", mode="overwrite"
    )


def _nulls_made_required(lib: ModuleType, uri: Path) -> Any:
    ds = lib.dataset(uri)
    ds.update({"b": "NULL"}, where="a = 1")
    return ds.alter_columns({"path": "b", "nullable": False})


def _required_column_left_unmatched(lib: ModuleType, uri: Path) -> Any:
    schema = pa.schema([("a", pa.int64()), pa.field("x", pa.int64(), nullable=False)])
    return lib.dataset(uri).merge(pa.table({"a": [1], "x": [2]}, schema=schema), "a")


def _checkout_missing_tag(lib: ModuleType, uri: Path) -> Any:
    return lib.dataset(uri).checkout_version("nosuch")


CASES: dict[str, Call] = {
    "missing dataset": lambda lib, uri: lib.dataset(uri.parent / "nowhere"),
    "missing version": lambda lib, uri: lib.dataset(uri, version=99),
    "checkout of a missing version": lambda lib, uri: lib.dataset(uri).checkout_version(99),
    "missing tag": lambda lib, uri: lib.dataset(uri, version="nosuch"),
    "deleting a missing tag": lambda lib, uri: lib.dataset(uri).tags.delete("nosuch"),
    "duplicate tag": _duplicate_tag,
    "tag of a missing version": lambda lib, uri: lib.dataset(uri).tags.create("t", 99),
    "create onto a dataset": lambda lib, uri: lib.write_dataset(TABLE, uri, mode="create"),
    "filter that does not parse": lambda lib, uri: lib.dataset(uri).to_table(filter="a >>> 1"),
    "unknown column in a filter": lambda lib, uri: lib.dataset(uri).to_table(filter="zz > 1"),
    "unknown column in columns=": lambda lib, uri: lib.dataset(uri).to_table(columns=["zz"]),
    "dropping an unknown column": lambda lib, uri: lib.dataset(uri).drop_columns(["zz"]),
    "unknown merge_insert key": lambda lib, uri: (
        lib.dataset(uri).merge_insert("zz").when_matched_update_all().execute(TABLE)
    ),
    "dropping a missing index": lambda lib, uri: lib.dataset(uri).drop_index("nosuch"),
    "duplicate index name": _duplicate_index,
    "indexing an unknown column": lambda lib, uri: lib.dataset(uri).create_scalar_index(
        "zz", "BTREE"
    ),
    "unknown index type": lambda lib, uri: lib.dataset(uri).create_scalar_index("b", "NOPE"),
    "take out of range": lambda lib, uri: lib.dataset(uri).take([100]),
    "append with other columns": lambda lib, uri: lib.write_dataset(
        pa.table({"q": [1.0]}), uri, mode="append"
    ),
    "append with another type": lambda lib, uri: lib.write_dataset(
        pa.table({"a": ["s"], "b": ["x"]}), uri, mode="append"
    ),
    # Filters and SQL: pylance's OSError in these calls, ValueError in scans.
    "count_rows filter that does not parse": lambda lib, uri: lib.dataset(uri).count_rows(
        "a >>> 1"
    ),
    "count_rows unknown column": lambda lib, uri: lib.dataset(uri).count_rows("zz > 1"),
    "count_rows filter of mismatched types": lambda lib, uri: lib.dataset(uri).count_rows("b > 1"),
    "count_rows filter that is not boolean": lambda lib, uri: lib.dataset(uri).count_rows("a + 1"),
    "delete filter that does not parse": lambda lib, uri: lib.dataset(uri).delete("a >>> 1"),
    "delete unknown column": lambda lib, uri: lib.dataset(uri).delete("zz = 1"),
    "delete empty filter": lambda lib, uri: lib.dataset(uri).delete(""),
    "fragment count_rows bad filter": lambda lib, uri: (
        lib.dataset(uri).get_fragments()[0].count_rows("a >>> 1")
    ),
    "fragment delete bad filter": lambda lib, uri: (
        lib.dataset(uri).get_fragments()[0].delete("a >>> 1")
    ),
    "filter of mismatched types in a scan": lambda lib, uri: lib.dataset(uri).to_table(
        filter="b > 1"
    ),
    "update where that does not parse": lambda lib, uri: lib.dataset(uri).update(
        {"a": "1"}, where="a >>> 1"
    ),
    "update expression that does not parse": lambda lib, uri: lib.dataset(uri).update(
        {"a": "a >>> 1"}
    ),
    "update of an unknown column": lambda lib, uri: lib.dataset(uri).update({"zz": "1"}),
    "merge_insert condition that does not parse": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all("a >>> 1").execute(SOURCE)
    ),
    "merge_insert condition on an unknown column": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all("target.zz > 1").execute(SOURCE)
    ),
    "merge_insert condition of mismatched types": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all("source.b > 1").execute(SOURCE)
    ),
    "merge_insert delete condition that does not parse": lambda lib, uri: (
        _merge(lib, uri).when_not_matched_by_source_delete("a >>> 1").execute(SOURCE)
    ),
    "add_columns SQL that does not parse": lambda lib, uri: lib.dataset(uri).add_columns(
        {"x": "a >>> 1"}
    ),
    "add_columns SQL on an unknown column": lambda lib, uri: lib.dataset(uri).add_columns(
        {"x": "zz + 1"}
    ),
    # merge_insert data and matches.
    "merge_insert data with an extra column": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all().execute(pa.table({"a": [2], "x": [1]}))
    ),
    "merge_insert data of another type": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all().execute(pa.table({"a": [2], "b": [1]}))
    ),
    "merge_insert key of another type": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all().execute(pa.table({"a": ["2"], "b": ["q"]}))
    ),
    "merge_insert key missing from the data": lambda lib, uri: (
        lib.dataset(uri).merge_insert("b").when_matched_update_all().execute(pa.table({"a": [2]}))
    ),
    "merge_insert with duplicate keys": lambda lib, uri: (
        _merge(lib, uri).when_matched_update_all().execute(pa.table({"a": [2, 2], "b": ["q", "w"]}))
    ),
    "merge_insert match under when_matched_fail": lambda lib, uri: (
        _merge(lib, uri).when_matched_fail().when_not_matched_insert_all().execute(SOURCE)
    ),
    "merge_insert without keys": lambda lib, uri: (
        lib.dataset(uri).merge_insert().when_matched_update_all().execute(SOURCE)
    ),
    "merge_insert that changes nothing": lambda lib, uri: _merge(lib, uri).execute(SOURCE),
    "merge_insert negative conflict_retries": lambda lib, uri: _merge(lib, uri).conflict_retries(
        -1
    ),
    # Schema changes.
    "renaming an unknown column": lambda lib, uri: lib.dataset(uri).alter_columns(
        {"path": "zz", "name": "q"}
    ),
    "renaming onto an existing column": lambda lib, uri: lib.dataset(uri).alter_columns(
        {"path": "a", "name": "b"}
    ),
    "impossible cast": lambda lib, uri: lib.dataset(uri).alter_columns(
        {"path": "b", "data_type": pa.int64()}
    ),
    "nulls in a column made non-nullable": _nulls_made_required,
    "adding an existing column": lambda lib, uri: lib.dataset(uri).add_columns({"a": "a + 1"}),
    "adding a column twice": lambda lib, uri: lib.dataset(uri).add_columns(
        pa.table([[1, 2, 3], [4, 5, 6]], names=["x", "x"])
    ),
    "merge on an unknown column": lambda lib, uri: lib.dataset(uri).merge(
        pa.table({"zz": [1], "x": [2]}), "zz"
    ),
    "merge on an unknown data column": lambda lib, uri: lib.dataset(uri).merge(
        pa.table({"a": [1], "x": [2]}), "a", "q"
    ),
    "merge keys of different types": lambda lib, uri: lib.dataset(uri).merge(
        pa.table({"a": ["1"], "x": [2]}), "a"
    ),
    "merge of an existing column": lambda lib, uri: lib.dataset(uri).merge(
        pa.table({"a": [1], "b": ["2"]}), "a"
    ),
    "merge leaving a required column unmatched": _required_column_left_unmatched,
    # Row positions and versions (pylance's binding cannot convert negative numbers).
    "take of a negative row": lambda lib, uri: lib.dataset(uri).take([-1]),
    "take of a row beyond 64 bits": lambda lib, uri: lib.dataset(uri).take([2**70]),
    "_take_rows of a negative id": lambda lib, uri: lib.dataset(uri)._take_rows([-1]),
    "negative version": lambda lib, uri: lib.dataset(uri, version=-1),
    "version beyond 64 bits": lambda lib, uri: lib.dataset(uri, version=2**70),
    "checkout of a negative version": lambda lib, uri: lib.dataset(uri).checkout_version(-1),
    "checkout of a missing tag": _checkout_missing_tag,
    "tag of a negative version": lambda lib, uri: lib.dataset(uri).tags.create("t", -1),
    "tag with an invalid name": lambda lib, uri: lib.dataset(uri).tags.create("bad name!", 1),
    "negative conflict_retries": lambda lib, uri: lib.dataset(uri).delete(
        "a = 1", conflict_retries=-1
    ),
    "negative retain_versions": lambda lib, uri: lib.dataset(uri).cleanup_old_versions(
        retain_versions=-1
    ),
    "negative target_rows_per_fragment": lambda lib, uri: lib.dataset(uri).optimize.compact_files(
        target_rows_per_fragment=-1
    ),
    "negative max_rows_per_file": lambda lib, uri: lib.write_dataset(
        TABLE, uri.parent / "other", max_rows_per_file=-1
    ),
    # Writes.
    "unknown data_storage_version": lambda lib, uri: lib.write_dataset(
        TABLE, uri.parent / "other", data_storage_version="9.9"
    ),
    "append with an extra column": lambda lib, uri: lib.write_dataset(
        pa.table({"a": [1], "b": ["x"], "q": [1]}), uri, mode="append"
    ),
    # Index types that do not suit the column.
    "BTREE on a list column": lambda lib, uri: _lists(lib, uri).create_scalar_index("l", "BTREE"),
    "BITMAP on a list column": lambda lib, uri: _lists(lib, uri).create_scalar_index("l", "BITMAP"),
    "BLOOMFILTER on a list column": lambda lib, uri: _lists(lib, uri).create_scalar_index(
        "l", "BLOOMFILTER"
    ),
    "LABEL_LIST on a string column": lambda lib, uri: _lists(lib, uri).create_scalar_index(
        "s", "LABEL_LIST"
    ),
    "NGRAM on a list column": lambda lib, uri: _lists(lib, uri).create_scalar_index("l", "NGRAM"),
    "corrupt manifest": _corrupt_manifest,
    "corrupt data file": _corrupt_data_file,
    "missing data file": _missing_data_file,
    "incompatible concurrent commit": _incompatible_commit,
}

# Failures where lancelet deliberately raises another class than pylance's builtin.
DIFFERENCES: dict[str, tuple[Call, str]] = {
    # A wrong argument type is a TypeError in lancelet, as Python's own calls raise;
    # pylance's OSError comes from its Rust binding and says nothing about I/O.
    "version of the wrong type": (
        lambda lib, uri: lib.dataset(uri, version=1.5),
        "TypeError",
    ),
    "filter of the wrong type": (
        lambda lib, uri: lib.dataset(uri).to_table(filter=5),
        "TypeError; pylance fails with an AttributeError inside its scanner",
    ),
    "fragment id that does not exist": (
        lambda lib, uri: lib.LanceFragment(lib.dataset(uri), 99),
        "ValueError naming the fragment; pylance fails with an AttributeError on None",
    ),
    "take of an unknown column": (
        lambda lib, uri: lib.dataset(uri).take([0], columns=["zz"]),
        "SchemaError (a ValueError, as columns= in scans); pylance's Rust code panics",
    ),
    "merge of data holding only the key": (
        lambda lib, uri: lib.dataset(uri).merge(pa.table({"a": [1]}), "a"),
        "SchemaError saying so; pylance's RuntimeError says only 'Task was aborted'",
    ),
    "zero max_rows_per_file": (
        lambda lib, uri: lib.write_dataset(TABLE, uri.parent / "other", max_rows_per_file=0),
        "ArgumentError; pylance's Rust code panics dividing by zero",
    ),
}


@pytest.fixture()
def copies(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "base"
    lance.write_dataset(TABLE, base)
    theirs, ours = tmp_path / "theirs" / "ds", tmp_path / "ours" / "ds"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    return theirs, ours


def _failure(lib: ModuleType, uri: Path, call: Call) -> BaseException:
    try:
        call(lib, uri)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # pylance's panics derive from BaseException
        return exc
    raise AssertionError(f"{lib.__name__}: the call did not fail")


@pytest.mark.parametrize("case", list(CASES))
def test_pylance_builtin_catches_lancelet_error(copies: tuple[Path, Path], case: str) -> None:
    theirs_uri, ours_uri = copies
    theirs = _failure(lance, theirs_uri, CASES[case])
    ours = _failure(ll, ours_uri, CASES[case])
    want = builtin_of(theirs)
    assert isinstance(ours, want), (
        f"pylance raised {type(theirs).__name__} ({want.__name__}); "
        f"lancelet raised {type(ours).__mro__}"
    )
    assert isinstance(ours, LanceletError)


# Arguments of the wrong type: a plain TypeError in both libraries (lancelet's checks
# at the API boundary raise Python's own, see lancelet.dataset.core.arguments).
WRONG_TYPES: dict[str, Call] = {
    "take of string positions": lambda lib, uri: lib.dataset(uri).take(["a"]),
    "take of float positions": lambda lib, uri: lib.dataset(uri).take([1.5]),
    "take of one position": lambda lib, uri: lib.dataset(uri).take(1),
    "columns as a string": lambda lib, uri: lib.dataset(uri).to_table(columns="a"),
    "with_row_id not a bool": lambda lib, uri: lib.dataset(uri).to_table(with_row_id="yes"),
    "delete predicate not a string": lambda lib, uri: lib.dataset(uri).delete(5),
    "config value not a string": lambda lib, uri: lib.dataset(uri).update_config({"k": 1}),
    "num_indices_to_merge not an integer": lambda lib, uri: lib.dataset(
        uri
    ).optimize.optimize_indices(num_indices_to_merge="2"),
    "retry_timeout not a timedelta": lambda lib, uri: lib.dataset(uri).delete(
        "a = 2", retry_timeout=5
    ),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_wrong_argument_types(copies: tuple[Path, Path], case: str) -> None:
    theirs_uri, ours_uri = copies
    assert isinstance(_failure(lance, theirs_uri, WRONG_TYPES[case]), TypeError)
    assert isinstance(_failure(ll, ours_uri, WRONG_TYPES[case]), TypeError)


@pytest.mark.parametrize("case", list(DIFFERENCES))
def test_documented_differences(copies: tuple[Path, Path], case: str) -> None:
    """The differences are still differences: once pylance agrees, move the case up."""
    theirs_uri, ours_uri = copies
    call, _reason = DIFFERENCES[case]
    theirs = _failure(lance, theirs_uri, call)
    ours = _failure(ll, ours_uri, call)
    if isinstance(theirs, Exception):
        assert not isinstance(ours, builtin_of(theirs))
    else:  # a panic: pylance's Rust code gave up, no exception class was chosen
        assert isinstance(ours, LanceletError)
    assert isinstance(ours, (ValueError, TypeError))
