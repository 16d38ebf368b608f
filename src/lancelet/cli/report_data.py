"""What ``lancelet report`` shows, gathered through the public API only, and the
plain-words advice it draws from it; the page itself is drawn by
:mod:`lancelet.cli.report_html`."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from lancelet.cli.changes import operation_kind
from lancelet.dataset import LanceDataset, LanceFragment
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.errors import LanceletError

# pylance's compaction defaults: a fragment under the target is worth merging, one
# with more than this share of its rows deleted is worth rewriting.
DEFAULT_TARGET_ROWS = 1024 * 1024
DELETED_SHARE_THRESHOLD = 0.1
# Past this many versions, old ones are worth cleaning up.
MANY_VERSIONS = 100
# Transactions read for the timeline, newest first: each is a file to fetch.
MAX_TRANSACTIONS = 1000


@dataclass(frozen=True)
class FragmentFacts:
    """One fragment: its rows (stored, deleted, live) and the bytes of its data
    files (None when a data file does not record its size)."""

    id: int
    physical_rows: int
    deleted_rows: int
    live_rows: int
    data_files: int
    bytes: int | None

    @property
    def deleted_share(self) -> float:
        return self.deleted_rows / self.physical_rows if self.physical_rows else 0.0


@dataclass(frozen=True)
class VersionFacts:
    """One version on disk: when, what made it (None: its transaction is not
    readable, or was not read), and the dataset's size then."""

    version: int
    timestamp: str
    operation: str | None
    rows: int | None
    fragments: int | None


@dataclass(frozen=True)
class IndexFacts:
    """One index and how much of the dataset it covers."""

    name: str
    index_type: str
    columns: list[str]
    segments: int
    indexed_fragments: int
    unindexed_fragments: int
    indexed_rows: int
    unindexed_rows: int


@dataclass(frozen=True)
class ReportFacts:
    """Everything the report shows about one version of a dataset."""

    uri: str
    version: int
    latest_version: int
    rows: int
    target_rows: int
    fragments: list[FragmentFacts]
    versions: list[VersionFacts]
    indices: list[IndexFacts]
    transactions_skipped: int = 0
    advice: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The facts as JSON values, for the page's embedded data."""
        return asdict(self)


def gather(dataset: LanceDataset, target_rows: int = DEFAULT_TARGET_ROWS) -> ReportFacts:
    """The facts of ``dataset``'s checked-out version, with advice for a
    compaction towards ``target_rows`` rows per fragment."""
    fragments = [_fragment_facts(f) for f in dataset.get_fragments()]
    versions, skipped = _version_facts(dataset)
    facts = ReportFacts(
        uri=dataset.uri,
        version=dataset.version,
        latest_version=dataset.latest_version,
        rows=sum(f.live_rows for f in fragments),
        target_rows=target_rows,
        fragments=fragments,
        versions=versions,
        indices=_index_facts(dataset, fragments),
        transactions_skipped=skipped,
    )
    return replace(facts, advice=advice(facts))


def _fragment_facts(fragment: LanceFragment) -> FragmentFacts:
    files = fragment.data_files()
    # A size of 0 is how a manifest says it did not record one.
    sizes = [f.file_size_bytes for f in files if f.file_size_bytes]
    physical = fragment.physical_rows
    deleted = fragment.num_deletions
    return FragmentFacts(
        id=fragment.fragment_id,
        physical_rows=physical,
        deleted_rows=deleted,
        live_rows=physical - deleted,
        data_files=len(files),
        bytes=sum(sizes) if len(sizes) == len(files) else None,
    )


def _version_facts(dataset: LanceDataset) -> tuple[list[VersionFacts], int]:
    """Every version on disk, oldest first, with the operations of the newest
    :data:`MAX_TRANSACTIONS`; and how many older ones were not read."""
    listed = dataset.versions()
    skipped = max(0, len(listed) - MAX_TRANSACTIONS)
    facts = []
    with progress_bar("Reading versions", total=len(listed), unit="versions") as bar:
        for n, entry in enumerate(bar.tracked(listed)):
            number = int(entry["version"])
            operation = None if n < skipped else _operation(dataset, number)
            facts.append(_one_version(entry, number, operation))
    return facts, skipped


