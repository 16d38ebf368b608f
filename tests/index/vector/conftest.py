from __future__ import annotations

import pytest

from tests.index.vector import _built

CASES = [
    ("IVF_FLAT", "l2", 16, 8, {}),
    ("IVF_FLAT", "cosine", 16, 8, {}),
    ("IVF_FLAT", "dot", 32, 4, {}),
    ("IVF_PQ", "l2", 16, 8, {"num_sub_vectors": 4, "num_bits": 8}),
    ("IVF_PQ", "cosine", 32, 16, {"num_sub_vectors": 8, "num_bits": 8}),
    ("IVF_PQ", "dot", 32, 4, {"num_sub_vectors": 8, "num_bits": 8}),
    ("IVF_RQ", "l2", 32, 8, {}),
    ("IVF_RQ", "dot", 32, 4, {"num_bits": 1}),
    ("IVF_SQ", "l2", 16, 8, {}),
    ("IVF_SQ", "cosine", 16, 4, {}),
    ("IVF_HNSW_SQ", "l2", 16, 4, {}),
    ("IVF_HNSW_SQ", "cosine", 32, 4, {}),
    ("IVF_HNSW_PQ", "l2", 16, 4, {"num_sub_vectors": 4}),
    ("IVF_HNSW_PQ", "cosine", 32, 2, {"num_sub_vectors": 8}),
    ("IVF_HNSW_PQ", "dot", 32, 4, {"num_sub_vectors": 8}),
    ("IVF_HNSW_FLAT", "l2", 16, 4, {}),
    ("IVF_HNSW_FLAT", "cosine", 16, 2, {}),
    ("IVF_HNSW_FLAT", "dot", 32, 4, {}),
]


@pytest.fixture(scope="session", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}d-{c[3]}p")
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> _built.Built:
    kind, metric, dimension, partitions, params = request.param
    root = tmp_path_factory.mktemp("vector-indices")
    return _built.build(root, kind, metric, dimension, partitions, **params)
