"""Settings every test shares."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from lancelet.file import version
from tests import s3server
from tests.s3server import S3Server
from tests.versions import STORAGE_VERSION


@pytest.fixture(autouse=True, scope="session")
def _default_storage_version() -> Iterator[None]:
    """lancelet's default data file format, for the whole session: the one this run
    tests (a process that Spark starts keeps the library's own default)."""
    with mock.patch.object(version, "DEFAULT_WRITE", STORAGE_VERSION):
        yield


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
