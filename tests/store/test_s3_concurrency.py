"""Writers in separate processes, lancelet and pylance alike, sharing one dataset on S3.

Each process reports which version each of its commits became.  Replaying the
commits in version order gives the expected rows of every version; both libraries
must read exactly those at every version, so a lost update or a commit built on a
stale version shows at the version where it happened.  Creates racing for one URI
must have one winner, and the losers must leave no manifest (lancelet's: nothing).
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pytest

import lancelet as ll
from lancelet.errors import DatasetAlreadyExistsError
from tests.store import rows
from tests.store._s3_worker import deleted, run, warm
from tests.store.conftest import S3Place
from tests.store.rows import Rows

TIMEOUT_S = 120.0
WRITERS = 3


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    """Writer processes, started once for the module: each has imported both libraries."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS, initializer=warm) as workers:
        yield workers


def _run_all(
    pool: Any, tmp_path: Path, specs: list[dict[str, Any]], commit_parties: int = 0
) -> list[dict[str, Any]]:
    assert len(specs) <= WRITERS  # every writer needs a process of its own
    sync = tmp_path / "sync"
    sync.mkdir()
    for spec in specs:
        spec.update(sync=str(sync), parties=len(specs), commit_parties=commit_parties)
    reports = pool.map_async(run, specs, chunksize=1).get(timeout=TIMEOUT_S)
    return sorted(reports, key=lambda r: r["name"])


def _replay(first: Rows, reports: list[dict[str, Any]], tags: dict[str, str]) -> dict[int, Rows]:
    """Every version's rows, from the initial rows and the commits in version order."""
    commits = sorted((version, r["name"], op) for r in reports for version, op in r["commits"])
    versions = [version for version, _, _ in commits]
    assert versions == list(range(2, 2 + len(commits))), f"versions not 2..n once each: {versions}"
    history = {1: first}
    current = first
    for version, name, op in commits:
        if op["op"] == "append":
            current = {**current, **rows.make(op["keys"], tags[name])}
        else:
            current = rows.without(current, lambda k, op=op: deleted(op, k))
        history[version] = current
    return history


def test_appends_and_deletes_from_both_libraries(s3: S3Place, pool: Any, tmp_path: Path) -> None:
    first = rows.make(range(30))
    ll.write_dataset(rows.table(first), s3.uri, max_rows_per_file=10, storage_options=s3.options)

    def spec(name: str, impl: str, base: int, lo: int, rem: int) -> dict[str, Any]:
        return {
            "name": name,
            "impl": impl,
            "tag": name,
            "uri": s3.uri,
            "options": s3.options,
            "sync_commit": impl == "lancelet",
            "ops": [
                {"op": "append", "keys": list(range(base, base + 4))},
                # Rows of the initial data: lancelet and pylance both delete from the
                # first fragment, so their deletion files must be merged.
                {"op": "delete", "lo": lo, "hi": lo + 10, "mod": 2, "rem": rem},
                {"op": "append", "keys": list(range(base + 10, base + 13))},
                {"op": "delete", "lo": base, "hi": base + 2, "mod": 1, "rem": 0},
            ],
        }

    specs = [
        spec("ll-0", "lancelet", 1000, 0, 0),
        spec("ll-1", "lancelet", 2000, 10, 1),
        spec("py-0", "pylance", 3000, 0, 1),
    ]
    reports = _run_all(pool, tmp_path, specs, commit_parties=2)
    for report in reports:
        assert report["error"] is None, report["error"][2]
        assert len(report["commits"]) == 4
    history = _replay(first, reports, {s["name"]: s["tag"] for s in specs})

    final = history[max(history)]
    # The final rows worked out directly: nothing lost, nothing applied twice.
    expected_keys = {k for k in range(30) if not (k < 10 or (10 <= k < 20 and k % 2))}
    for base in (1000, 2000, 3000):
        expected_keys |= set(range(base + 2, base + 4)) | set(range(base + 10, base + 13))
    assert set(final) == expected_keys

    for version, want in history.items():
        theirs = lance.dataset(s3.uri, version=version, storage_options=s3.options)
        ours = ll.dataset(s3.uri, version=version, storage_options=s3.options)
        assert rows.of(theirs.to_table()) == want, f"pylance at version {version}"
        assert rows.of(ours.to_table()) == want, f"lancelet at version {version}"
    latest = lance.dataset(s3.uri, storage_options=s3.options)
    assert latest.version == max(history)
    latest.validate()
    ll.dataset(s3.uri, storage_options=s3.options).validate()


