"""Tags written by lancelet and read by pylance, and the other way round."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timezone
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lancelet.dataset.versions.tags import Tags, format_rfc3339, parse_rfc3339, resolve_version
from lancelet.errors import TagError, VersionNotFoundError
from lancelet.transaction.store import DatasetStore
from tests.dataset.conftest import History
from tests.storage import read_file, write_file
from tests.versions import STORAGE_VERSION

# Pylance's layout with the values blanked out.
_SHAPE = re.compile(
    r'\{\n  "branch": null,\n  "version": \d+,\n  "createdAt": "[^"]+",\n'
    r'  "updatedAt": "[^"]+",\n  "manifestSize": \d+,\n  "metadata": \{\}\n\}'
)


@pytest.fixture
def uri(history: History, tmp_path: Path) -> Path:
    return history.copy(tmp_path / "ds")


@pytest.fixture
def tags(uri: Path) -> Tags:
    return Tags(DatasetStore(uri))


def _tag_file(uri: Path, name: str) -> str:
    return read_file(uri / "_refs" / "tags" / f"{name}.json").decode()


def test_created_tag_is_seen_by_pylance(uri: Path, tags: Tags, history: History) -> None:
    tags.create("v3", 3)
    listed = lance.dataset(uri).tags.list()
    assert listed == tags.list()
    assert listed["v3"]["version"] == 3
    assert lance.dataset(uri, version="v3").to_table().equals(history.tables[3])
    assert lance.dataset(uri).tags.get_version("v3") == 3


def test_tag_file_has_pylance_bytes_layout(uri: Path, tags: Tags) -> None:
    tags.create("mine", 4)
    lance.dataset(uri).tags.create("theirs", 4)
    mine, theirs = _tag_file(uri, "mine"), _tag_file(uri, "theirs")
    assert _SHAPE.fullmatch(mine), mine
    assert _SHAPE.fullmatch(theirs), theirs
    mine_doc, theirs_doc = json.loads(mine), json.loads(theirs)
    assert mine_doc["manifestSize"] == theirs_doc["manifestSize"]
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z", mine_doc["createdAt"]
    )


def test_pylance_tags_are_listed_identically(uri: Path, tags: Tags) -> None:
    ds = lance.dataset(uri)
    ds.tags.create("a", 1)
    ds.tags.create("b", "a")
    ds.tags.create("c", 7)
    ds.tags.update("c", 8)
    assert tags.list() == ds.tags.list()
    assert list(tags.list()) == ["a", "b", "c"]
    assert tags.get_version("b") == 1


def test_create_from_tag_and_update(uri: Path, tags: Tags) -> None:
    tags.create("first", 2)
    tags.create("second", "first")
    created = json.loads(_tag_file(uri, "second"))["createdAt"]
    tags.update("second", 9)
    assert tags.get_version("second") == 9
    doc = json.loads(_tag_file(uri, "second"))
    assert doc["createdAt"] == created
    assert parse_rfc3339(doc["updatedAt"]) >= parse_rfc3339(created)
    assert lance.dataset(uri).tags.list()["second"]["version"] == 9
    tags.update("second", "first")
    assert lance.dataset(uri).tags.get_version("second") == 2


def test_update_keeps_pylance_created_at_exactly(uri: Path, tags: Tags) -> None:
    lance.dataset(uri).tags.create("old", 1)
    path = uri / "_refs" / "tags" / "old.json"
    doc = json.loads(read_file(path))
    doc["createdAt"] = "2026-01-01T00:00:00Z"
    write_file(path, json.dumps(doc, indent=2).encode())
    tags.update("old", 5)
    assert json.loads(read_file(path))["createdAt"] == "2026-01-01T00:00:00Z"
    entry = lance.dataset(uri).tags.list()["old"]
    assert entry["created_at"] == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert entry["version"] == 5


def test_delete(uri: Path, tags: Tags) -> None:
    tags.create("gone", 1)
    tags.delete("gone")
    assert tags.list() == {}
    assert lance.dataset(uri).tags.list() == {}
    with pytest.raises(TagError, match="'gone' does not exist"):
        tags.delete("gone")
    lance.dataset(uri).tags.create("theirs", 2)
    tags.delete("theirs")
    assert lance.dataset(uri).tags.list() == {}


def test_errors_name_the_tag_or_version(tags: Tags) -> None:
    tags.create("t", 1)
    with pytest.raises(TagError, match="'t' already exists"):
        tags.create("t", 2)
    with pytest.raises(VersionNotFoundError, match="version 99"):
        tags.create("u", 99)
    with pytest.raises(VersionNotFoundError, match="version 0"):
        tags.create("u", 0)
    with pytest.raises(TagError, match="'nope' does not exist"):
        tags.create("u", "nope")
    with pytest.raises(TagError, match="'nope' does not exist"):
        tags.update("nope", 1)
    with pytest.raises(TagError, match="'nope' does not exist"):
        tags.get_version("nope")
    with pytest.raises(VersionNotFoundError, match="version 99"):
        tags.update("t", 99)
    assert tags.get_version("t") == 1
    assert list(tags.list()) == ["t"]


NAMES = ["", "a b", "a/b", "../x", ".a", "a.", "a..b", "a.lock", "a@b", "a~", "a:b", "a*"]
NAMES += ["-a", "_a", "1", "ab.json", "a.lock.x", "A.B-c_d", "HEAD", "x" * 211, "x" * 212]


@pytest.mark.parametrize("name", NAMES, ids=lambda n: n[:12] or "empty")
def test_names_accepted_exactly_as_pylance(uri: Path, tags: Tags, name: str) -> None:
    try:
        lance.dataset(uri).tags.create(name, 1)
        pylance_ok = True
    except (OSError, ValueError):
        pylance_ok = False
    if pylance_ok:
        assert tags.get_version(name) == 1
        tags.delete(name)
        tags.create(name, 1)
        assert lance.dataset(uri).tags.get_version(name) == 1
    else:
        with pytest.raises(TagError, match="invalid tag name"):
            tags.create(name, 1)
        assert tags.list() == {}


def test_non_ascii_names_read_but_not_created(uri: Path, tags: Tags) -> None:
    lance.dataset(uri).tags.create("ÄÖ", 2)  # pylance can no longer list its tags now
    assert tags.get_version("ÄÖ") == 2
    assert list(tags.list()) == ["ÄÖ"]
    with pytest.raises(TagError, match="ASCII"):
        tags.create("Ü", 1)


def test_concurrent_creates_of_one_tag_have_one_winner(tags: Tags) -> None:
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(version: int) -> None:
        barrier.wait()
        try:
            tags.create("race", version)
            outcomes.append(f"won {version}")
        except TagError:
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(v,)) for v in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("lost") == 7
    assert winners[0] == f"won {tags.get_version('race')}"


def test_resolve_version(uri: Path) -> None:
    store = DatasetStore(uri)
    Tags(store).create("five", 5)
    assert resolve_version(store, 5) == 5
    assert resolve_version(store, "five") == 5
    with pytest.raises(VersionNotFoundError, match="version 11"):
        resolve_version(store, 11)
    with pytest.raises(TagError, match="'six'"):
        resolve_version(store, "six")


def test_v1_manifest_names(tmp_path: Path) -> None:
    uri = tmp_path / "v1"
    table = pa.table({"x": [1, 2, 3]})
    lance.write_dataset(
        table, uri, data_storage_version=STORAGE_VERSION, enable_v2_manifest_paths=False
    )
    lance.write_dataset(table, uri, mode="append")
    tags = Tags(DatasetStore(uri))
    tags.create("one", 1)
    assert tags.list() == lance.dataset(uri).tags.list()
    assert tags.list()["one"]["manifest_size"] == len(read_file(uri / "_versions" / "1.manifest"))
    assert lance.dataset(uri, version="one").to_table().equals(table)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1_767_225_600_500_000_000, "2026-01-01T00:00:00.500Z"),
        (1_767_225_600_000_001_000, "2026-01-01T00:00:00.000001Z"),
        (1_767_225_600_123_456_789, "2026-01-01T00:00:00.123456789Z"),
    ],
)
def test_rfc3339_round_trip(ns: int, text: str) -> None:
    assert format_rfc3339(ns) == text
    assert parse_rfc3339(text) == ns


def test_rfc3339_offsets() -> None:
    assert parse_rfc3339("2026-01-01T02:00:00.5+02:00") == 1_767_225_600_500_000_000
    assert parse_rfc3339("2025-12-31T23:30:00-00:30") == 1_767_225_600_000_000_000
    with pytest.raises(ValueError):
        parse_rfc3339("2026-01-01 00:00:00")
