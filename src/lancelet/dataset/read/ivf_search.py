"""A nearest-neighbour scan answered through a pylance IVF_FLAT / IVF_PQ / IVF_SQ /
IVF_RQ / IVF_HNSW_* index, as pylance 14 answers it (measured; see
``docs/vector-index-format.md``):

* the ``nprobes`` partitions nearest the query are searched; of their rows, those
  deleted since the index was built, in fragments the version no longer has, or
  (with ``prefilter=True``) failing the filter are dropped *before* the best are
  chosen, so a prefilter still finds k rows when the probed partitions hold them;
* the ``k * refine_factor`` best by index distance (exact for IVF_FLAT, the PQ /
  SQ / RaBitQ estimate otherwise; an HNSW partition offers those its graph search
  of ``ef`` finds) are kept; with a ``refine_factor`` they are re-scored exactly
  from the dataset's vectors and the k best kept;
* fragments the index does not cover (appended after it) are searched exactly
  (unless ``fast_search``); when there are any, the index's k candidates are
  re-scored exactly too and the k best of both kept, so every ``_distance`` is
  exact;
* rows come by distance, then row id; a postfilter then filters those k (the
  scanner's job), so fewer may come back.

An index of several segments (deltas) is searched as one: every segment's probed
rows are pooled before ranking (:mod:`ivf_segments`), which also maps the rows a
segment lists (stable row ids, addresses from before a deferred compaction remap)
to the version's rows.

What lancelet cannot answer as pylance does is refused, naming it: other index
types, several segments, a Fragment Reuse Index or stable row ids on an index
other than IVF_FLAT / IVF_PQ, non-float32 vectors, ``distance_range`` and equal
index distances straddling the cut to k (``TiedCutError``).  Without an explicit
``nprobes`` the partitions probed are pylance's automatic count as measured, or more
(:mod:`lancelet.index.vector.probing`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.read import frag_reuse, multivector_search
from lancelet.dataset.read.flat_search import FlatSearch
from lancelet.dataset.read.ivf_segments import Probed, Segment, open_segments, pooled
from lancelet.dataset.read.nearest import DISTANCE, QUERY_INDEX, NearestQuery, vector_field_id
from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID
from lancelet.dataset.read.take import MISSING
from lancelet.errors import ArgumentError, UnsupportedVectorIndexError, VectorQueryError
from lancelet.index.vector import IvfIndex, float32_distance, layout
from lancelet.index.vector.distance import exact
from lancelet.index.vector.hnsw import TiedCutError
from lancelet.index.vector.ivf import members
from lancelet.index.vector.probing import Probing
from lancelet.io import accounting
from lancelet.table import naming
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata, index_type
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

READ_TYPES = layout.SUPPORTED_TYPES

# Types whose segments are pooled (several segments, remapped or stable row ids).
POOLED_TYPES = ("IVF_FLAT", "IVF_PQ")

# Row addresses -> their (rows, dimension) vectors, read from the dataset.
VectorLookup = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class IndexPlan:
    """How a query goes through a vector index: its segments, how many partitions
    to probe (None: all), the fragments they cover and those they do not."""

    segments: tuple[IndexMetadata, ...]
    nprobes: int | None
    refine_factor: int | None
    indexed: list[Fragment]
    unindexed: list[Fragment]
    # Without an explicit nprobes: pylance's automatic count (see index.vector.probing).
    probing: Probing | None = None

    @property
    def segment(self) -> IndexMetadata:
        """The first segment: the index's name and type are its."""
        return self.segments[0]


def index_plan(
    store: DatasetStore, manifest: Manifest, query: NearestQuery, where: str
) -> IndexPlan | None:
    """The plan of a search through the column's vector index; None when the column
    has none or ``use_index`` is False.  Anything lancelet cannot answer as pylance
    does is refused with :class:`UnsupportedVectorIndexError`."""
    field_id = vector_field_id(manifest.schema, query.field_path)
    segments = [i for i in manifest.indices if not i.is_system and field_id in i.fields]
    if not segments or not query.use_index:
        return None
    segment = segments[0]
    label = f"{where}: column {query.column!r} has the {index_type(segment.index_details)} "
    label += f"index {segment.name!r}"
    _refuse_unreadable(manifest, query, segments, label)
    covered = _covered(store, manifest, segments)
    refine = query.tuning.get("refine_factor")
    nprobes, probing = _probing(query, label)
    return IndexPlan(
        tuple(segments),
        nprobes,
        None if refine is None else int(refine),
        [f for f in manifest.fragments if f.id in covered],
        [f for f in manifest.fragments if f.id not in covered],
        probing,
    )


