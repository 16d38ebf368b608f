from __future__ import annotations

import pytest

from tests.index import _pylance, fixtures


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> _pylance.Built:
    root = tmp_path_factory.mktemp("indices")
    return _pylance.build(root, request.param)


@pytest.fixture(
    scope="session",
    params=[("BTREE", "2.0"), ("BTREE", "2.2"), ("BITMAP", "2.0"), ("BITMAP", "2.2")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def indexed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> fixtures.Indexed:
    kind, version = request.param
    return fixtures.build(tmp_path_factory.mktemp("pylance-indices"), kind, version)
