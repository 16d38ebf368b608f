"""The dictionary decision's sample check: a page whose sample is nearly unique, or
has more distinct values than the page may have, is not dictionary encoded.  Wide
values are first judged by cheap keys (length, first and last 8 bytes); the answer
must be the one counting the sampled values themselves gives."""

from __future__ import annotations

import math
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.file import LanceFileWriter
from lancelet.file.v2_1.write.blocks import Variable
from lancelet.file.v2_1.write.dictionary import _as_arrow, _key_ratio, _sample_rules_out

SAMPLES, BLOCKS, MIN_SAMPLES = 4096, 32, 1024  # pylance's sample: 4096 values in 32 runs


def _sampled_values(values: list[bytes]) -> list[bytes] | None:
    n = len(values)
    count = min(n, SAMPLES)
    if count < MIN_SAMPLES:
        return None
    blocks = min(BLOCKS, count)
    per_block = count // blocks
    sample = []
    for b in range(blocks):
        start, end = b * n // blocks, (b + 1) * n // blocks
        sample += values[start : min(start + per_block, end)]
    return sample if len(sample) >= MIN_SAMPLES else None


def _rules_out(values: list[bytes], threshold: int) -> bool:
    """Plainly: the share of distinct values in the sample."""
    sample = _sampled_values(values)
    if sample is None:
        return False
    ratio = len(set(sample)) / len(sample)
    return ratio >= 0.98 or math.ceil(ratio * len(values)) > threshold


@st.composite
def _pages(draw: st.DrawFn) -> list[bytes]:
    """Values that share their length and first and last 8 bytes often (the keys then
    undercount), or not; short, empty and wide ones."""
    n = draw(st.integers(1000, 3000))
    distinct = draw(st.integers(1, n))
    middle = draw(st.sampled_from([0, 1, 7, 40, 100]))  # 100: wide enough to count keys first
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    prefix = rng.bytes(draw(st.sampled_from([0, 3, 8, 20])))
    suffix = rng.bytes(draw(st.sampled_from([0, 2, 8])))
    pool = [prefix + rng.bytes(middle) + suffix for _ in range(distinct)]
    if draw(st.booleans()):
        pool[0] = b""
    return [pool[k] for k in rng.integers(0, distinct, n)]


@settings(max_examples=60, deadline=None)
@given(values=_pages(), divisor=st.sampled_from([1, 2, 8, 200]))
def test_sample_check_counts_the_values(values: list[bytes], divisor: int) -> None:
    offsets = np.concatenate(([0], np.cumsum([len(v) for v in values]))).astype(np.int64)
    block = Variable(offsets, np.frombuffer(b"".join(values), np.uint8), 32)
    threshold = len(values) // divisor
    got = _sample_rules_out(block, _as_arrow(block), len(values), threshold)
    assert got == _rules_out(values, threshold)


def _dictionary_pages(path: Path) -> list[list[bool]]:
    columns = ref.LanceFileReader(str(path)).metadata().columns
    return [["dictionary: Some(" in page.encoding for page in column.pages] for column in columns]


def test_wide_near_unique_strings_are_not_dictionary_encoded_as_pylance(tmp_path: Path) -> None:
    """pylance's test_writer_maintains_order strings, and wide strings that differ only
    in the middle (which the cheap keys cannot tell apart): the same choice as pylance."""
    middle = [b"head-of-it" + bytes([k % 7]) * 3000 + b"tail-of-it" for k in range(2000)]
    table = pa.table(
        {
            "numbers": [f"{i}" * 1024 for i in range(2000)],
            "middle": pa.array(middle, pa.binary()),
            "few": [f"{i % 3}" * 1024 for i in range(2000)],
        }
    )
    for version in ("2.1", "2.2"):
        mine, theirs = tmp_path / f"m{version}.lance", tmp_path / f"t{version}.lance"
        with LanceFileWriter(mine, table.schema, version=version) as writer:
            writer.write_batch(table)
        with ref.LanceFileWriter(str(theirs), table.schema, version=version) as writer:
            writer.write_batch(table)
        described = _dictionary_pages(mine)
        assert described == _dictionary_pages(theirs)
        assert described[2] == [True] and described[0] == [False]
        assert ref.LanceFileReader(str(mine)).read_all().to_table().equals(table)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(max_size=20), min_size=1, max_size=40),
    st.integers(1, 3000),
    st.integers(0, 2**32 - 1),
)
def test_key_ratio_counts_distinct_keys(words: list[bytes], size: int, seed: int) -> None:
    """The key ratio is the share of distinct (length, first 8 bytes, last 8 bytes)
    keys among the sampled values, counted plainly here."""
    rng = np.random.default_rng(seed)
    values = [words[i] for i in rng.integers(0, len(words), size)]
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    block = Variable(offsets, np.frombuffer(b"".join(values), np.uint8), 32)
    index = np.unique(rng.integers(0, size, min(size, 500))).astype(np.int64)
    keys = {(len(values[i]), values[i][:8], values[i][-8:]) for i in index.tolist()}
    assert _key_ratio(block, index) == len(keys) / len(index)