def _covered(store: DatasetStore, manifest: Manifest, segments: list[IndexMetadata]) -> set[int]:
    """The fragments the segments hold now (carried through a Fragment Reuse Index)."""
    reuse = frag_reuse.reuse_map(store, manifest)
    covered: set[int] = set()
    for segment in segments:
        held = frag_reuse.coverage(reuse, segment, manifest)
        assert held is not None
        covered.update(held)
    return covered


def _refuse_unreadable(
    manifest: Manifest, query: NearestQuery, segments: list[IndexMetadata], label: str
) -> None:
    kind = index_type(segments[0].index_details)
    kinds = {index_type(s.index_details) for s in segments}
    reasons = [
        (kind not in READ_TYPES, f"lancelet reads {', '.join(READ_TYPES)} vector indices only"),
        (len(kinds) > 1, f"its segments are of different types ({sorted(kinds)})"),
        (
            kind.startswith("IVF_HNSW_")
            and frag_reuse.reuse_index(manifest) is not None
            and not manifest.stable_row_ids,
            "lancelet does not search graphs through a Fragment Reuse Index's remap "
            "(pylance 14 fails on them once the compaction dropped rows: its graph "
            "keeps nodes its storage lost); create_index(..., replace=True) rebuilds it",
        ),
        (
            any(s.fragment_bitmap is None for s in segments),
            "it records no fragment coverage",
        ),
        (
            query.element == np.uint8 and _needs_pooling(manifest, segments),
            "lancelet searches a hamming index of one segment, without stable row ids "
            "or a Fragment Reuse Index, only",
        ),
        (
            not _reads_element(kind, query.element),
            f"lancelet searches {kind} indices of float32 vectors only, not {query.element}",
        ),
        (
            query.multivector and query.tuning.get("refine_factor") is not None,
            "lancelet does not refine a multivector search",
        ),
        (
            query.lower is not None or query.upper is not None,
            "lancelet does not apply distance_range in an index search",
        ),
        *_rabitq_reasons(kind, query),
    ]
    for refused, reason in reasons:
        if refused:
            raise UnsupportedVectorIndexError(
                f"{label}: {reason} (pass use_index=False in nearest for an exact search)"
            )


def _reads_element(kind: str, element: np.dtype) -> bool:
    """IVF_FLAT / IVF_PQ / IVF_SQ of float16, float32 and float64 vectors, IVF_FLAT
    of uint8 (hamming) ones; float32 for the other types."""
    if element == np.float32:
        return True
    if element == np.uint8:
        return kind == "IVF_FLAT"
    return kind in ("IVF_FLAT", "IVF_PQ", "IVF_SQ")


def _rabitq_reasons(kind: str, query: NearestQuery) -> list[tuple[bool, str]]:
    """pylance's IVF_RQ answer changes with approx_mode (fast: one-bit
    estimates; accurate: a 16-bit table) and can with a parallel partition search
    (per-partition heaps); lancelet reproduces the default sequential search."""
    if kind != "IVF_RQ":
        return []
    mode = query.tuning.get("approx_mode", "normal")
    parallelism = query.tuning.get("query_parallelism", 0)
    return [
        (mode != "normal", f"lancelet searches IVF_RQ with approx_mode 'normal', not {mode!r}"),
        (
            parallelism not in (0, 1),
            f"lancelet searches IVF_RQ partitions one after another, not with "
            f"query_parallelism {parallelism}",
        ),
    ]


def _needs_pooling(manifest: Manifest, segments: list[IndexMetadata]) -> bool:
    """Whether the search pools segments or maps the rows they list."""
    reused = frag_reuse.reuse_index(manifest) is not None
    return len(segments) > 1 or reused or manifest.stable_row_ids


def _probing(query: NearestQuery, label: str) -> tuple[int | None, Probing | None]:
    """The partitions to probe: an explicit ``nprobes`` (pylance's answer exactly),
    every partition (``search_effort=1`` without ``maximum_nprobes``), or else
    pylance's automatic count bounded by ``minimum_nprobes``/``maximum_nprobes``."""
    tuning = query.tuning
    effort = tuning.get("search_effort")
    bounds = {"minimum_nprobes", "maximum_nprobes"} & set(tuning)
    if "nprobes" in tuning:
        if effort is not None or bounds:
            raise UnsupportedVectorIndexError(
                f"{label}: lancelet takes nprobes alone, not with search_effort, "
                "minimum_nprobes or maximum_nprobes"
            )
        return int(tuning["nprobes"]), None
    if effort == 1 and "maximum_nprobes" not in tuning:
        return None, None
    minimum, maximum = tuning.get("minimum_nprobes"), tuning.get("maximum_nprobes")
    refine = int(tuning.get("refine_factor") or 1)
    return None, Probing(
        query.k * refine,
        None if effort is None else float(effort),
        None if minimum is None else int(minimum),
        None if maximum is None else int(maximum),
    )