def _one_version(entry: dict[str, Any], number: int, operation: str | None) -> VersionFacts:
    metadata = entry.get("metadata") or {}
    stamp = entry.get("timestamp")
    return VersionFacts(
        version=number,
        timestamp=stamp.isoformat() if isinstance(stamp, datetime) else str(stamp),
        operation=operation,
        rows=_int_or_none(metadata.get("total_rows")),
        fragments=_int_or_none(metadata.get("total_fragments")),
    )


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _operation(dataset: LanceDataset, version: int) -> str | None:
    """The kind of operation that made ``version`` (``Append``, ``Rewrite``, ...);
    None when its transaction file is gone or unreadable: the report goes on."""
    try:
        transaction = dataset.read_transaction(version)
    except (LanceletError, OSError):
        return None
    return None if transaction is None else operation_kind(transaction.operation)


def _index_facts(dataset: LanceDataset, fragments: list[FragmentFacts]) -> list[IndexFacts]:
    """Each user index (system ones, named ``__...``, left out) and the live rows of
    the fragments its segments cover and do not cover."""
    live = {f.id: f.live_rows for f in fragments}
    found = []
    for description in dataset.describe_indices():
        if description.name.startswith("__"):
            continue
        covered = {i for s in description.segments for i in s.fragment_ids} & live.keys()
        found.append(
            IndexFacts(
                name=description.name,
                index_type=description.index_type,
                columns=list(description.field_names),
                segments=description.num_segments,
                indexed_fragments=len(covered),
                unindexed_fragments=len(live) - len(covered),
                indexed_rows=sum(live[i] for i in covered),
                unindexed_rows=sum(n for i, n in live.items() if i not in covered),
            )
        )
    return found


def small_fragments(facts: ReportFacts) -> list[FragmentFacts]:
    """Fragments a compaction would merge: under the target rows."""
    return [f for f in facts.fragments if f.live_rows < facts.target_rows]


def deletion_heavy(facts: ReportFacts) -> list[FragmentFacts]:
    """Fragments a compaction would rewrite for their deletions."""
    return [f for f in facts.fragments if f.deleted_share > DELETED_SHARE_THRESHOLD]


def advice(facts: ReportFacts) -> list[str]:
    """What to do, in plain words; one line saying so when nothing is needed."""
    lines = []
    small = small_fragments(facts)
    if len(small) > 1:
        lines.append(
            f"{len(small)} fragments under {facts.target_rows:,} rows: compaction would "
            "help (optimize.compact_files)."
        )
    heavy = deletion_heavy(facts)
    if heavy:
        deleted = sum(f.deleted_rows for f in heavy)
        lines.append(
            f"{_count(len(heavy), 'fragment')} with over {DELETED_SHARE_THRESHOLD:.0%} of "
            f"rows deleted ({deleted:,} rows in all): compaction would drop them from the "
            "files."
        )
    for index in facts.indices:
        if index.unindexed_rows or index.unindexed_fragments:
            lines.append(
                f"{_count(index.unindexed_rows, 'row')} in "
                f"{_count(index.unindexed_fragments, 'fragment')} not covered by index "
                f"{index.name}: optimize_indices."
            )
    if len(facts.versions) > MANY_VERSIONS:
        lines.append(
            f"{len(facts.versions)} versions kept: cleanup_old_versions would remove the "
            "files only old versions need."
        )
    return lines or ["Nothing to do: no compaction, reindexing or cleanup needed."]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def operation_counts(facts: ReportFacts) -> Counter[str]:
    """How many versions each kind of operation made (``unknown`` when unread)."""
    return Counter(v.operation or "unknown" for v in facts.versions)
