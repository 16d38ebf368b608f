"""Mini-block layouts worked out once: pages laid out alike, in one file or in
several, share one plan (codecs, shape, batch key), read what pylance wrote, and a
layout that fails its checks fails on every page that has it."""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader
from lancelet.file.many import take_from_files
from lancelet.file.v2_1.read import miniblock_plan
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.miniblock_plan import plan_of


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 1 << 40, 3000)),
            "mode": pa.array([["AIR", "MAIL", "RAIL"][i] for i in rng.integers(0, 3, 3000)]),
            "maybe": pa.array([None if v % 5 == 0 else int(v) for v in rng.integers(0, 99, 3000)]),
        }
    )


def _write(path: Path, data: pa.Table) -> str:
    with ref.LanceFileWriter(str(path), data.schema, version="2.1") as writer:
        writer.write_batch(data)
    return str(path)


def test_files_written_alike_share_plans_and_read_as_pylance(tmp_path: Path) -> None:
    tables = [_table(seed) for seed in range(3)]
    paths = [_write(tmp_path / f"{i}.lance", t) for i, t in enumerate(tables)]
    readers = [LanceFileReader(p) for p in paths]
    for column in range(3):
        pages = [r.plain_leaves()[column].decoder(0) for r in readers]  # type: ignore[index]
        assert all(isinstance(p, MiniBlockPage) for p in pages)
        plans = {id(p.plan) for p in pages if isinstance(p, MiniBlockPage)}
        assert len(plans) == 1
    rows = [np.arange(0, 3000, 3), np.arange(1, 3000, 7), np.array([5, 2999])]
    got = take_from_files(readers, rows)
    expected = pa.concat_tables(
        ref.LanceFileReader(p).take_rows(r.tolist()).to_table()
        for p, r in zip(paths, rows, strict=True)
    )
    assert got is not None and got.equals(expected)


def test_a_layout_that_fails_its_checks_is_not_kept() -> None:
    layout = pb.MiniBlockLayout(layers=[pb.REPDEF_ALL_VALID_ITEM], num_buffers=3)
    layout.value_compression.flat.bits_per_value = 64
    key = layout.SerializeToString(deterministic=True)
    for _ in range(2):
        with pytest.raises(CorruptFileError, match="value buffers per chunk"):
            plan_of(layout)
    assert miniblock_plan._plans.find(key) is None


def test_a_plan_does_not_follow_changes_to_the_page_message() -> None:
    layout = pb.MiniBlockLayout(layers=[pb.REPDEF_ALL_VALID_ITEM], num_buffers=1)
    layout.value_compression.flat.bits_per_value = 64
    plan = plan_of(layout)
    assert plan_of(layout) is plan
    layout.num_buffers = 2  # a different layout now: its own plan, which fails
    with pytest.raises(CorruptFileError):
        plan_of(layout)
    assert plan.layout.num_buffers == 1


def test_files_written_alike_share_their_parsed_page_layouts(tmp_path: Path) -> None:
    paths = [_write(tmp_path / f"{i}.lance", _table(i)) for i in range(2)]
    first, second = (LanceFileReader(p) for p in paths)
    for a, b in zip(first._columns, second._columns, strict=True):
        assert a.pages[0].layout is b.pages[0].layout
    assert first.read_all().to_table().equals(_table(0))


def test_pages_with_the_same_chunks_share_their_chunk_tables(tmp_path: Path) -> None:
    """Chunk sizes, offsets and counts worked out once for pages whose chunk metadata,
    item count and chunk bytes agree; shared, so read-only."""
    data = pa.table({"n": pa.array(np.arange(3000) % 7)})
    paths = [_write(tmp_path / f"{i}.lance", data) for i in range(2)]
    first, second = (LanceFileReader(p).plain_leaves()[0].decoder(0) for p in paths)  # type: ignore[index]
    assert isinstance(first, MiniBlockPage) and isinstance(second, MiniBlockPage)
    assert first.counts is second.counts and first.offsets is second.offsets
    assert not first.counts.flags.writeable
    assert int(first.counts.sum()) == 3000
    assert first.fewest_values == int(first.counts.min()) == second.fewest_values
    assert LanceFileReader(paths[1]).read_all().to_table().equals(data)


def test_a_layout_no_other_page_shares_is_not_kept() -> None:
    """An FSST symbol table makes a layout large and its page's own: its plan is
    worked out for the page, not kept."""
    layout = pb.MiniBlockLayout(layers=[pb.REPDEF_ALL_VALID_ITEM], num_buffers=1)
    layout.value_compression.fsst.symbol_table = bytes(range(256)) * 3
    layout.value_compression.fsst.values.variable.offsets.flat.bits_per_value = 32
    plan = plan_of(layout)
    assert plan_of(layout) is not plan
    assert miniblock_plan._plans.find(layout.SerializeToString(deterministic=True)) is None