def _probe_count(plan: IndexPlan, index: IvfIndex, vector: np.ndarray) -> int:
    """How many partitions of ``index`` the query first probes."""
    if plan.probing is not None:
        return plan.probing.count(index.centroid_distances(vector), index.metric)
    return index.num_partitions if plan.nprobes is None else plan.nprobes


def _ef(query: NearestQuery, index: IvfIndex, keep: int) -> int | None:
    """The graph search's breadth: the query's ``ef``, else twice the rows kept.

    pylance's default is 1.5 times the rows kept; lancelet searches wider by
    default because its graphs, built on one thread in node order, recall about
    0.004 less at pylance's default than pylance's two-thread builds (measured in
    docs/vector-index-format.md): a lancelet user with defaults recalls at least
    what pylance's does. An explicit ``ef`` gives pylance's answer."""
    ef = query.tuning.get("ef")
    if ef is None and index.graphs is not None:
        return 2 * keep
    return ef


def _more(plan: IndexPlan, found: int, wanted: int, nprobes: int, partitions: int) -> int:
    """With pylance's automatic probing, too few rows found makes it probe further
    (its late expansion): the partitions to probe next, or ``nprobes`` when done."""
    if plan.probing is None or found >= wanted or nprobes >= partitions:
        return nprobes
    maximum = plan.probing.maximum
    bigger = min(partitions, nprobes * 2)
    return bigger if maximum is None else max(nprobes, min(bigger, maximum))


def opened_segments(store: DatasetStore, manifest: Manifest, plan: IndexPlan) -> list[Segment]:
    """Every segment of the plan's index, open, with the version's row lookups."""
    return open_segments(store, manifest, [(s, opened(store, s)) for s in plan.segments])


def opened(store: DatasetStore, segment: IndexMetadata) -> IvfIndex:
    """The open index segment, kept by the store (index files never change)."""
    cache = store.index_cache("vector_indices")
    key = str(segment.uuid)
    found = cache.get(key)
    if found is None:
        found = cache[key] = IvfIndex.open(store.place(naming.INDICES_DIR, key))
        accounting.add(indices_loaded=1)
    return found


def index_search(
    segments: Sequence[Segment],
    plan: IndexPlan,
    query: NearestQuery,
    allowed: np.ndarray,
    vectors: VectorLookup,
    unindexed: Iterable[pa.RecordBatch] | None,
    where: str,
    filtered: bool = False,
) -> pa.Table:
    """The nearest rows of each query, as :meth:`FlatSearch.result` gives them.

    ``allowed``: the sorted addresses of the indexed fragments' rows that may come
    back (live, and passing a prefilter); ``vectors``: reads rows' vectors by
    address; ``unindexed``: batches of the uncovered fragments' rows (vector column,
    row id and address), None with ``fast_search``; ``filtered``: whether a
    prefilter filter made ``allowed`` (which then also keeps ghosts out, see
    :mod:`ivf_segments`)."""
    metrics = {s.index.metric for s in segments}
    if len(metrics) > 1:
        raise UnsupportedVectorIndexError(
            f"{where}: the segments of index {plan.segment.name!r} measure different "
            f"metrics ({sorted(metrics)})"
        )
    metric = segments[0].index.metric
    if query.metric_given and query.metric != metric:
        raise UnsupportedVectorIndexError(
            f"{where}: the index {plan.segment.name!r} measures {metric}, not "
            f"{query.metric}; lancelet does not search it by another metric"
        )
    query = dataclasses.replace(query, metric=metric)
    if query.multivector:
        return _multivector_search(
            segments, plan, query, allowed, vectors, unindexed, where, filtered
        )
    flat = None if unindexed is None else FlatSearch(query).add_all(unindexed).result()
    counts: list[int] = []
    parts: list[Probed] = []
    for number, vector in enumerate(query.queries):  # one step per query vector
        found = _candidates(segments, plan, query, vector, allowed, vectors, filtered, where)
        if flat is not None:
            found = _with_unindexed(query, number, vector, found, vectors, flat)
        counts.append(len(found.row_ids))
        parts.append(found)
    positions = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    ids = np.concatenate([np.zeros(0, np.uint64), *(p.row_ids for p in parts)])
    addresses = np.concatenate([np.zeros(0, np.uint64), *(p.addresses for p in parts)])
    distances = np.concatenate([np.zeros(0, np.float32), *(p.distances for p in parts)])
    return pa.table(
        {
            QUERY_INDEX: pa.array(positions, pa.int32()),
            ROW_ID: pa.array(ids.astype(np.uint64), pa.uint64()),
            ROW_ADDRESS: pa.array(addresses.astype(np.uint64), pa.uint64()),
            DISTANCE: pa.array(distances.astype(np.float32), pa.float32()),
        }
    )


