"""Settings every test shares."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from lancelet.file import version
from tests import s3server, storage
from tests.s3server import S3Server
from tests.versions import STORAGE_VERSION


@pytest.fixture(autouse=True, scope="session")
def _default_storage_version() -> Iterator[None]:
    """lancelet's default data file format, for the whole session: the one this run
    tests (a process that Spark starts keeps the library's own default)."""
    with mock.patch.object(version, "DEFAULT_WRITE", STORAGE_VERSION):
        yield


@pytest.fixture(autouse=True, scope="session")
def _storage_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """With ``LANCELET_TEST_STORAGE_BACKEND=memory``, every local path under the
    session's temporary directory lives in the process's ``memory://`` store instead,
    and pylance reaches those datasets through local views (see ``tests/storage.py``)."""
    if not storage.MEMORY:
        yield
        return
    with storage.memory_backend(str(tmp_path_factory.getbasetemp().resolve())):
        yield


@pytest.fixture(autouse=True)
def _forget_test_datasets(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the memory run, a test's datasets leave the store (and pylance's views of
    them the disk) when it ends, and the test must have left no local files."""
    bridge = storage.BRIDGE
    if bridge is None or "tmp_path" not in request.fixturenames:
        yield
        return
    tmp_path = request.getfixturevalue("tmp_path")
    yield
    bridge.forget_under(str(tmp_path.resolve()))
    # Nothing may reach the disk there: a file that did was written past lancelet and
    # the bridge (pylance handed the path itself, or os), and lancelet never saw it.
    stray = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir())
    assert not stray, f"files written to local disk in the memory run: {stray}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the memory run, tests marked ``local_files`` are skipped: they need what only
    local files give (ages set with ``os.utime``, ``os`` calls made to fail, other
    processes sharing the dataset)."""
    if not storage.MEMORY:
        return
    for item in items:
        marker = item.get_closest_marker("local_files")
        if marker is not None:
            reason = marker.args[0] if marker.args else "needs the dataset's local files"
            item.add_marker(pytest.mark.skip(reason=f"memory backend: {reason}"))


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's local S3 server (127.0.0.1), stopped when the session ends."""
    server = s3server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    """A fresh bucket on the session's S3 server."""
    return s3_server.new_bucket()
