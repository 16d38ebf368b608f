from __future__ import annotations

from pathlib import Path

import pytest

from tests.index._pylance import Built, build


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    root: Path = tmp_path_factory.mktemp("indices")
    return build(root, request.param)
