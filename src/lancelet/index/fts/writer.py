"""Writing INVERTED index directories as pylance 14 writes them (format version 2:
FST token maps, posting blocks of 128 with varint tails, impacts, shared position
streams; ``docs/fts/inverted-index-format.md``).

A partition is built whole in memory from the analyzer's tokens, with numpy over
every posting at once: postings are the (token, document) runs of the occurrences
sorted by token, document and position.  Documents that keep no token are left out
of the docs file, as pylance leaves them out (measured).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import ducer
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import ArgumentError
from lancelet.index import files
from lancelet.index.fts import codecs
from lancelet.index.fts.analyzer import DocumentTokens
from lancelet.index.fts.params import InvertedParams
from lancelet.index.fts.reader import (
    FIXED_PARAMS,
    FORMAT_KEYS,
    INVERT_KEYS,
    METADATA_FILE,
    POSITION_KEYS,
    Partition,
    docs_file,
    invert_file,
    tokens_file,
)
from lancelet.index.remapping import AddressMapping

BLOCK = codecs.BLOCK
GROUP_BLOCKS = 32  # posting blocks per second-level impact entry
K1 = np.float32(1.2)
B = np.float32(0.75)
# Block max scores are rounded up by this many float32 ulps: pylance's own are
# within 2 ulps of the largest query-time score, either side.
SCORE_SLACK_ULPS = 4
EMPTY_ROARING = bytes.fromhex("3a30000000000000")
_PARAM_ORDER = (
    "lance_tokenizer",
    "base_tokenizer",
    "language",
    "with_position",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "custom_stop_words",
    "ascii_folding",
    "min_ngram_length",
    "max_ngram_length",
    "prefix_only",
    "block_size",
    "split_identifiers",
    "split_on_numerics",
    "preserve_original",
    "index_operators",
)


def check_writable(params: InvertedParams) -> None:
    """Refuse layouts lancelet does not write."""
    if params.format_version != int(FORMAT_KEYS["format_version"]):
        raise ArgumentError(
            f"INVERTED index: lancelet writes format_version 2 only, not {params.format_version}"
        )
    if params.block_size != BLOCK:
        raise ArgumentError(
            f"INVERTED index: lancelet writes posting blocks of {BLOCK} only, "
            f"not block_size={params.block_size}"
        )


def params_json(params: InvertedParams) -> str:
    """The ``params`` value of ``metadata.lance``, keys in pylance's order."""
    values = {
        **FIXED_PARAMS,
        **{k: getattr(params, k) for k in _PARAM_ORDER if k not in FIXED_PARAMS},
    }
    if params.custom_stop_words is not None:
        values["custom_stop_words"] = list(params.custom_stop_words)
    return json.dumps(
        {k: values[k] for k in _PARAM_ORDER}, separators=(",", ":"), ensure_ascii=False
    )


@dataclass(frozen=True)
class PartitionData:
    """One partition's contents: documents, tokens (in token id order) and postings
    sorted by token then document, with positions sorted by token, document and
    position (None without positions)."""

    row_ids: np.ndarray  # uint64 per doc
    num_tokens: np.ndarray  # uint32 per doc
    vocabulary: pa.Array  # string per token id
    token: np.ndarray  # int64 per posting
    doc: np.ndarray  # uint32 per posting
    freq: np.ndarray  # uint32 per posting
    positions: np.ndarray | None  # uint32 per occurrence

    @classmethod
    def from_tokens(
        cls, tokens: DocumentTokens, row_ids: np.ndarray, with_position: bool
    ) -> PartitionData:
        """The partition of analyzed documents whose rows are ``row_ids``."""
        kept = tokens.num_tokens > 0
        doc_ids = np.cumsum(kept, dtype=np.int64) - 1
        document = doc_ids[tokens.document]
        token = tokens.token.astype(np.int64)
        # Occurrences come by document and position: a stable sort by token suffices.
        order = np.argsort(token, kind="stable")
        token, document = token[order], document[order]
        changed = (token[1:] != token[:-1]) | (document[1:] != document[:-1])
        starts = np.flatnonzero(np.r_[len(token) > 0, changed])
        freq = np.diff(np.r_[starts, len(token)]).astype(np.uint32)
        return cls(
            np.asarray(row_ids, dtype=np.uint64)[kept],
            tokens.num_tokens[kept].astype(np.uint32),
            tokens.vocabulary,
            token[starts],
            document[starts].astype(np.uint32),
            freq,
            tokens.position[order].astype(np.uint32) if with_position else None,
        )


