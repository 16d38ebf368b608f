"""The ``lance`` data source's options, parsed and checked once.

Spark hands a data source its options as a case-insensitive map of strings.  Unknown
options are refused, so a misspelt one fails instead of being silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pyspark

from lancelet.dataset.engine import DEFAULT_MAX_ROWS_PER_FILE, Location, data_format
from lancelet.io.uri import normalize
from lancelet.spark.compat import PUSHED_READ_PER_QUERY
from lancelet.spark.partition_plan import MAX_PARTITION_BYTES
from lancelet.spark.search_read import Search, parse_search
from lancelet.spark.storage import is_storage_key, storage_options

# Options Spark itself adds: the path given to load()/save()/start() and a streaming
# query's checkpoint.
_FROM_SPARK = frozenset({"path", "checkpointlocation"})
DEFAULT_ROWS_PER_PARTITION = 1 << 20
DEFAULT_BATCH_SIZE = 1 << 16
WRITE_MODES = ("create", "ignore")


def _check_known(options: Mapping[str, str], known: frozenset[str], use: str) -> None:
    """Refuse options not in ``known``; ``storage.*`` options are checked by the store."""
    unknown = sorted(
        k
        for k in (key.lower() for key in options)
        if k not in known | _FROM_SPARK and not is_storage_key(k)
    )
    if unknown:
        raise ValueError(
            f"lance data source: unknown {use} option(s) {unknown}; known: {sorted(known)}"
        )


def dataset_path(options: Mapping[str, str]) -> str:
    raw = options.get("path")
    if not raw:
        raise ValueError("lance data source: no path (pass one to load(), save() or start())")
    # Resolved on the driver, so every executor gets the same absolute path; a scheme
    # lancelet has no store for (hdfs://) is refused here, not turned into a local
    # folder in each executor's working directory.
    path = normalize(raw)
    if path.startswith("memory://"):
        # Executors are other processes, each with its own memory store.
        raise ValueError(
            f"lance data source: {raw}: a memory:// dataset cannot be shared with Spark executors"
        )
    return path


def _storage(
    path: str, options: Mapping[str, str], settings: Mapping[str, str] | None
) -> dict[str, str] | None:
    """The read's or write's storage options (see :mod:`lancelet.spark.storage`),
    checked by building the store now, before any task starts."""
    found = storage_options(path, options, settings)
    Location(path, found).check()
    return found


class _Stored:
    """What the options of a read or write share: the dataset and how to reach it."""

    path: str
    storage_options: dict[str, str] | None

    def location(self) -> Location:
        """Where the dataset is, with the storage options that reach it (executors
        too: the options travel with the objects Spark pickles)."""
        return Location(self.path, self.storage_options)


def _get(options: Mapping[str, str], key: str) -> str | None:
    """An option by name, whatever its case (Spark's map is case-insensitive; a plain
    dict passed in tests may not be)."""
    wanted = key.lower()
    return next((v for k, v in options.items() if k.lower() == wanted), None)


def _bool(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    found = _get(options, key)
    raw = str(default if found is None else found).strip().lower()
    if raw not in ("true", "false", "1", "0"):
        raise ValueError(f"lance data source: option {key}={raw!r} is not true or false")
    return raw in ("true", "1")


def _positive_int(options: Mapping[str, str], key: str, default: int) -> int:
    raw = _get(options, key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"lance data source: option {key}={raw!r} must be a positive integer")
    return value


def _columns(raw: str | None) -> tuple[str, ...] | None:
    """A JSON list of names, or names separated by commas."""
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("["):
        names = json.loads(text)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"lance data source: option columns={raw!r} is not a list of names")
        return tuple(names)
    return tuple(n.strip() for n in text.split(",") if n.strip())


@dataclass(frozen=True)
class ReadOptions(_Stored):
    path: str
    version: int | str | None = None
    columns: tuple[str, ...] | None = None
    with_row_id: bool = False
    with_row_address: bool = False
    # A fixed cut of each fragment; None: partitions sized by the bytes read, at
    # most max_partition_bytes each, and enough of them for min_partitions cores
    # (0: the planning machine's) when the table is small.
    rows_per_partition: int | None = None
    max_partition_bytes: int = MAX_PARTITION_BYTES
    min_partitions: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    pushdown: bool = PUSHED_READ_PER_QUERY
    # Whether pushed filters may be answered by the dataset's scalar indices
    # (pylance's scanner option of the same name).
    use_scalar_index: bool = True
    # The rows the DataFrame holds, in pylance's filter dialect, evaluated by lancelet.
    filter: str | None = None
    # A nearest-neighbour or full-text search (see lancelet.spark.search_read), and
    # whether the filter option applies before the rows are ranked.
    search: Search | None = None
    prefilter: bool = False
    storage_options: dict[str, str] | None = None


_READ_KEYS = frozenset(
    {
        "filter",
        "nearest",
        "full_text_query",
        "limit",
        "prefilter",
        "pushdown",
        "use_scalar_index",
        "version",
        "versionasof",
        "tag",
        "timestampasof",
        "columns",
        "with_row_id",
        "with_row_address",
        "rows_per_partition",
        "max_partition_bytes",
        "min_partitions",
        "batch_size",
        *(key.lower() for key in ("readChangeFeed", "readChangeData")),  # when false
    }
)


@dataclass(frozen=True)
class Instant:
    """A point in time a read asks for (``timestampAsOf``): it reads the latest version
    committed at or before it."""

    micros: int  # since the Unix epoch
    text: str  # as given


def parse_instant(text: str, option: str = "timestampAsOf") -> Instant:
    """An ISO 8601 date or timestamp.  Without an offset it is local time: Spark's
    default session time zone is the machine's, and a Python data source cannot see a
    session's own setting (give an offset, e.g. ``Z``, to be unambiguous)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise ValueError(
            f"lance data source: {option}={text!r} is not a date or timestamp "
            "(ISO 8601, e.g. '2026-11-27 10:00:00' or '2026-11-27T10:00:00Z')"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time
    seconds = (moment - _EPOCH) // timedelta(microseconds=1)
    return Instant(int(seconds), text)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_VERSION_KEYS = ("version", "versionAsOf", "tag", "timestampAsOf")


