"""Settings every test shares."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from lancelet.file import version
from tests.versions import STORAGE_VERSION


@pytest.fixture(autouse=True, scope="session")
def _default_storage_version() -> Iterator[None]:
    """lancelet's default data file format, for the whole session: the one this run
    tests (a process that Spark starts keeps the library's own default)."""
    with mock.patch.object(version, "DEFAULT_WRITE", STORAGE_VERSION):
        yield