def write_metadata(
    directory: io.Place,
    params: InvertedParams,
    partitions: list[int],
    version: str,
    name: str = METADATA_FILE,
) -> None:
    meta = {
        "params": params_json(params),
        **FORMAT_KEYS,
        "partitions": json.dumps(partitions, separators=(",", ":")),
    }
    if params.with_position:
        meta.update(POSITION_KEYS)
    schema = pa.schema([pa.field("deleted_fragments", pa.binary(), nullable=False)])
    table = pa.Table.from_arrays([pa.array([EMPTY_ROARING], pa.binary())], schema=schema)
    files.write_table(directory.join(name), table, version, meta)


def write_partition(directory: io.Place, number: int, data: PartitionData, version: str) -> None:
    """The tokens, docs and invert files of partition ``number``."""
    _write_tokens(directory.join(tokens_file(number)), data.vocabulary, version)
    _write_docs(directory.join(docs_file(number)), data, version)
    _write_invert(directory.join(invert_file(number)), data, version)


def _write_tokens(place: io.Place, vocabulary: pa.Array, version: str) -> None:
    keys = [token.encode("utf-8") for token in vocabulary.to_pylist()]
    fst = ducer.Map.build(":memory:", sorted(zip(keys, range(len(keys)), strict=True)))
    total = pc.sum(pc.binary_length(vocabulary.cast(pa.large_string()))).as_py() or 0
    schema = pa.schema(
        [
            pa.field("_token_fst_bytes", pa.large_binary(), nullable=False),
            pa.field("_token_next_id", pa.uint32(), nullable=False),
            pa.field("_token_total_length", pa.uint64(), nullable=False),
        ]
    )
    table = pa.Table.from_arrays(
        [
            pa.array([bytes(fst)], pa.large_binary()),
            pa.array([len(keys)], pa.uint32()),
            pa.array([total], pa.uint64()),
        ],
        schema=schema,
    )
    files.write_table(place, table, version, {})


def _write_docs(place: io.Place, data: PartitionData, version: str) -> None:
    schema = pa.schema(
        [
            pa.field("_rowid", pa.uint64(), nullable=False),
            pa.field("_num_tokens", pa.uint32(), nullable=False),
        ]
    )
    table = pa.Table.from_arrays(
        [pa.array(data.row_ids, pa.uint64()), pa.array(data.num_tokens, pa.uint32())],
        schema=schema,
    )
    total = str(int(data.num_tokens.sum(dtype=np.uint64)))
    files.write_table(place, table, version, {"total_tokens": total})