def version_option(options: Mapping[str, str]) -> int | str | Instant | None:
    """The version asked for: a number, a tag name, an instant, or None for the latest.
    ``versionAsOf`` and ``timestampAsOf`` are Delta's names."""
    given = {key: _get(options, key) for key in _VERSION_KEYS}
    asked = {key: raw for key, raw in given.items() if raw is not None}
    if len(asked) > 1:
        raise ValueError(
            f"lance data source: give one of the options {list(_VERSION_KEYS)}, not {sorted(asked)}"
        )
    if not asked:
        return None
    ((key, raw),) = asked.items()
    text = str(raw).strip()
    if key == "tag":
        return text
    if key == "timestampAsOf":
        return parse_instant(text)
    if key == "versionAsOf" and not text.isdigit():
        raise ValueError(f"lance data source: versionAsOf={raw!r} is not a version number")
    # pylance's dataset(version=...) takes a number or a tag name; so does this option.
    return int(text) if text.isdigit() else text


# Options of spark.readStream only; schema() sees them too, as it serves both reads.
_STREAM_READ_KEYS = frozenset(
    {
        "startingversion",
        "startingtimestamp",
        "maxrowspertrigger",
        "maxfilespertrigger",
        "ignoredeletes",
        "skipchangecommits",
    }
)


