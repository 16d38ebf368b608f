"""An INVERTED index segment as the scalar index registry handles one: built from a
column's (values, row ids) batches, opened for its statistics.

A segment answers no filter (full-text search goes through ``full_text_query``), so
its ``search`` always declines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import UnsupportedIndexError, UnsupportedOptionError, UnsupportedTypeError
from lancelet.expr import IndexQuery
from lancelet.index import files
from lancelet.index._files import IndexDetails
from lancelet.index.base import SearchResult
from lancelet.index.fts import analyzer, details, writer
from lancelet.index.fts.params import InvertedParams
from lancelet.index.fts.reader import InvertedIndex, docs_file, invert_file, tokens_file
from lancelet.index.remapping import AddressMapping

_STRINGS = (pa.string(), pa.large_string())


def is_text(dtype: pa.DataType) -> bool:
    """Whether an INVERTED index can be built on values of ``dtype``."""
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return dtype.value_type in _STRINGS
    return dtype in _STRINGS


def write_inverted(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
    **kwargs: Any,
) -> IndexDetails:
    """Analyze every row (in row order) and write one partition; the details.

    With ``previous_segments`` (passed by ``optimize_indices``, never by users) the
    partitions of those INVERTED indices are carried over as partition 0, and the
    rows become partition 1, analyzed with their parameters: as
    pylance 14 extends an index, old documents (deleted rows too) stay indexed;
    ``parameters_of`` names the segment whose parameters a new segment takes."""
    previous: tuple[io.Place, ...] = kwargs.pop("previous_segments", ())
    template: io.Place | None = kwargs.pop("parameters_of", None)
    sources = [InvertedIndex.open(place) for place in previous]
    if template is not None:
        params = InvertedIndex.open(template).params
    else:
        params = details.parameters(kwargs)
    data = analyzed_partition(batches, value_type, params)
    carried = _carry_partitions(sources, directory, params, version)
    writer.write_index(directory, [(len(carried), data)], params, version, carried)
    return details.inverted_details(params)


def analyzed_partition(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    value_type: pa.DataType,
    params: InvertedParams,
) -> writer.PartitionData:
    """One partition of every row of ``batches`` (in row order), analyzed with
    ``params``."""
    writer.check_writable(params)
    if not is_text(value_type):
        raise UnsupportedTypeError(
            f"an INVERTED index needs a string, large_string or list of strings column, "
            f"not {value_type}"
        )
    values, rows = [], []
    for batch, ids in batches:
        values.append(batch)
        rows.append(np.asarray(ids, dtype=np.uint64))
    texts = (
        pa.chunked_array(values, value_type).combine_chunks()
        if values
        else pa.array([], value_type)
    )
    row_ids = np.concatenate([np.zeros(0, np.uint64), *rows])
    if not pa.types.is_string(texts.type) and not pa.types.is_large_string(texts.type):
        texts = _joined(texts, params)
    tokens = analyzer.analyze(texts, params)
    return writer.PartitionData.from_tokens(tokens, row_ids, params.with_position)


def _joined(lists: pa.Array, params: InvertedParams) -> pa.Array:
    """Each row's strings as one text.  pylance makes a list row one document whose
    positions run on from element to element (measured), which is what splitting
    the elements joined by a space gives for the simple and whitespace tokenizers."""
    if params.base_tokenizer not in ("simple", "whitespace"):
        raise UnsupportedOptionError(
            f"INVERTED index: lancelet indexes lists of strings with the simple and "
            f"whitespace tokenizers only, not {params.base_tokenizer!r}"
        )
    lists = lists.cast(pa.large_list(pa.large_string()))
    filled = pa.LargeListArray.from_arrays(
        lists.offsets, pc.fill_null(lists.values, ""), mask=lists.is_null()
    )
    return pc.binary_join(filled, pa.scalar(" ", pa.large_string()))


def _carry_partitions(
    sources: list[InvertedIndex], directory: io.Place, params: InvertedParams, version: str
) -> list[int]:
    """The partitions of ``sources`` as partition 0 of ``directory``: one is copied as
    it is, several are merged into one (pylance 14 keeps an extended index at two
    partitions, the old documents' and the new rows'; the order it merges them in was
    not established); their numbers."""
    for index in sources:
        if index.params != params:
            raise UnsupportedIndexError(
                "optimize_indices: the INVERTED segments to merge were built with "
                "different parameters"
            )
    parts = [part for index in sources for part in index.partitions]
    if len(parts) == 1:
        (part,) = parts
        for name in (tokens_file, docs_file, invert_file):
            source = part.directory.join(name(part.number))
            target = directory.join(name(0))
            target.file_io.put(target.path, source.file_io.read_bytes(source.path))
        return [0]
    if not parts:
        return []
    data = writer.merged([writer.read_partition(part) for part in parts])
    writer.write_partition(directory, 0, data, version)
    return [0]


@dataclass(frozen=True)
class InvertedSegment:
    """An INVERTED index segment opened for the registry."""

    index: InvertedIndex
    params_text: str

    @classmethod
    def open(cls, directory: io.Place, value_type: pa.DataType) -> InvertedSegment:
        del value_type  # the index records its own parameters
        index = InvertedIndex.open(directory)
        return cls(index, writer.params_json(index.params))

    def remap(self, mapping: AddressMapping, out_directory: io.Place, version: str) -> int:
        """Write this index with its documents' row addresses changed by ``mapping``
        (removed rows' documents dropped) into ``out_directory``; its partitions."""
        parts = [
            writer.remapped(writer.read_partition(part), mapping) for part in self.index.partitions
        ]
        written = writer.write_index(
            out_directory,
            list(enumerate(parts)),
            self.index.params,
            files.writable_version(version),
        )
        return len(written)

    def search(self, query: IndexQuery) -> SearchResult | None:
        return None

    def statistics(self) -> dict[str, Any]:
        """As pylance's ``index_stats(name)["indices"][i]``: the parameters, the tokens
        summed over partitions, and the documents."""
        return {
            "params": json.loads(self.params_text),
            "num_tokens": sum(p.vocabulary_size() for p in self.index.partitions),
            "num_docs": self.index.num_docs,
        }
