"""Damaged metadata is an error or reads as the original data, never other rows.

Two small datasets (see :mod:`.metadata_fixtures`), one written by lancelet and one by
pylance, have their latest manifest, deletion files (an Arrow one and a Roaring
bitmap), version hint and latest transaction file mutated: seeded byte flips and
truncations, and manifests re-encoded with hostile values.  Each mutant is read by
lancelet in a child process (:mod:`.harness`): the whole table, ``take`` and
``count_rows`` (:mod:`._metadata_checks`).  Transaction files are not read by readers,
so their mutants are checked by a stale delete that has to rebase over them.

Bytes the format states once, with nothing to check them against, are marked as
payload (a different result is then acceptable, an exception or crash never is):

* a schema field's name, and its nullability (tag and value: a damaged tag turns it
  into an unknown field, which reads as "not nullable");
* the id of a leaf field: another id no data file holds reads as a column of nulls,
  which is what a column added since with no data looks like;
* the first field id a data file lists, when the file records only positions (as
  lancelet has written them): a larger unused id looks like a column dropped since;
* the values of a deletion file (the Arrow batch body, the Roaring array and run
  containers): another row of the fragment, deleted instead.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import file_pb2, table_pb2
from lancelet.file.reader import LanceFileReader
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore
from tests.fuzz import hostile
from tests.fuzz.harness import (
    Campaign,
    Mutant,
    assert_acceptable,
    byte_flips,
    replacement,
    truncations,
)
from tests.fuzz.metadata_fixtures import build
from tests.fuzz.wire import spans

READ = "tests.fuzz._metadata_checks:read_latest"
REBASE = "tests.fuzz._metadata_checks:rebase_delete"


@pytest.fixture(scope="module", params=["lancelet", "pylance"])
def fixture(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lib = ll if request.param == "lancelet" else lance
    return build(lib, tmp_path_factory.mktemp(f"fuzz-{request.param}"))


def _relative(root: Path, path: str | Path) -> str:
    return str(Path(path).relative_to(root))


# -- the manifest -------------------------------------------------------------------------------


def _latest_manifest(root: Path) -> str:
    store = DatasetStore(root / "ds")
    name = naming.manifest_name(store.latest_version())
    return _relative(root, store.path(naming.VERSIONS_DIR, name))


def _positional_files(root: Path) -> set[str]:
    """Data files that record their fields by position only (0, 1, ...)."""
    out = set()
    for path in (root / "ds" / naming.DATA_DIR).iterdir():
        descriptor = file_pb2.FileDescriptor.FromString(LanceFileReader(path).read_global_buffer(0))
        ids = [f.id for f in descriptor.schema.fields]
        if ids == list(range(len(ids))):
            out.add(path.name)
    return out


def _manifest_payload(root: Path, file: str) -> list[range]:
    """The manifest bytes nothing can check (see the module docstring)."""
    data = (root / file).read_bytes()
    start, length = hostile.message_range(data)
    found = list(spans(data, table_pb2.Manifest.DESCRIPTOR, start, start + length))
    pb = hostile.decode(data)
    parents = {f.parent_id for f in pb.fields}
    positional = _positional_files(root)
    out = []
    field_index = -1
    path_of_file = ""
    for span in found:
        if span.name == "fields":
            field_index += 1
        elif span.name == "fields.name":
            out.append(range(span.value, span.end))
        elif span.name == "fields.nullable":
            out.append(range(span.start, span.end))
        elif span.name == "fields.id" and pb.fields[field_index].id not in parents:
            out.append(range(span.value, span.end))
        elif span.name == "fragments.files.path":
            path_of_file = data[span.value : span.end].decode()
        elif span.name == "fragments.files.fields" and path_of_file in positional:
            first_end = span.value
            while data[first_end] & 0x80:
                first_end += 1
            out.append(range(span.value, first_end + 1))
    return out


def _manifest_mutants(root: Path, seed: int) -> list[Mutant]:
    file = _latest_manifest(root)
    data = (root / file).read_bytes()
    mutants = byte_flips(root, file, 200, seed, payload=_manifest_payload(root, file))
    mutants += truncations(root, file, 12, seed)
    mutants += [
        replacement(file, hostile.edited(data, edit), f"manifest: {name}")
        for name, (edit, _) in hostile.CASES.items()
    ]
    mutants += [
        replacement(file, blob, f"manifest: {label}", payload=uncheckable)
        for label, blob, uncheckable in hostile.hostile_values(data, 40, seed)
    ]
    return mutants


# -- deletion files -------------------------------------------------------------------------


def _deletion_files(root: Path) -> dict[str, str]:
    """The latest version's deletion files by kind (one of each, the newest Arrow)."""
    store = DatasetStore(root / "ds")
    manifest = store.read_manifest(store.latest_version())
    out = {}
    newest = sorted(manifest.fragments, key=lambda f: f.deletion_file.read_version)  # type: ignore[union-attr]
    for fragment in newest:
        assert fragment.deletion_file is not None
        path = store.deletion_path(fragment.id, fragment.deletion_file)
        out[fragment.deletion_file.kind.value] = _relative(root, path)
    assert set(out) == {"arrow", "bin"}
    return out


