"""The executor side of :class:`~lancelet.spark.table.LanceTable`'s jobs, and how the
driver gathers and commits what they wrote.

A job is planned on the driver from one dataset version.  Each Spark task changes a
share of that version's fragments (those of one hash bucket of the rows a delete,
update or merge changes; one compaction task) and reports what it wrote as fragment
JSON: fragments whose deletion vector grew, fragments left empty, new fragments.

A task never raises: a failure removes the task's own files and comes back as the
error, so the driver, which sees every task's outcome, removes the files of the tasks
that succeeded before raising it.  The driver then commits one transaction read at the
planned version, so a concurrent commit is rebased onto or refused by the table
core's conflict rules; a commit that fails removes every file the job wrote.  A task
killed outright (an executor lost) leaves files that nothing references, as any
crashed writer does; ``cleanup_old_versions`` removes them.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyarrow as pa

from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.engine import Location, Operation, Snapshot, commit, discard_written
from lancelet.errors import DatasetError
from lancelet.optimize import CompactionTask, RewriteResult
from lancelet.table.fragment import Fragment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Json = dict[str, Any]
T = TypeVar("T")


def _as_json(fragments: Sequence[Fragment]) -> tuple[Json, ...]:
    return tuple(f.to_json() for f in fragments)


def _from_json(fragments: Sequence[Json]) -> tuple[Fragment, ...]:
    return tuple(Fragment.from_json(f) for f in fragments)


@dataclass(frozen=True)
class RowChanges:
    """What tasks wrote for one row-level change, fragments as JSON.

    ``updated``: existing fragments with grown deletion vectors; ``removed``: ids of
    fragments left without rows; ``new``: rewritten rows as new fragments (ids assigned
    at commit); ``inserted``: new fragments of rows a merge inserted.
    """

    updated: tuple[Json, ...] = ()
    removed: tuple[int, ...] = ()
    new: tuple[Json, ...] = ()
    inserted: tuple[Json, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def written(
        cls,
        updated: Sequence[Fragment],
        removed: Sequence[int],
        new: Sequence[Fragment] = (),
        inserted: Sequence[Fragment] = (),
        counts: Mapping[str, int] | None = None,
    ) -> RowChanges:
        return cls(
            _as_json(updated), tuple(removed), _as_json(new), _as_json(inserted), counts or {}
        )

    @classmethod
    def total(cls, parts: Sequence[RowChanges]) -> RowChanges:
        """The changes of every task of a job; each task owned different fragments."""
        counts: dict[str, int] = {}
        for part in parts:
            for name, value in part.counts.items():
                counts[name] = counts.get(name, 0) + value
        out = cls(
            tuple(f for p in parts for f in p.updated),
            tuple(i for p in parts for i in p.removed),
            tuple(f for p in parts for f in p.new),
            tuple(f for p in parts for f in p.inserted),
            counts,
        )
        ids = [f.id for f in out.updated_fragments()] + list(out.removed)
        assert len(ids) == len(set(ids)), "two tasks changed one fragment"
        return out

    def updated_fragments(self) -> tuple[Fragment, ...]:
        return _from_json(self.updated)

    def new_fragments(self) -> tuple[Fragment, ...]:
        return _from_json(self.new)

    def inserted_fragments(self) -> tuple[Fragment, ...]:
        return _from_json(self.inserted)

    @property
    def changes_rows(self) -> bool:
        return bool(self.updated or self.removed or self.new or self.inserted)

    def discard(self, base: Snapshot) -> None:
        """Remove the files written for a change planned on ``base`` that did not commit."""
        new = self.new_fragments() + self.inserted_fragments()
        discard_written(base, new, deletions_of=self.updated_fragments())


# -- tasks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskOutcome(Generic[T]):
    """One task's result, or the error that stopped it (its own files already removed)."""

    result: T | None = None
    error: Exception | None = None


def _portable(exc: Exception) -> Exception:
    """``exc`` if it survives the trip back to the driver, else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return DatasetError(f"{type(exc).__name__}: {exc}")
    return exc


def captured(work: Callable[[], T]) -> TaskOutcome[T]:
    try:
        return TaskOutcome(result=work())
    except Exception as exc:
        return TaskOutcome(error=_portable(exc))


def gathered(outcomes: Sequence[TaskOutcome[T]], discard: Callable[[T], None]) -> list[T]:
    """The results of every task; if any failed, the others' files go and its error
    is raised."""
    results = [o.result for o in outcomes if o.error is None and o.result is not None]
    errors = [o.error for o in outcomes if o.error is not None]
    if errors:
        for result in results:
            discard(result)
        raise errors[0]
    return results


@dataclass(frozen=True)
class CompactionRun:
    """Executes one compaction task (as JSON); the result comes back as JSON."""

    uri: str
    storage_options: dict[str, str] | None = None

    def __call__(self, task: str) -> TaskOutcome[str]:
        return captured(lambda: self._run(task))

    def _run(self, task_json: str) -> str:
        task = CompactionTask.from_json(task_json)
        dataset = LanceDataset(self.uri, task.read_version, storage_options=self.storage_options)
        return task.execute(dataset).json()


def discard_rewrite_result(location: Location, result: str) -> None:
    discard_written(location, RewriteResult.from_json(result).new_fragments)


# -- the driver -------------------------------------------------------------------------


def run_per_item(
    spark: SparkSession, task: Callable[[Any], TaskOutcome[T]], items: Sequence[Any]
) -> list[TaskOutcome[T]]:
    """``task`` over ``items``, about one Spark task each, in item order.

    The items travel as a DataFrame and the task runs in ``mapInArrow``, not on an
    RDD, so the same job runs under Spark Connect, where a client has no
    ``SparkContext``."""
    if not items:
        return []
    payload = [(i, pickle.dumps(item)) for i, item in enumerate(items)]
    frame = spark.createDataFrame(payload, "i long, item binary")
    frame = frame.repartitionByRange(len(items), "i")
    rows = frame.mapInArrow(_PerItem(task), "i long, outcome binary").collect()
    ordered = sorted(rows, key=lambda row: int(row["i"]))
    return [pickle.loads(row["outcome"]) for row in ordered]


@dataclass(frozen=True)
class _PerItem(Generic[T]):
    """The ``mapInArrow`` function of :func:`run_per_item`: each pickled item in,
    its pickled outcome out."""

    task: Callable[[Any], TaskOutcome[T]]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            numbers = batch.column("i").to_pylist()
            outcomes = [pickle.dumps(self.task(pickle.loads(b))) for b in batch.column("item")]
            yield pa.RecordBatch.from_pydict(
                {"i": pa.array(numbers, pa.int64()), "outcome": pa.array(outcomes, pa.binary())}
            )


def commit_changes(
    base: Snapshot,
    changes: RowChanges,
    operation: Operation,
    properties: Mapping[str, str],
) -> Snapshot:
    """Commit ``operation`` as read at ``base``; if it does not commit, the files of
    ``changes`` go."""
    try:
        # A rebase that unites deletion vectors removes the files it replaced.
        return commit(base, operation, base.version, properties=properties)
    except BaseException:
        changes.discard(base)
        raise
