"""Structural dictionaries: when a page is dictionary encoded, and how.

As in the reference, a page is dictionary encoded (indices in mini-blocks, the
dictionary in page buffer 2) when it has at least 100 values of a kind that
supports it (variable-width; 128-bit fixed-width, and 64-bit from format 2.2),
a sample of it is not nearly unique, its distinct values number at most
``num_values / lance-encoding:dict-divisor`` (and 100,000), and dictionary plus
32-bit indices take less than ``lance-encoding:dict-size-ratio`` (0.8) of the
values.  Every visible entry counts, a null one with whatever bytes it holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lancelet.errors import SchemaError
from lancelet.file.v2_1.write.blocks import Block, Fixed, Variable, to_block

DIVISOR_KEY = b"lance-encoding:dict-divisor"
RATIO_KEY = b"lance-encoding:dict-size-ratio"
VALUES_COMPRESSION_KEY = b"lance-encoding:dict-values-compression"
VALUES_LEVEL_KEY = b"lance-encoding:dict-values-compression-level"

_TOO_SMALL = 100
_DEFAULT_DIVISOR = 2
_MAX_CARDINALITY = 100_000
_DEFAULT_RATIO = 0.8
_SAMPLES = 4096
_SAMPLE_BLOCKS = 32
_MIN_SAMPLES = 1024
_NEAR_UNIQUE = 0.98
_INDEX_BYTES = 4
# Average value bytes above which the sample's keys are counted before its values:
# narrower values hash whole faster than their keys are cut and sorted.
_WIDE_BYTES = 64


@dataclass(frozen=True)
class Encoded:
    indices: Fixed
    dictionary: Block
    num_items: int


def _as_arrow(block: Block) -> pa.Array:
    """The block's values as an Arrow array without validity (nulls count as values)."""
    if isinstance(block, Variable):
        # Views, not copies: the block outlives the Arrow array.
        offsets = pa.py_buffer(np.ascontiguousarray(block.offsets, dtype=np.int64))
        data = pa.py_buffer(np.ascontiguousarray(block.data))
        return pa.Array.from_buffers(pa.large_binary(), block.num_values, [None, offsets, data])
    assert isinstance(block, Fixed)
    if block.bits_per_value == 64:
        return pa.array(block.data.view("<u8"))
    data = pa.py_buffer(np.ascontiguousarray(block.data))
    width = block.bits_per_value // 8
    return pa.Array.from_buffers(pa.binary(width), block.num_values, [None, data])


def _supported(block: Block, allow_64: bool) -> bool:
    if isinstance(block, Variable):
        return True
    if isinstance(block, Fixed):
        return block.bits_per_value == 128 or (allow_64 and block.bits_per_value == 64)
    return False


def parse_divisor(meta: Mapping[bytes, bytes]) -> int:
    raw = meta.get(DIVISOR_KEY)
    if raw is None:
        return _DEFAULT_DIVISOR
    try:
        value = int(raw)
    except ValueError:
        return _DEFAULT_DIVISOR  # the reference ignores what it cannot parse
    return max(value, 1)


def parse_ratio(meta: Mapping[bytes, bytes], where: str) -> float:
    raw = meta.get(RATIO_KEY)
    if raw is None:
        return _DEFAULT_RATIO
    try:
        value = float(raw)
    except ValueError:
        return _DEFAULT_RATIO
    if not 0.0 < value <= 1.0 or math.isnan(value):
        raise SchemaError(
            f"{where}: lance-encoding:dict-size-ratio is {raw.decode(errors='replace')!r}, "
            "which is not in the range (0, 1]"
        )
    return value