def read_options(
    options: Mapping[str, str],
    *,
    streaming: bool = False,
    settings: Mapping[str, str] | None = None,
    per_query: bool = PUSHED_READ_PER_QUERY,
) -> ReadOptions:
    """A batch read's options (``streaming``: the schema of a stream's read, which
    may carry the stream's own options); ``settings`` are the session's S3A settings
    (see :mod:`lancelet.spark.storage`); ``per_query``: whether each query's read is
    planned for it alone (Spark 5, or the JVM bridge), which filter pushdown needs."""
    _check_known(options, _READ_KEYS | (_STREAM_READ_KEYS if streaming else frozenset()), "read")
    version = version_option(options)
    path = dataset_path(options)
    return ReadOptions(
        path=path,
        # An instant is resolved to a number by the source, once per DataFrame.
        version=None if isinstance(version, Instant) else version,
        columns=_columns(options.get("columns")),
        with_row_id=_bool(options, "with_row_id"),
        with_row_address=_bool(options, "with_row_address"),
        rows_per_partition=_optional_positive(options, "rows_per_partition"),
        max_partition_bytes=_positive_int(options, "max_partition_bytes", MAX_PARTITION_BYTES),
        min_partitions=_optional_positive(options, "min_partitions") or 0,
        batch_size=_positive_int(options, "batch_size", DEFAULT_BATCH_SIZE),
        pushdown=_pushdown(options, per_query),
        use_scalar_index=_bool(options, "use_scalar_index", True),
        filter=_get(options, "filter"),
        search=_search(options),
        prefilter=_bool(options, "prefilter"),
        storage_options=_storage(path, options, settings),
    )


def _search(options: Mapping[str, str]) -> Search | None:
    limit = _get(options, "limit")
    return parse_search(
        _get(options, "nearest"),
        _get(options, "full_text_query"),
        None if limit is None else _positive_int(options, "limit", 1),
    )


def _pushdown(options: Mapping[str, str], per_query: bool) -> bool:
    pushdown = _bool(options, "pushdown", per_query)
    if pushdown and not per_query:
        # Refused rather than risked: see lancelet.spark.compat.
        raise ValueError(
            "lance data source: option pushdown=true needs Spark 5 or later, or lancelet's "
            f"Spark bridge (lancelet.spark.session() loads it): Spark {pyspark.__version__} "
            "reuses the read planned with one query's pushed filters "
            "for later queries on the same DataFrame, which would then miss rows"
        )
    return pushdown


@dataclass(frozen=True)
class WriteOptions(_Stored):
    path: str
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    data_storage_version: str | None = None
    # Spark lets Python sources be written only in append or overwrite mode; with
    # append, "create" fails on an existing dataset and "ignore" leaves it untouched.
    write_mode: str | None = None
    # Streaming only: the identity a query's commits are recorded under.
    stream_id: str | None = None
    checkpoint_location: str | None = None
    # Delta's names: add the data's new columns; replace the schema on overwrite.
    merge_schema: bool = False
    overwrite_schema: bool = False
    storage_options: dict[str, str] | None = None


_WRITE_KEYS = frozenset(
    {"max_rows_per_file", "data_storage_version", "write_mode", "mergeschema", "overwriteschema"}
)
_STREAM_KEYS = frozenset({"max_rows_per_file", "data_storage_version", "stream_id"})


def _write_mode(options: Mapping[str, str]) -> str | None:
    raw = options.get("write_mode")
    if raw is None:
        return None
    mode = {"error": "create", "errorifexists": "create"}.get(raw.lower(), raw.lower())
    if mode not in WRITE_MODES:
        raise ValueError(
            f"lance data source: write_mode={raw!r}; expected create (errorifexists) or ignore"
        )
    return mode


def write_options(
    options: Mapping[str, str],
    *,
    streaming: bool = False,
    settings: Mapping[str, str] | None = None,
) -> WriteOptions:
    _check_known(options, _STREAM_KEYS if streaming else _WRITE_KEYS, "write")
    requested = options.get("data_storage_version")
    data_format(requested)  # refuse an unwritable version before any task starts
    path = dataset_path(options)
    return WriteOptions(
        path=path,
        max_rows_per_file=_positive_int(options, "max_rows_per_file", DEFAULT_MAX_ROWS_PER_FILE),
        data_storage_version=requested,
        write_mode=None if streaming else _write_mode(options),
        stream_id=options.get("stream_id"),
        checkpoint_location=options.get("checkpointlocation"),
        merge_schema=_bool(options, "mergeSchema"),
        overwrite_schema=_bool(options, "overwriteSchema"),
        storage_options=_storage(path, options, settings),
    )