@dataclass(frozen=True)
class _Blocks:
    """Where each posting falls: its token's first posting and block, its block."""

    token_starts: np.ndarray  # int64 per token + 1: first posting
    block_starts: np.ndarray  # int64 per token + 1: first global block
    block: np.ndarray  # int64 per posting: global block id
    full: np.ndarray  # bool per block

    @classmethod
    def of(cls, token: np.ndarray, n_tokens: int) -> _Blocks:
        lengths = np.bincount(token, minlength=n_tokens).astype(np.int64)
        token_starts = np.r_[0, np.cumsum(lengths)]
        n_blocks = -(-lengths // BLOCK)
        block_starts = np.r_[0, np.cumsum(n_blocks)]
        rank = np.arange(len(token), dtype=np.int64) - token_starts[token]
        block = block_starts[token] + rank // BLOCK
        sizes = np.bincount(block, minlength=int(block_starts[-1]))
        return cls(token_starts, block_starts, block, sizes == BLOCK)


def bm25_scores(data: PartitionData) -> np.ndarray:
    """Each posting's BM25 score with the partition's own statistics (float32)."""
    n_docs = np.float32(len(data.row_ids))
    avgdl = np.float32(np.float32(data.num_tokens.sum(dtype=np.uint64)) / n_docs)
    df = np.bincount(data.token, minlength=len(data.vocabulary)).astype(np.float32)
    half = np.float32(0.5)
    idf = np.log(np.float32(1) + (n_docs - df + half) / (df + half)).astype(np.float32)
    dl = data.num_tokens[data.doc].astype(np.float32)
    norm = K1 * (np.float32(1) - B + B * dl / avgdl)
    f = data.freq.astype(np.float32)
    scores: np.ndarray = idf[data.token] * (f * (K1 + np.float32(1)) / (f + norm))
    return scores.astype(np.float32)


def _before(sizes: np.ndarray) -> np.ndarray:
    """Each item's start when items of ``sizes`` are laid end to end (int64)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    starts: np.ndarray = np.cumsum(sizes) - sizes
    return starts


def _round_up(scores: np.ndarray) -> np.ndarray:
    for _ in range(SCORE_SLACK_ULPS):
        scores = np.nextafter(scores, np.float32(np.inf))
    return scores


def _put_u32(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    raw = np.ascontiguousarray(values.astype("<u4")).view(np.uint8).reshape(-1, 4)
    out[at[:, None] + np.arange(4)] = raw


def _put_packed(out: np.ndarray, at: np.ndarray, values: np.ndarray, widths: np.ndarray) -> None:
    """Pack each row of ``values`` (n, 128) with its width at byte ``at``."""
    for width in np.unique(widths).tolist():
        if width == 0:
            continue
        chosen = np.flatnonzero(widths == width)
        packed = codecs.pack_blocks(values[chosen], width)
        out[at[chosen][:, None] + np.arange(16 * width)] = packed


def _scatter(out: np.ndarray, at: np.ndarray, data: np.ndarray, sizes: np.ndarray) -> None:
    """Copy consecutive runs of ``data`` (``sizes`` bytes each) to bytes ``at``."""
    sources = _before(sizes).astype(np.int64)
    out[np.repeat(at - sources, sizes) + np.arange(int(sizes.sum()))] = data


def _lists(counts: np.ndarray, sizes: np.ndarray, data: np.ndarray) -> pa.Array:
    """A list<large_binary> array: ``counts`` items per row, item i of ``sizes[i]`` bytes."""
    values = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(sizes),
        [None, pa.py_buffer(np.r_[0, np.cumsum(sizes)].astype(np.int64)), pa.py_buffer(data)],
    )
    offsets = pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32), pa.int32())
    return pa.ListArray.from_arrays(offsets, values)


def encode_postings(
    data: PartitionData, blocks: _Blocks, block_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The posting blocks' bytes (global block order) and each block's size."""
    first = np.r_[True, blocks.block[1:] != blocks.block[:-1]]
    deltas = np.where(first, 0, data.doc.astype(np.int64) - np.r_[0, data.doc[:-1]]).astype(
        np.uint32
    )
    in_full = blocks.full[blocks.block]
    full_deltas = deltas[in_full].reshape(-1, BLOCK)
    full_freqs = data.freq[in_full].reshape(-1, BLOCK)
    doc_widths = codecs.bit_width(full_deltas.max(axis=1, initial=0)).astype(np.int64)
    freq_widths = codecs.bit_width(full_freqs.max(axis=1, initial=0)).astype(np.int64)
    # Tail blocks: first doc absolute, doc gaps, then the freqs, as varints.
    tail = ~in_full
    tail_owner = blocks.block[tail]
    tail_docs = np.where(first[tail], data.doc[tail], deltas[tail]).astype(np.uint64)
    values = np.concatenate([tail_docs, data.freq[tail].astype(np.uint64)])
    owners = np.concatenate([tail_owner, tail_owner])
    order = np.argsort(owners, kind="stable")
    values, owners = values[order], owners[order]
    n_blocks = len(blocks.full)
    varint_sizes = np.bincount(owners, weights=codecs.varint_lengths(values), minlength=n_blocks)
    sizes = np.zeros(n_blocks, dtype=np.int64)
    sizes[blocks.full] = 10 + 16 * (doc_widths + freq_widths)
    sizes[~blocks.full] = 4 + varint_sizes.astype(np.int64)[~blocks.full]
    starts = _before(sizes).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    _put_u32(out, starts, block_scores.view(np.uint32))
    full_at = starts[blocks.full]
    _put_u32(out, full_at + 4, data.doc[in_full][::BLOCK])
    out[full_at + 8] = doc_widths
    _put_packed(out, full_at + 9, full_deltas, doc_widths)
    freq_at = full_at + 9 + 16 * doc_widths
    out[freq_at] = freq_widths
    _put_packed(out, freq_at + 1, full_freqs, freq_widths)
    tail_blocks = np.flatnonzero(~blocks.full)
    _scatter(out, starts[tail_blocks] + 4, codecs.encode_varints(values), (sizes - 4)[tail_blocks])
    return out, sizes


def encode_impacts(
    data: PartitionData, blocks: _Blocks
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every token's impact entries (its blocks', then its groups of 32 blocks'):
    the bytes, each entry's size, and the number of entries per token."""
    norms = codecs.quantize_lengths(data.num_tokens)[data.doc]
    n_tokens = len(blocks.token_starts) - 1
    n_blocks = np.diff(blocks.block_starts)
    n_groups = -(-n_blocks // GROUP_BLOCKS)
    group_starts = np.r_[0, np.cumsum(n_groups)]
    local_block = blocks.block - blocks.block_starts[data.token]
    group = group_starts[data.token] + local_block // GROUP_BLOCKS
    parts = []
    for keys, count in (
        (blocks.block, int(blocks.block_starts[-1])),
        (group, int(group_starts[-1])),
    ):
        last = np.flatnonzero(np.r_[keys[1:] != keys[:-1], True])
        g, f, q = codecs.frontier(data.freq, norms, keys)
        assert len(last) == count
        parts.append(codecs.encode_impacts(data.doc[last], g, f, q))
    (block_bytes, block_offsets), (group_bytes, group_offsets) = parts
    sizes = np.r_[np.diff(block_offsets), np.diff(group_offsets)]
    token_of = np.r_[
        np.repeat(np.arange(n_tokens), n_blocks), np.repeat(np.arange(n_tokens), n_groups)
    ]
    order = np.argsort(token_of, kind="stable")
    sources = np.r_[block_offsets[:-1], group_offsets[:-1] + len(block_bytes)][order]
    everything = np.concatenate([block_bytes, group_bytes])
    sizes = sizes[order]
    gather = np.repeat(sources - _before(sizes), sizes) + np.arange(int(sizes.sum()))
    return everything[gather], sizes, n_blocks + n_groups


def encode_positions(
    data: PartitionData, blocks: _Blocks
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions' shared streams: the bytes, each token's byte size, and each
    block's byte offset within its token's bytes."""
    assert data.positions is not None
    n_postings = len(data.doc)
    posting = np.repeat(np.arange(n_postings), data.freq)
    occurrence_starts = np.r_[0, np.cumsum(data.freq, dtype=np.int64)]
    first = np.zeros(len(posting), dtype=bool)
    first[occurrence_starts[:-1]] = True
    previous = np.r_[0, data.positions[:-1]].astype(np.int64)
    gaps = np.where(first, data.positions, data.positions.astype(np.int64) - previous)
    block = blocks.block[posting]
    n_blocks = len(blocks.full)
    counts = np.bincount(block, minlength=n_blocks).astype(np.int64)
    block_occ_starts = np.r_[0, np.cumsum(counts)]
    rank = np.arange(len(posting), dtype=np.int64) - block_occ_starts[block]
    n_chunks = counts // BLOCK
    packed = rank < (n_chunks * BLOCK)[block]
    chunk_values = gaps[packed].reshape(-1, BLOCK).astype(np.uint32)
    widths = codecs.bit_width(chunk_values.max(axis=1, initial=0)).astype(np.int64)
    tail_values = gaps[~packed].astype(np.uint64)
    tail_owner = block[~packed]
    tail_sizes = np.bincount(
        tail_owner, weights=codecs.varint_lengths(tail_values), minlength=n_blocks
    ).astype(np.int64)
    chunk_sizes = 1 + 16 * widths
    chunk_block = np.repeat(np.arange(n_blocks), n_chunks)
    packed_sizes = np.bincount(chunk_block, weights=chunk_sizes, minlength=n_blocks).astype(
        np.int64
    )
    block_sizes = packed_sizes + tail_sizes
    block_at = _before(block_sizes).astype(np.int64)
    chunk_at = _before(chunk_sizes).astype(np.int64)
    chunk_at += block_at[chunk_block] - _before(packed_sizes)[chunk_block]
    out = np.zeros(int(block_sizes.sum()), dtype=np.uint8)
    out[chunk_at] = widths
    _put_packed(out, chunk_at + 1, chunk_values, widths)
    with_tail = np.flatnonzero(tail_sizes)
    _scatter(
        out,
        (block_at + packed_sizes)[with_tail],
        codecs.encode_varints(tail_values),
        tail_sizes[with_tail],
    )
    token_at = block_at[blocks.block_starts[:-1]] if n_blocks else np.zeros(0, np.int64)
    token_sizes = np.diff(np.r_[token_at, len(out)])
    block_token = np.repeat(np.arange(len(token_at)), np.diff(blocks.block_starts))
    relative = block_at - token_at[block_token]
    return out, token_sizes, relative


def _write_invert(place: io.Place, data: PartitionData, version: str) -> None:
    n_tokens = len(data.vocabulary)
    blocks = _Blocks.of(data.token, n_tokens)
    block_scores = _round_up(
        np.maximum.reduceat(
            bm25_scores(data), np.r_[0, np.flatnonzero(blocks.block[1:] != blocks.block[:-1]) + 1]
        )
    )
    posting_bytes, posting_sizes = encode_postings(data, blocks, block_scores)
    n_blocks = np.diff(blocks.block_starts)
    max_scores = np.maximum.reduceat(block_scores, blocks.block_starts[:-1])
    impact_bytes, impact_sizes, impact_counts = encode_impacts(data, blocks)
    columns = [
        pa.field("_posting", pa.list_(pa.large_binary()), nullable=False),
        pa.field("_max_score", pa.float32(), nullable=False),
        pa.field("_length", pa.uint32(), nullable=False),
        pa.field("_impacts", pa.list_(pa.large_binary()), nullable=False),
    ]
    arrays = [
        _lists(n_blocks, posting_sizes, posting_bytes),
        pa.array(max_scores, pa.float32()),
        pa.array(np.diff(blocks.token_starts).astype(np.uint32), pa.uint32()),
        _lists(impact_counts, impact_sizes, impact_bytes),
    ]
    meta = dict(INVERT_KEYS)
    if data.positions is not None:
        stream, token_sizes, relative = encode_positions(data, blocks)
        columns += [
            pa.field("_compressed_position", pa.large_binary(), nullable=False),
            pa.field("_position_block_offset", pa.list_(pa.uint32()), nullable=False),
        ]
        arrays += [
            pa.LargeBinaryArray.from_buffers(
                pa.large_binary(),
                n_tokens,
                [
                    None,
                    pa.py_buffer(np.r_[0, np.cumsum(token_sizes)].astype(np.int64)),
                    pa.py_buffer(stream),
                ],
            ),
            pa.ListArray.from_arrays(
                pa.array(blocks.block_starts.astype(np.int32), pa.int32()),
                pa.array(relative.astype(np.uint32), pa.uint32()),
            ),
        ]
        meta.update(POSITION_KEYS)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(columns))
    files.write_table(place, table, version, meta)


def write_index(
    directory: io.Place,
    partitions: list[tuple[int, PartitionData]],
    params: InvertedParams,
    version: str,
    carried: list[int] | None = None,
) -> list[int]:
    """Write the partitions that hold documents and ``metadata.lance`` listing them
    after the ``carried`` partitions already in ``directory``."""
    check_writable(params)
    written = list(carried or [])
    for number, data in partitions:
        if len(data.row_ids):
            write_partition(directory, number, data, version)
            written.append(number)
    write_metadata(directory, params, written, version)
    return written


def read_partition(part: Partition) -> PartitionData:
    """A partition's contents decoded back (one token at a time)."""
    n_tokens = part.num_token_ids
    vocabulary = [""] * n_tokens
    for token, token_id in part.tokens():
        vocabulary[token_id] = token
    docs, freqs, positions = [], [], []
    for token_id in range(n_tokens):
        found_docs, found_freqs = part.postings(token_id)
        docs.append(found_docs)
        freqs.append(found_freqs)
        if part.with_position:
            positions.append(part.positions(token_id)[1])
    lengths = np.array([len(d) for d in docs], dtype=np.int64)
    return PartitionData(
        part.row_ids,
        part.num_tokens,
        pa.array(vocabulary, pa.string()),
        np.repeat(np.arange(n_tokens, dtype=np.int64), lengths),
        np.concatenate([np.zeros(0, np.uint32), *docs]),
        np.concatenate([np.zeros(0, np.uint32), *freqs]),
        np.concatenate([np.zeros(0, np.uint32), *positions]) if part.with_position else None,
    )


def remapped(data: PartitionData, mapping: AddressMapping) -> PartitionData:
    """The partition after rows moved: row ids changed by ``mapping``, documents of
    removed rows dropped (with their postings and positions), tokens left without
    documents dropped; documents and tokens keep their order (as pylance remaps)."""
    moved, alive = mapping.apply(data.row_ids)
    new_doc = np.cumsum(alive, dtype=np.int64) - 1
    keep = alive[data.doc]
    token = data.token[keep]
    counts = np.bincount(token, minlength=len(data.vocabulary))
    kept_tokens = counts > 0
    new_token = np.cumsum(kept_tokens, dtype=np.int64) - 1
    positions = None
    if data.positions is not None:
        positions = data.positions[np.repeat(keep, data.freq)]
    return PartitionData(
        moved[alive],
        data.num_tokens[alive],
        data.vocabulary.filter(pa.array(kept_tokens)),
        new_token[token],
        new_doc[data.doc[keep]].astype(np.uint32),
        data.freq[keep],
        positions,
    )


def merged(parts: list[PartitionData]) -> PartitionData:
    """One partition holding the documents of ``parts``, one after the other.  Token
    ids follow the order tokens are first met in the merged documents: a partition's
    new tokens in its own token id order (which is its first-met order)."""
    doc_base = _before(np.array([len(p.row_ids) for p in parts], dtype=np.int64))
    names: dict[str, int] = {}
    tokens, docs, vocab_maps = [], [], []
    for part, base in zip(parts, doc_base.tolist(), strict=True):
        mapping = np.empty(len(part.vocabulary), dtype=np.int64)
        for i, name in enumerate(part.vocabulary.to_pylist()):  # once per token
            mapping[i] = names.setdefault(name, len(names))
        vocab_maps.append(mapping)
        tokens.append(mapping[part.token])
        docs.append(part.doc.astype(np.int64) + base)
    token = np.concatenate([np.zeros(0, np.int64), *tokens])
    doc = np.concatenate([np.zeros(0, np.int64), *docs])
    order = np.lexsort((doc, token))  # postings by token, then document
    freq = np.concatenate([np.zeros(0, np.uint32), *(p.freq for p in parts)])
    positions = None
    if all(p.positions is not None for p in parts):
        flat = np.concatenate([np.zeros(0, np.uint32), *(p.positions for p in parts)])
        starts = _before(freq)
        occurrence = np.repeat(starts[order], freq[order]) + _ranks(freq[order])
        positions = flat[occurrence]
    return PartitionData(
        np.concatenate([np.zeros(0, np.uint64), *(p.row_ids for p in parts)]),
        np.concatenate([np.zeros(0, np.uint32), *(p.num_tokens for p in parts)]),
        pa.array(list(names), pa.string()),
        token[order],
        doc[order].astype(np.uint32),
        freq[order],
        positions,
    )


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., counts[i] - 1 for each i, concatenated."""
    counts = np.asarray(counts, dtype=np.int64)
    ranks: np.ndarray = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        _before(counts), counts
    )
    return ranks
