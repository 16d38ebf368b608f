from __future__ import annotations

import pytest

from tests.index.fixtures import Indexed, build


@pytest.fixture(
    scope="session",
    params=[("BTREE", "2.0"), ("BTREE", "2.2"), ("BITMAP", "2.0"), ("BITMAP", "2.2")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def indexed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    kind, version = request.param
    return build(tmp_path_factory.mktemp("pylance-indices"), kind, version)
