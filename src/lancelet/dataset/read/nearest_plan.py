"""The plan of a nearest-neighbour scan (``explain_plan``), in the node names and
attributes of pylance 14's, for the steps lancelet takes (measured on pylance's plans
of flat, indexed, partly indexed, refined, prefiltered and batch searches):

* ``KNNVectorDistance: metric=l2`` scores vectors exactly (a flat search, a refine, or
  the index's candidates merged with the fragments the index does not cover), under
  ``FilterExec: _distance IS NOT NULL`` and a ``SortExec: TopK``;
* ``ANNSubIndex: name=, k=, deltas=, metric=`` searches the index's segments, probing
  as ``ANNIvfPartition: uuid=, minimum_nprobes=, maximum_nprobes=, deltas=`` says
  (an explicit ``nprobes`` is both bounds); a prefilter's scan is its second child;
* ``MultivectorScoring: k=`` scores a multivector query's candidates, each query
  vector's found by its own index search;
* ``LanceRead: ..., source=stream(_rowid)`` reads the columns of the rows found.

lancelet's own order of steps is kept where it differs from pylance's: the rows found
are read, then postfiltered, then sliced (``GlobalLimitExec``), then projected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lancelet.dataset.read.ivf_search import IndexPlan
from lancelet.dataset.read.multivector_search import OVERFETCH
from lancelet.dataset.read.nearest import DISTANCE, QUERY_INDEX, NearestQuery
from lancelet.dataset.read.projection import ROW_ID

# pylance names an index's metric in its Rust spelling, a flat search's in lower case.
_INDEX_METRICS = {"l2": "L2", "cosine": "Cosine", "dot": "Dot", "hamming": "Hamming"}

_ORDER = f"{DISTANCE} ASC NULLS LAST, {ROW_ID} ASC NULLS LAST"


@dataclass(frozen=True)
class Node:
    text: str
    children: tuple[Node, ...] = ()

    def lines(self, depth: int = 0) -> list[str]:
        found = ["  " * depth + self.text]
        for child in self.children:
            found.extend(child.lines(depth + 1))
        return found


@dataclass(frozen=True)
class NearestPlan:
    """What a nearest scan does, as its plan shows it."""

    uri: str
    query: NearestQuery
    index: IndexPlan | None
    # The metric the search measures (the index's when it has one).
    metric: str
    fast_search: bool
    searched_fragments: int
    prefilter: str | None
    postfilter: str | None
    # The dataset columns read for the rows found, and the output's columns.
    reads: Sequence[str]
    outputs: Sequence[str]
    offset: int
    limit: int | None

    def text(self) -> str:
        return "\n".join(self._root().lines()) + "\n"

    def _root(self) -> Node:
        node = self._batch() if self.query.batch else self._search()
        if self.reads:
            columns = ", ".join(self.reads)
            node = Node(
                f"LanceRead: uri={self.uri}, projection=[{columns}], source=stream({ROW_ID})",
                (node,),
            )
        if self.postfilter is not None:
            node = Node(f"FilterExec: {self.postfilter}", (node,))
        if self.offset or self.limit is not None:
            node = Node(f"GlobalLimitExec: skip={self.offset}, fetch={self.limit}", (node,))
        return Node(f"ProjectionExec: expr=[{', '.join(self.outputs)}]", (node,))

    def _batch(self) -> Node:
        """Every query's search, then all rows by query, distance and row id."""
        each = tuple(
            Node(
                f"ProjectionExec: expr=[{number} as {QUERY_INDEX}, {ROW_ID}, {DISTANCE}]",
                (self._search(),),
            )
            for number in range(len(self.query.queries))
        )
        return Node(
            f"SortExec: expr=[{QUERY_INDEX} ASC NULLS LAST, {_ORDER}]",
            (Node("UnionExec", each),),
        )

    def _search(self) -> Node:
        """One query's k nearest rows."""
        index = self.index
        if index is None:
            return self._flat(self.searched_fragments)
        if self.query.multivector:
            return self._multivector()
        refine = index.refine_factor
        found = self._refined(refine) if refine is not None else self._read_vectors(self._ann(1))
        if self.fast_search or not index.unindexed:
            return self._ann(1) if refine is None else found
        union = Node("UnionExec", (self._flat(len(index.unindexed)), found))
        return self._exact(self.query.k, union)

    def _multivector(self) -> Node:
        """Each query vector's over-fetched candidates, scored together (XTR)."""
        each = tuple(self._ann(OVERFETCH) for _ in range(len(self.query.queries)))
        scoring = Node(f"MultivectorScoring: k={self.query.k}", each)
        return Node(f"SortExec: TopK(fetch={self.query.k}), expr=[{_ORDER}]", (scoring,))

    def _exact(self, k: int, child: Node) -> Node:
        """The k best of ``child``'s rows by exact distance."""
        return Node(
            f"FilterExec: {DISTANCE} IS NOT NULL",
            (
                Node(
                    f"SortExec: TopK(fetch={k}), expr=[{_ORDER}]",
                    (Node(f"KNNVectorDistance: metric={self.metric}", (child,)),),
                ),
            ),
        )

    def _flat(self, fragments: int) -> Node:
        read = (
            f"LanceRead: uri={self.uri}, projection=[{self.query.column}], "
            f"num_fragments={fragments}, row_id=true, full_filter={self.prefilter or '--'}"
        )
        return self._exact(self.query.k, Node(read))

    def _refined(self, refine: int) -> Node:
        """The index's k * refine_factor candidates re-scored exactly."""
        return self._exact(self.query.k, self._read_vectors(self._ann(refine)))

    def _read_vectors(self, child: Node) -> Node:
        text = f"LanceRead: uri={self.uri}, projection=[{self.query.column}], "
        return Node(text + f"source=stream({ROW_ID})", (child,))

    def _ann(self, refine: int) -> Node:
        """The index search keeping the k * ``refine`` best by index distance."""
        index = self.index
        assert index is not None
        k = self.query.k * refine
        deltas = len(index.segments)
        low, high = probe_bounds(index, self.query.tuning)
        children = [
            Node(
                f"ANNIvfPartition: uuid={index.segment.uuid}, minimum_nprobes={low}, "
                f"maximum_nprobes={high}, deltas={deltas}"
            )
        ]
        if self.prefilter is not None:
            children.append(
                Node(
                    f"LanceRead: uri={self.uri}, projection=[], "
                    f"num_fragments={len(index.indexed)}, row_id=true, "
                    f"full_filter={self.prefilter}"
                )
            )
        metric = _INDEX_METRICS.get(self.metric, self.metric)
        search = Node(
            f"ANNSubIndex: name={index.segment.name}, k={k}, deltas={deltas}, metric={metric}",
            tuple(children),
        )
        return Node(f"SortExec: TopK(fetch={k}), expr=[{_ORDER}]", (search,))


def probe_bounds(index: IndexPlan, tuning: Mapping[str, Any]) -> tuple[int, str]:
    """The least and most partitions the search probes, as pylance prints them
    (``maximum_nprobes=None`` when unbounded, ``Some(n)`` otherwise)."""
    if index.nprobes is not None:
        return index.nprobes, f"Some({index.nprobes})"
    low = tuning.get("minimum_nprobes")
    high = tuning.get("maximum_nprobes")
    return max(1, int(low or 1)), "None" if high is None else f"Some({int(high)})"
