"""``data_storage_version`` names: every name pylance accepts means what it means to
pylance; a version lancelet cannot write yet, and an unknown name, raise
``UnsupportedVersionError`` naming it.  The Spark writer's options take the same path."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedVersionError
from lancelet.file import version as file_version
from tests.storage import present

TABLE = pa.table({"k": pa.array(range(10), pa.int64()), "s": [f"v{i}" for i in range(10)]})

# pylance 14's names, in the case users write them and in others.
NAMES = [
    "legacy",
    "LEGACY",
    "0.1",
    "2.0",
    "0.3",
    "2.1",
    "2.2",
    "stable",
    "Stable",
    "next",
    "NEXT",
    "2.3",
]
UNKNOWN = ["3.0", "2.9", "1.0", "latest", "v2.0", ""]


@pytest.fixture(scope="module")
def pylance_meaning(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The format version of the dataset pylance writes for each name."""
    root = tmp_path_factory.mktemp("names")
    found = {}
    for i, name in enumerate(NAMES):
        ds = lance.write_dataset(TABLE, root / str(i), data_storage_version=name)
        found[name] = ds.data_storage_version
    return found


@pytest.mark.parametrize("name", NAMES)
def test_names_mean_what_they_mean_to_pylance(name: str, pylance_meaning: dict[str, str]) -> None:
    assert file_version.by_name(name).name == pylance_meaning[name]


@pytest.mark.parametrize("name", NAMES)
def test_writes_in_each_named_version(
    name: str, pylance_meaning: dict[str, str], tmp_path: Path
) -> None:
    """A version lancelet writes is written (and pylance reads it as that version); any
    other is refused, naming both the name given and the version it means."""
    uri = tmp_path / "ds"
    meaning = pylance_meaning[name]
    if file_version.VERSIONS[meaning].writable:
        ll.write_dataset(TABLE, uri, data_storage_version=name)
        theirs = lance.dataset(uri)
        assert theirs.data_storage_version == meaning
        assert theirs.to_table().equals(TABLE)
        return
    with pytest.raises(UnsupportedVersionError) as caught:
        ll.write_dataset(TABLE, uri, data_storage_version=name)
    assert repr(name) in str(caught.value) and meaning in str(caught.value)
    assert not present(uri)


@pytest.mark.parametrize("name", UNKNOWN)
def test_unknown_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="(?i)version"):
        lance.write_dataset(TABLE, tmp_path / "theirs", data_storage_version=name)
    with pytest.raises(UnsupportedVersionError, match=f"unknown .*{name!r}"):
        ll.write_dataset(TABLE, tmp_path / "ours", data_storage_version=name)
    assert not present(tmp_path / "ours")


@pytest.mark.parametrize("name", NAMES + UNKNOWN)
def test_spark_write_options_use_the_same_names(name: str, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from lancelet.spark.options import write_options

    options = {"path": str(tmp_path / "ds"), "data_storage_version": name}
    try:
        expected = file_version.writable(name)
    except UnsupportedVersionError as exc:
        with pytest.raises(UnsupportedVersionError) as caught:
            write_options(options)
        assert str(caught.value) == str(exc)
        with pytest.raises(UnsupportedVersionError):
            write_options(options, streaming=True)
        return
    assert expected.writable
    assert write_options(options).data_storage_version == name