def _multivector_search(
    segments: Sequence[Segment],
    plan: IndexPlan,
    query: NearestQuery,
    allowed: np.ndarray,
    vectors: VectorLookup,
    unindexed: Iterable[pa.RecordBatch] | None,
    where: str,
    filtered: bool,
) -> pa.Table:
    """The k best rows of a multivector query through the index (pylance's XTR)."""
    if unindexed is not None and plan.unindexed:
        raise UnsupportedVectorIndexError(
            f"{where}: index {plan.segment.name!r} covers a multivector column and "
            f"{len(plan.unindexed)} fragment(s) are not indexed: lancelet does not merge "
            "them into an XTR search (optimize the index, or pass fast_search=True or "
            "use_index=False)"
        )

    def candidates(vector: np.ndarray, wanted: int) -> Probed:
        asked = dataclasses.replace(query, k=wanted)
        return _candidates(segments, plan, asked, vector, allowed, vectors, filtered, where)

    found = multivector_search.xtr_search(query.queries, query.k, candidates)
    return pa.table(
        {
            QUERY_INDEX: pa.array(np.zeros(len(found.row_ids), np.int32), pa.int32()),
            ROW_ID: pa.array(found.row_ids.astype(np.uint64), pa.uint64()),
            ROW_ADDRESS: pa.array(found.addresses.astype(np.uint64), pa.uint64()),
            DISTANCE: pa.array(found.distances.astype(np.float32), pa.float32()),
        }
    )


def _candidates(
    segments: Sequence[Segment],
    plan: IndexPlan,
    query: NearestQuery,
    vector: np.ndarray,
    allowed: np.ndarray,
    vectors: VectorLookup,
    filtered: bool,
    where: str,
) -> Probed:
    """The index's best rows for one query vector: k (k * refine_factor before
    refining), by (distance, row id), over the pooled rows of every segment; ghosts
    take their places among them and then go."""
    by_address = all(s.lookup is None and s.reuse is None for s in segments)
    if len(segments) == 1 and by_address:
        found = _ranked(segments[0], plan, query, vector, allowed, where)
    elif segments[0].index.index_type not in POOLED_TYPES:
        # Each segment ranked as its type ranks (SQ heaps, HNSW walks), the best
        # of all kept: pylance merges its (segment, partition) searches so.
        ghosts = not filtered and not plan.unindexed
        each = [_ranked_keys(s, plan, query, vector, allowed, ghosts, where) for s in segments]
        found = Probed(
            np.concatenate([p.row_ids for p in each]),
            np.concatenate([p.addresses for p in each]),
            np.concatenate([p.distances for p in each]),
        )
        found = found.take(
            _best(found.distances, found.row_ids, query.k * (plan.refine_factor or 1))
        )
        found = found.take(np.flatnonzero(found.addresses != MISSING))
    else:
        wanted = query.k * (plan.refine_factor or 1)
        first, partitions = segments[0].index, segments[0].index.num_partitions
        nprobes, probed = _probe_count(plan, first, vector), 0
        while nprobes != probed:  # more only while pylance's automatic probing would
            probed = nprobes
            found = _allowed_pool(segments, vector, nprobes, allowed, filtered, plan)
            nprobes = _more(plan, len(found.row_ids), wanted, nprobes, partitions)
        best = _best(found.distances, found.row_ids, wanted)
        found = found.take(best)
        found = found.take(np.flatnonzero(found.addresses != MISSING))
    if plan.refine_factor is not None and len(found.row_ids):
        metric = segments[0].index.metric
        exact_distances = float32_distance.exact(_float32(vectors(found.addresses)), vector, metric)
        found = Probed(found.row_ids, found.addresses, exact_distances)
        found = found.take(_best(found.distances, found.row_ids, query.k))
    return found