@dataclass(frozen=True)
class StreamOptions(_Stored):
    path: str
    # Where the stream starts: None for the latest version's snapshot, then its
    # changes; a version number or "latest" (changes only, from there), or an instant.
    starting_version: int | str | Instant | None = None
    max_rows_per_trigger: int | None = None
    max_files_per_trigger: int | None = None
    ignore_deletes: bool = False
    skip_change_commits: bool = False
    columns: tuple[str, ...] | None = None
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    batch_size: int = DEFAULT_BATCH_SIZE
    storage_options: dict[str, str] | None = None


_STREAM_KEYS_READ = _STREAM_READ_KEYS | {
    "columns",
    "rows_per_partition",
    "batch_size",
    "readchangefeed",
    "readchangedata",
}


def stream_options(
    options: Mapping[str, str], settings: Mapping[str, str] | None = None
) -> StreamOptions:
    if version_option(options) is not None:
        raise ValueError(
            "lance data source: a stream reads the latest version and then each new one; "
            "use option startingVersion or startingTimestamp to start from changes instead"
        )
    _check_known(options, _STREAM_KEYS_READ, "streaming read")
    limits = {k: _get(options, k) for k in ("maxRowsPerTrigger", "maxFilesPerTrigger")}
    if all(v is not None for v in limits.values()):
        raise ValueError(
            "lance data source: give maxRowsPerTrigger or maxFilesPerTrigger, not both"
        )
    path = dataset_path(options)
    return StreamOptions(
        path=path,
        starting_version=_starting(options),
        max_rows_per_trigger=_optional_positive(options, "maxRowsPerTrigger"),
        max_files_per_trigger=_optional_positive(options, "maxFilesPerTrigger"),
        ignore_deletes=_bool(options, "ignoreDeletes"),
        skip_change_commits=_bool(options, "skipChangeCommits"),
        columns=_columns(options.get("columns")),
        rows_per_partition=_positive_int(options, "rows_per_partition", DEFAULT_ROWS_PER_PARTITION),
        batch_size=_positive_int(options, "batch_size", DEFAULT_BATCH_SIZE),
        storage_options=_storage(path, options, settings),
    )


def _starting(options: Mapping[str, str]) -> int | str | Instant | None:
    version, stamp = _get(options, "startingVersion"), _get(options, "startingTimestamp")
    if version is not None and stamp is not None:
        raise ValueError("lance data source: give startingVersion or startingTimestamp, not both")
    if stamp is not None:
        return parse_instant(stamp, "startingTimestamp")
    if version is None:
        return None
    text = version.strip().lower()
    if text == "latest":
        return text
    if not text.isdigit() or int(text) < 1:
        raise ValueError(
            f"lance data source: startingVersion={version!r} is not a version number or 'latest'"
        )
    return int(text)


def _optional_positive(options: Mapping[str, str], key: str) -> int | None:
    return None if _get(options, key) is None else _positive_int(options, key, 1)


# -- the change data feed ----------------------------------------------------------------

# Delta's option, and the older name Delta still takes.
_CHANGE_SWITCHES = ("readChangeFeed", "readChangeData")


def reads_change_feed(options: Mapping[str, str]) -> bool:
    """Whether the read is of the change data feed (``readChangeFeed``)."""
    return any(_bool(options, key) for key in _CHANGE_SWITCHES)


@dataclass(frozen=True)
class ChangeFeedOptions(_Stored):
    path: str
    # Where the feed starts: a version or an instant; a stream also takes "latest"
    # and None (the latest version's rows as inserts, then the changes after it).
    starting: int | str | Instant | None = None
    ending: int | Instant | None = None  # batch reads only; None: the latest version
    columns: tuple[str, ...] | None = None
    with_row_id: bool = False
    # A commit making more change rows than this is read by several tasks.
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    batch_size: int | None = None  # None: the engine's
    pushdown: bool = PUSHED_READ_PER_QUERY
    max_rows_per_trigger: int | None = None
    # Commits per micro-batch (fragments while a stream reads its first snapshot).
    max_files_per_trigger: int | None = None
    storage_options: dict[str, str] | None = None


