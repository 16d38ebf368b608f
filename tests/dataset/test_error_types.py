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
    TypeError,
    ValueError,
    OSError,
    RuntimeError,
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
    "corrupt manifest": _corrupt_manifest,
    "corrupt data file": _corrupt_data_file,
    "missing data file": _missing_data_file,
    "incompatible concurrent commit": _incompatible_commit,
}

# Failures where lancelet deliberately raises another class than pylance's builtin.
DIFFERENCES: dict[str, tuple[Call, str]] = {
    # pylance raises OSError here but ValueError for the same unknown column in
    # drop_columns and columns=; lancelet's schema errors are ValueErrors throughout,
    # and making SchemaError an OSError would let the I/O handlers that turn an OSError
    # into a corrupt-file error swallow schema mistakes.
    "renaming an unknown column": (
        lambda lib, uri: lib.dataset(uri).alter_columns({"path": "zz", "name": "q"}),
        "same SchemaError as drop_columns, a ValueError",
    ),
    "adding an existing column": (
        lambda lib, uri: lib.dataset(uri).add_columns({"a": "a + 1"}),
        "same SchemaError as the other column checks, a ValueError",
    ),
    # A wrong argument type is a TypeError in lancelet, as Python's own calls raise;
    # pylance's OSError comes from its Rust binding and says nothing about I/O.
    "version of the wrong type": (
        lambda lib, uri: lib.dataset(uri, version=1.5),
        "TypeError",
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
    except Exception as exc:
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


@pytest.mark.parametrize("case", list(DIFFERENCES))
def test_documented_differences(copies: tuple[Path, Path], case: str) -> None:
    """The differences are still differences: once pylance agrees, move the case up."""
    theirs_uri, ours_uri = copies
    call, _reason = DIFFERENCES[case]
    theirs = _failure(lance, theirs_uri, call)
    ours = _failure(ll, ours_uri, call)
    assert not isinstance(ours, builtin_of(theirs))
    assert isinstance(ours, (ValueError, TypeError))
