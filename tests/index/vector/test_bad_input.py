"""Bad queries and damaged or unsupported indices are refused with lancelet errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lancelet import io
from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedIndexError
from lancelet.index.vector import IvfIndex
from tests.index.vector import _built
from tests.index.vector._built import Built


def test_bad_queries(built: Built) -> None:
    index = built.open()
    good = np.zeros(index.dimension, np.float32)
    with pytest.raises(ArgumentError, match="dimension"):
        index.search(np.zeros(index.dimension + 1, np.float32), 5, 1)
    with pytest.raises(ArgumentError, match="NaN"):
        index.search(np.full(index.dimension, np.nan, np.float32), 5, 1)
    with pytest.raises(ArgumentError, match="k must"):
        index.search(good, 0, 1)
    with pytest.raises(ArgumentError, match="nprobes"):
        index.search(good, 5, 0)
    other = "dot" if built.metric != "dot" else "l2"
    with pytest.raises(ArgumentError, match="metric"):
        index.search(good, 5, 1, metric=other)
    with pytest.raises(ArgumentError, match="refine_factor"):
        index.search(good, 5, 1, refine_factor=2)


def test_missing_file_is_corrupt(built: Built, tmp_path: Path) -> None:
    copy = tmp_path / "index"
    copy.mkdir()
    (copy / "index.idx").write_bytes((Path(built.directory.path) / "index.idx").read_bytes())
    with pytest.raises(CorruptIndexError, match="auxiliary.idx"):
        IvfIndex.open(io.Place(io.FileIO(), str(copy)))


def test_three_bit_ivf_rq_is_refused(tmp_path: Path) -> None:
    """pylance's 3-bit RaBitQ kernel adds in an order not established."""
    rq = _built.build(tmp_path, "IVF_RQ", "l2", 16, 4, num_bits=3)
    with pytest.raises(UnsupportedIndexError, match="3"):
        rq.open().search(rq.vectors[0], 3, 2)