def _keys_under(s3: S3Place, folder: str) -> list[str]:
    return s3.objects(f"ds/{folder}/")


def test_racing_creates_have_one_winner(s3: S3Place, pool: Any, tmp_path: Path) -> None:
    specs = [
        {
            "name": f"ll-{i}",
            "impl": "lancelet",
            "tag": f"creator{i}",
            "uri": s3.uri,
            "options": s3.options,
            "sync_commit": True,
            "ops": [{"op": "create", "keys": list(range(i * 100, i * 100 + 5))}],
        }
        for i in range(3)
    ]
    reports = _run_all(pool, tmp_path, specs, commit_parties=3)
    winners = [r for r in reports if r["error"] is None]
    losers = [r for r in reports if r["error"] is not None]
    assert len(winners) == 1, [r["error"] for r in reports]
    assert [w["commits"][0][0] for w in winners] == [1]
    for loser in losers:
        name, message, _ = loser["error"]
        assert name == DatasetAlreadyExistsError.__name__, loser["error"][2]
        assert "already exists" in message and s3.uri in message

    winner = winners[0]
    want = rows.make(winner["commits"][0][1]["keys"], winner["name"].replace("ll-", "creator"))
    assert rows.of(lance.dataset(s3.uri, storage_options=s3.options).to_table()) == want
    assert rows.of(ll.dataset(s3.uri, storage_options=s3.options).to_table()) == want
    # One manifest, one transaction; the losers' data files were removed.
    manifests = [k for k in _keys_under(s3, "_versions") if k.endswith(".manifest")]
    assert len(manifests) == 1
    assert len(_keys_under(s3, "_transactions")) == 1
    theirs = lance.dataset(s3.uri, storage_options=s3.options)
    live = {f"ds/data/{f.path}" for frag in theirs.get_fragments() for f in frag.data_files()}
    assert set(_keys_under(s3, "data")) == live


def test_racing_creates_with_pylance(s3: S3Place, pool: Any, tmp_path: Path) -> None:
    specs = [
        {
            "name": f"{impl}-{i}",
            "impl": impl,
            "tag": f"{impl}{i}",
            "uri": s3.uri,
            "options": s3.options,
            "sync_commit": False,
            "ops": [{"op": "create", "keys": list(range(i * 100, i * 100 + 5))}],
        }
        for i, impl in enumerate(["lancelet", "pylance", "pylance"])
    ]
    reports = _run_all(pool, tmp_path, specs)
    committed = {r["commits"][0][0]: r for r in reports if r["error"] is None}
    assert 1 in committed, [r["error"][:2] for r in reports]
    for report in reports:
        if report["name"].startswith("lancelet") and report["error"] is None:
            # A lancelet create is version 1 or nothing.
            assert report["commits"][0][0] == 1
        elif report["name"].startswith("lancelet"):
            name, message, trace = report["error"]
            assert name == DatasetAlreadyExistsError.__name__, trace
            assert "already exists" in message
        elif report["error"] is not None:
            # pylance 14 refuses a create that lost the race, or rebases it into an
            # overwrite at a later version, which can itself lose to another such
            # overwrite ("Retryable commit conflict"): its behaviour, not lancelet's.
            message = report["error"][1]
            assert "already exists" in message or "commit conflict" in message, message
    for version, report in committed.items():
        op = report["commits"][0][1]
        want = rows.make(op["keys"], report["name"].replace("-", ""))
        for read in (lance.dataset, ll.dataset):
            ds = read(s3.uri, version=version, storage_options=s3.options)
            assert rows.of(ds.to_table()) == want
    assert sorted(committed) == list(range(1, len(committed) + 1))
    manifests = [k for k in _keys_under(s3, "_versions") if k.endswith(".manifest")]
    assert len(manifests) == len(committed)


def test_put_if_not_exists_on_s3_has_one_winner(s3: S3Place) -> None:
    # The primitive every commit relies on, raced by threads against the server.
    from lancelet import io

    files = io.FileIO.for_uri(s3.uri, s3.options)
    path = f"{s3.uri}/_versions/1.manifest"
    threads = 8
    start = threading.Barrier(threads)
    won: list[int] = []

    def race(i: int) -> None:
        start.wait()
        if files.put_if_not_exists(path, f"writer {i}".encode()):
            won.append(i)

    workers = [threading.Thread(target=race, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(won) == 1
    body = s3.server.client().get_object(Bucket=s3.bucket, Key="ds/_versions/1.manifest")
    assert body["Body"].read() == f"writer {won[0]}".encode()
    assert s3.objects() == ["ds/_versions/1.manifest"]