_CHANGE_KEYS = frozenset(
    {
        "readchangefeed",
        "readchangedata",
        "startingversion",
        "startingtimestamp",
        "columns",
        "with_row_id",
        "rows_per_partition",
        "batch_size",
        "pushdown",
    }
)
_CHANGE_BATCH_KEYS = frozenset({"endingversion", "endingtimestamp"})
_CHANGE_STREAM_KEYS = frozenset({"maxrowspertrigger", "maxfilespertrigger"})
# Options of the plain stream that say what to do with deletes and updates, which
# a change feed delivers as rows.
_CHANGE_COMMIT_KEYS = ("ignoreDeletes", "ignoreChanges", "skipChangeCommits")


def change_feed_options(
    options: Mapping[str, str],
    *,
    streaming: bool | None,
    settings: Mapping[str, str] | None = None,
    per_query: bool = PUSHED_READ_PER_QUERY,
) -> ChangeFeedOptions:
    """A change feed read's options: a stream's (``streaming``), a batch read's, or
    either (None: the schema, which serves both).  Options the feed cannot honour
    are refused, never ignored."""
    _refuse_with_changes(options, streaming)
    known = _CHANGE_KEYS
    if streaming is not True:
        known |= _CHANGE_BATCH_KEYS
    if streaming is not False:
        known |= _CHANGE_STREAM_KEYS
    _check_known(options, known, "change feed")
    starting = _starting(options)
    if starting == "latest" and streaming is False:
        raise ValueError(
            "lance data source: startingVersion=latest is for streams; a batch read of "
            "the change feed starts at a version number or a startingTimestamp"
        )
    if all(_get(options, k) is not None for k in ("maxRowsPerTrigger", "maxFilesPerTrigger")):
        raise ValueError(
            "lance data source: give maxRowsPerTrigger or maxFilesPerTrigger, not both"
        )
    path = dataset_path(options)
    return ChangeFeedOptions(
        path=path,
        starting=starting,
        ending=_ending(options),
        columns=_columns(_get(options, "columns")),
        with_row_id=_bool(options, "with_row_id"),
        rows_per_partition=_positive_int(options, "rows_per_partition", DEFAULT_ROWS_PER_PARTITION),
        batch_size=_optional_positive(options, "batch_size"),
        pushdown=_pushdown(options, per_query),
        max_rows_per_trigger=_optional_positive(options, "maxRowsPerTrigger"),
        max_files_per_trigger=_optional_positive(options, "maxFilesPerTrigger"),
        storage_options=_storage(path, options, settings),
    )


def _refuse_with_changes(options: Mapping[str, str], streaming: bool | None) -> None:
    """Refuse, by name, options a change feed read has no meaning for."""
    travel = [key for key in _VERSION_KEYS if _get(options, key) is not None]
    if travel:
        raise ValueError(
            f"lance data source: readChangeFeed cannot be combined with {travel[0]}: the "
            "feed reads the commits from startingVersion (or startingTimestamp) to "
            "endingVersion (or endingTimestamp), with the ending version's columns"
        )
    ignoring = [key for key in _CHANGE_COMMIT_KEYS if _get(options, key) is not None]
    if ignoring:
        raise ValueError(
            f"lance data source: option {ignoring[0]} does not apply with readChangeFeed, "
            "which delivers deletes and updates as rows (_change_type)"
        )
    ending = [k for k in ("endingVersion", "endingTimestamp") if _get(options, k) is not None]
    if streaming and ending:
        raise ValueError(
            f"lance data source: {ending[0]} bounds a batch read of the change feed; a "
            "stream reads every commit as it comes"
        )


def _ending(options: Mapping[str, str]) -> int | Instant | None:
    version, stamp = _get(options, "endingVersion"), _get(options, "endingTimestamp")
    if version is not None and stamp is not None:
        raise ValueError("lance data source: give endingVersion or endingTimestamp, not both")
    if stamp is not None:
        return parse_instant(stamp, "endingTimestamp")
    if version is None:
        return None
    text = version.strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"lance data source: endingVersion={version!r} is not a version number")
    return int(text)