def _sample_index(n: int) -> NDArray[np.int64] | None:
    """The positions of a deterministic sample: up to 4096 values in 32 evenly spread
    runs (None: too few values to judge)."""
    count = min(n, _SAMPLES)
    if count < _MIN_SAMPLES:
        return None
    blocks = min(_SAMPLE_BLOCKS, count)
    per_block = max(count // blocks, 1)
    block_starts = np.arange(blocks, dtype=np.int64) * n // blocks
    block_ends = np.minimum((np.arange(blocks, dtype=np.int64) + 1) * n // blocks, n)
    takes = np.minimum(per_block, block_ends - block_starts)
    index = np.concatenate([np.arange(s, s + t) for s, t in zip(block_starts, takes, strict=True)])
    return index if len(index) >= _MIN_SAMPLES else None


def _sample_ratio(values: pa.Array, index: NDArray[np.int64]) -> float:
    """Distinct share of the sample."""
    sample = values.take(pa.array(index))
    return int(pc.count_distinct(sample, mode="all").as_py()) / len(index)


def _key_ratio(block: Variable, index: NDArray[np.int64]) -> float:
    """A lower bound of the sample's distinct share, cheap for wide values: distinct
    (length, first 8 bytes, last 8 bytes) keys.  Equal values have equal keys, so the
    values are at least as many as the keys."""
    starts, ends = block.offsets[index], block.offsets[index + 1]
    if not len(block.data):
        return 1 / len(index)  # every value is empty
    span = np.arange(8, dtype=np.int64)
    covered = span < np.minimum(ends - starts, 8)[:, None]
    last_byte = len(block.data) - 1
    first = np.where(covered, block.data[np.minimum(starts[:, None] + span, last_byte)], 0)
    tail_start = np.maximum(ends - 8, starts)[:, None]
    last = np.where(covered, block.data[np.minimum(tail_start + span, last_byte)], 0)
    keys = (
        np.ascontiguousarray(first, dtype=np.uint8).view("<u8")[:, 0],
        np.ascontiguousarray(last, dtype=np.uint8).view("<u8")[:, 0],
        (ends - starts).astype(np.uint64),
    )
    # Distinct key triples counted by a lexsort: np.unique(axis=0) sorts rows as
    # structured values, ten times slower.
    order = np.lexsort(keys)
    changes = np.zeros(len(order) - 1, dtype=bool)
    for key in keys:
        ranked = key[order]
        changes |= ranked[1:] != ranked[:-1]
    return (1 + int(np.count_nonzero(changes))) / len(index)


def _sample_rules_out(block: Block, values: pa.Array, n: int, threshold: int) -> bool:
    """Whether the sample shows the page too distinct for a dictionary (nearly unique,
    or more distinct values than the threshold).  Wide values are hashed whole only
    when their keys' lower bound does not already show it: the answer is the same."""
    index = _sample_index(n)
    if index is None:
        return False

    def too_distinct(ratio: float) -> bool:
        return ratio >= _NEAR_UNIQUE or math.ceil(ratio * n) > threshold

    if (
        isinstance(block, Variable)
        and len(block.data) > _WIDE_BYTES * block.num_values
        and too_distinct(_key_ratio(block, index))
    ):
        return True
    return too_distinct(_sample_ratio(values, index))


def _data_size(block: Block) -> int:
    if isinstance(block, Variable):
        return len(block.data) + (block.num_values + 1) * block.bits_per_offset // 8
    assert isinstance(block, Fixed)
    return len(block.data)


def try_encode(
    block: Block, meta: Mapping[bytes, bytes], allow_64: bool, where: str
) -> Encoded | None:
    """Dictionary-encode the page when the reference would."""
    if not _supported(block, allow_64) or block.num_values < _TOO_SMALL:
        return None
    n = block.num_values
    threshold = min(n // parse_divisor(meta), _MAX_CARDINALITY)
    ratio = parse_ratio(meta, where)
    if threshold == 0 or _data_size(block) == 0:
        return None
    budget = int(_data_size(block) * ratio)
    if _INDEX_BYTES * n + _least_dictionary_bytes(block) > budget:
        return None  # one-byte flags: the indices alone outweigh the values, unhashed
    values = _as_arrow(block)
    if _sample_rules_out(block, values, n, threshold):
        return None
    dense = _dense(block)
    if dense is not None:
        dictionary, index_array = dense
    else:
        encoded = pc.dictionary_encode(values)
        dictionary, index_array = encoded.dictionary, encoded.indices.to_numpy()
    cardinality = len(dictionary)
    if cardinality > threshold:
        return None
    size = _INDEX_BYTES * n
    if isinstance(block, Variable):
        width = block.bits_per_offset // 8
        size += len(dictionary.buffers()[2] or b"") + (cardinality + 1) * width
    else:
        assert isinstance(block, Fixed)
        size += cardinality * block.bits_per_value // 8
    if size > budget:
        return None
    indices = np.asarray(index_array, dtype="<u4")
    return Encoded(Fixed(indices.view(np.uint8), 32, n), _dictionary_block(block, dictionary),
                   cardinality)  # fmt: skip


def _least_dictionary_bytes(block: Block) -> int:
    """The bytes of a dictionary of one value (the fewest it holds), as
    :func:`try_encode` sizes one."""
    if isinstance(block, Variable):
        return 2 * (block.bits_per_offset // 8)
    assert isinstance(block, Fixed)
    return block.bits_per_value // 8


def _dense(block: Block) -> tuple[pa.Array, NDArray[np.int64]] | None:
    """64-bit values (or 128-bit ones whose high half only extends the sign, as small
    decimals are) spanning a range not much wider than the page: the dictionary, in
    ascending order and in the block's width, and indices by direct addressing,
    several times faster than hashing.  None when the values do not qualify."""
    if not isinstance(block, Fixed) or block.bits_per_value not in (64, 128):
        return None
    if block.bits_per_value == 64:
        values = block.data.view("<i8")
    else:
        halves = block.data.view("<i8").reshape(-1, 2)
        values = halves[:, 0]
        if not bool((halves[:, 1] == values >> 63).all()):
            return None
    low, high = int(values.min()), int(values.max())
    if high - low >= 4 * len(values):
        return None
    present = np.zeros(high - low + 1, dtype=bool)
    shifted = values - low
    present[shifted] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    entries = (np.flatnonzero(present) + low).astype("<i8")
    if block.bits_per_value == 64:
        return pa.array(entries.view("<u8")), rank[shifted]
    wide = np.stack([entries, entries >> 63], axis=1).reshape(-1).view(np.uint8)
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(16), len(entries), [None, pa.py_buffer(wide)]
    ), rank[shifted]


def _dictionary_block(block: Block, dictionary: pa.Array) -> Block:
    if isinstance(block, Variable):
        as_block = to_block(dictionary)
        assert isinstance(as_block, Variable)
        return Variable(as_block.offsets, as_block.data, block.bits_per_offset)
    assert isinstance(block, Fixed)
    width = block.bits_per_value // 8
    if block.bits_per_value == 64:
        raw = np.asarray(dictionary.to_numpy(), dtype="<u8").view(np.uint8)
    else:
        buf = np.frombuffer(dictionary.buffers()[1], np.uint8)
        raw = buf[dictionary.offset * width : (dictionary.offset + len(dictionary)) * width]
    return Fixed(raw, block.bits_per_value, len(dictionary))


def arrow_dictionary(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A page of an Arrow dictionary column as (indices, dictionary), nulls moved from
    the dictionary into the indices and the dictionary cut to the values it needs."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.unify_dictionaries().combine_chunks()
    indices, dictionary = arr.indices, arr.dictionary
    if dictionary.null_count:
        keep = np.flatnonzero(np.asarray(dictionary.is_valid().to_numpy(zero_copy_only=False)))
        remap = np.full(len(dictionary), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        idx = np.asarray(indices.fill_null(0).to_numpy(), dtype=np.int64)
        mapped = remap[idx]
        valid = np.asarray(indices.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        valid &= mapped >= 0
        indices = pa.array(np.where(valid, mapped, 0).astype(indices.type.to_pandas_dtype()),
                           mask=~valid)  # fmt: skip
        dictionary = dictionary.take(pa.array(keep))
    return indices, dictionary
