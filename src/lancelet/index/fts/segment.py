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

from lancelet import io
from lancelet.errors import UnsupportedTypeError
from lancelet.expr import IndexQuery
from lancelet.index._files import IndexDetails
from lancelet.index.base import SearchResult
from lancelet.index.fts import analyzer, details, writer
from lancelet.index.fts.reader import InvertedIndex

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
    """Analyze every row (in row order) and write one partition; the details."""
    params = details.parameters(kwargs)
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
    tokens = analyzer.analyze(texts, params)
    data = writer.PartitionData.from_tokens(tokens, row_ids, params.with_position)
    writer.write_index(directory, [(0, data)], params, version)
    return details.inverted_details(params)


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