def _allowed_pool(
    segments: Sequence[Segment],
    vector: np.ndarray,
    nprobes: int,
    allowed: np.ndarray,
    filtered: bool,
    plan: IndexPlan,
) -> Probed:
    """Every segment's rows of the ``nprobes`` probed partitions that may come back."""
    found = pooled(segments, vector, nprobes)
    keep = members(allowed, found.addresses)
    # pylance's mask lets ghosts through only when it is the deletions alone (no
    # prefilter filter, every fragment indexed): measured.
    ghosts = (found.addresses == MISSING) & (not filtered) & (not plan.unindexed)
    return found.take(np.flatnonzero(keep | ghosts))


def _ranked_keys(
    segment: Segment,
    plan: IndexPlan,
    query: NearestQuery,
    vector: np.ndarray,
    allowed: np.ndarray,
    ghosts: bool,
    where: str,
) -> Probed:
    """:func:`_ranked` for a segment keyed by stable row ids or by addresses from
    before a deferred remap: the rows allowed are named by their keys, and the
    ranked keys located.  A ghost (see :mod:`ivf_segments`) ranks where pylance
    lets it (``ghosts``: no prefilter filter, every fragment indexed) and is dropped
    after."""
    if segment.lookup is None and segment.reuse is None:
        return _ranked(segment, plan, query, vector, allowed, where)
    keys = np.asarray(segment.index.row_ids, dtype=np.uint64)
    if segment.lookup is not None:
        addresses, ghost = segment.lookup(keys)
        kept = members(allowed, addresses) | (ghost & segment.ghosts_rank & ghosts)
    else:
        assert segment.reuse is not None
        moved, alive = segment.reuse.remap(keys)
        kept = alive & members(allowed, moved)
    ranked = _ranked(segment, plan, query, vector, np.unique(keys[kept]), where)
    return segment.located(ranked.row_ids, ranked.distances)


def _ranked(
    segment: Segment,
    plan: IndexPlan,
    query: NearestQuery,
    vector: np.ndarray,
    allowed: np.ndarray,
    where: str,
) -> Probed:
    """The ``k * refine_factor`` best rows of one segment keyed by address, as its
    index type ranks them (SQ heaps, HNSW graph walks, RaBitQ's skipped rows)."""
    index = segment.index
    keep = query.k * (plan.refine_factor or 1)
    ef = _ef(query, index, keep)
    # Without an ef of its own a graph query asks for no pylance answer to match:
    # equal distances at the cut are then taken by row id, not refused.
    pinned = index.graphs is None or query.tuning.get("ef") is not None
    try:
        nprobes, probed = _probe_count(plan, index, vector), 0
        while nprobes != probed:  # more only while pylance's automatic probing would
            probed = nprobes
            ids, distances = index.ranked(vector, nprobes, keep, ef, allowed, pinned)
            nprobes = _more(plan, len(ids), keep, nprobes, index.num_partitions)
    except ArgumentError as exc:
        raise VectorQueryError(f"{where}: {exc}") from exc
    except UnsupportedVectorIndexError as exc:
        reason = "; pylance's choice among them is not reproduced" * isinstance(exc, TiedCutError)
        raise type(exc)(
            f"{where}: index {plan.segment.name!r}: {exc}{reason} (pass use_index=False in "
            "nearest for an exact search)"
        ) from exc
    ids = np.asarray(ids, dtype=np.uint64)
    return Probed(ids, ids, np.asarray(distances, dtype=np.float32))


def _with_unindexed(
    query: NearestQuery,
    number: int,
    vector: np.ndarray,
    found: Probed,
    vectors: VectorLookup,
    flat: pa.Table,
) -> Probed:
    """The index's candidates re-scored exactly and merged with the unindexed
    fragments' k nearest (``flat``, every query's): the k best of both."""
    measured = exact(query.metric, _float32(vectors(found.addresses)), vector)
    mine = flat.filter(pc.equal(flat[QUERY_INDEX], number))
    pool = Probed(
        np.concatenate([found.row_ids, mine[ROW_ID].to_numpy()]).astype(np.uint64),
        np.concatenate([found.addresses, mine[ROW_ADDRESS].to_numpy()]).astype(np.uint64),
        np.concatenate([measured.astype(np.float32), mine[DISTANCE].to_numpy()]).astype(np.float32),
    )
    pool = pool.take(np.flatnonzero(~np.isnan(pool.distances)))
    return pool.take(_best(pool.distances, pool.row_ids, query.k))


def _best(distances: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest distances, by (distance, row id)."""
    return np.lexsort((ids, distances))[:k]


def _float32(values: np.ndarray) -> np.ndarray:
    """Vectors to measure: float32, or float64 and uint8 (hamming) as they are."""
    if values.dtype in (np.float64, np.uint8):
        return values
    return np.asarray(values, dtype=np.float32)