def _arrow_body(data: bytes) -> list[range]:
    """The record batch body of an Arrow IPC file: the row offsets themselves."""
    # The first message after the magic (and whatever padding the writer put there).
    first = data.index(b"\xff\xff\xff\xff", 6)
    reader = pa.ipc.MessageReader.open_stream(pa.py_buffer(data[first:]))
    reader.read_next_message()  # the schema
    body = reader.read_next_message().body.to_pybytes()
    at = data.index(body)
    return [range(at, at + len(body))]


def _roaring_values(data: bytes) -> list[range]:
    """The values of a portable Roaring bitmap's array containers and the starts of its
    runs: row offsets, stored once.  (A flip in a bitset container or a run's length
    changes how many rows are deleted, which the manifest's count catches.)"""
    (cookie,) = struct.unpack_from("<I", data, 0)
    if cookie & 0xFFFF == 12347:  # with run containers
        count = (cookie >> 16) + 1
        runs = data[4 : 4 + (count + 7) // 8]
        at = 4 + len(runs)
        is_run = [bool(runs[i // 8] >> (i % 8) & 1) for i in range(count)]
    else:
        (count,) = struct.unpack_from("<I", data, 4)
        at, is_run = 8, [False] * count
    cards = [struct.unpack_from("<HH", data, at + 4 * i)[1] + 1 for i in range(count)]
    at += 4 * count
    if cookie & 0xFFFF != 12347 or count >= 4:
        at += 4 * count  # the offset header
    out = []
    for run, card in zip(is_run, cards, strict=True):
        if run:
            # (start, length - 1) pairs: a start moved deletes other rows, as many.
            (runs_count,) = struct.unpack_from("<H", data, at)
            size = 2 + 4 * runs_count
            out += [range(at + 2 + 4 * i, at + 4 + 4 * i) for i in range(runs_count)]
        elif card > 4096:
            size = 8192
        else:
            size = 2 * card
            out.append(range(at, at + size))
        at += size
    return out


def _deletion_mutants(root: Path, seed: int) -> list[Mutant]:
    mutants = []
    for kind, file in sorted(_deletion_files(root).items()):
        data = (root / file).read_bytes()
        payload = _arrow_body(data) if kind == "arrow" else _roaring_values(data)
        mutants += byte_flips(root, file, 70, seed, payload=payload)
        mutants += truncations(root, file, 8, seed)
    return mutants


# -- the version hint ---------------------------------------------------------------------------


def _hint_mutants(root: Path, seed: int) -> list[Mutant]:
    file = _relative(root, root / "ds" / naming.VERSIONS_DIR / naming.VERSION_HINT)
    mutants = byte_flips(root, file, 10, seed) + truncations(root, file, 4, seed)
    for version in (0, 1, 3, 4, 6, 2**63, -1):
        mutants.append(replacement(file, json.dumps({"version": version}).encode(), f"{version}"))
    mutants += [replacement(file, b"[]", "a list"), Mutant(file, "delete", label="no hint")]
    return mutants


# -- the campaigns ------------------------------------------------------------------------------


def test_damaged_metadata_reads_as_before_or_fails(fixture: Path) -> None:
    mutants = _manifest_mutants(fixture, 11)
    mutants += _deletion_mutants(fixture, 12)
    mutants += _hint_mutants(fixture, 13)
    outcomes = Campaign(fixture, READ, mutants, budget_s=18.0).run()
    assert_acceptable(outcomes, minimum=100)
    # The hostile manifests of item 10 are errors, every one.
    for outcome in outcomes:
        if outcome.mutant.label.startswith("manifest: ") and outcome.mutant.label[10:] in (
            hostile.CASES
        ):
            assert outcome.kind == "error", outcome


def _transaction_mutants(root: Path, seed: int) -> list[Mutant]:
    store = DatasetStore(root / "ds")
    name = store.read_manifest(store.latest_version()).transaction_file
    file = _relative(root, store.transaction_path(name))
    mutants = byte_flips(root, file, 36, seed) + truncations(root, file, 6, seed)
    return [*mutants, Mutant(file, "delete", label="winner transaction gone")]


def test_rebase_over_a_damaged_winner_transaction(fixture: Path) -> None:
    """A stale delete rebased over the latest commit, whose transaction file is damaged:
    an error, or the commit it should be; never a row the winner deleted back."""
    outcomes = Campaign(fixture, REBASE, _transaction_mutants(fixture, 21), budget_s=7.0).run()
    assert_acceptable(outcomes, minimum=20)
