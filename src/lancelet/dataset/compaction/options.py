"""Compaction options and metrics: explicit values, else the dataset's
``lance.compaction.*`` config, else pylance's defaults; options that would make the
result differ from pylance's are refused."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from lancelet.dataset.write.data_files import storage_version
from lancelet.errors import ArgumentError, NumberOutOfRangeError
from lancelet.table.fragment import Fragment

CONFIG_PREFIX = "lance.compaction."


@dataclass(frozen=True)
class CompactionMetrics:
    fragments_removed: int = 0
    fragments_added: int = 0
    # Data and deletion files.
    files_removed: int = 0
    files_added: int = 0

    @classmethod
    def of(cls, old: Sequence[Fragment], new: Sequence[Fragment]) -> CompactionMetrics:
        return cls(len(old), len(new), _file_count(old), _file_count(new))

    @classmethod
    def total(cls, parts: Sequence[CompactionMetrics]) -> CompactionMetrics:
        return cls(*(sum(getattr(p, f.name) for p in parts) for f in fields(cls)))

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompactionMetrics:
        return cls(*(int(data.get(f.name) or 0) for f in fields(cls)))


def _file_count(fragments: Sequence[Fragment]) -> int:
    return sum(len(f.files) + (f.deletion_file is not None) for f in fragments)


# -- options ------------------------------------------------------------------------


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected 'true' or 'false'")
    return lowered == "true"


# The options a dataset's config may default (``lance.compaction.<name>``), with
# the parser of their text value.
_CONFIGURABLE: dict[str, Callable[[str], Any]] = {
    "target_rows_per_fragment": int,
    "max_rows_per_group": int,
    "max_bytes_per_file": int,
    "materialize_deletions": _parse_bool,
    "materialize_deletions_threshold": float,
    "defer_index_remap": _parse_bool,
    "batch_size": int,
    "compaction_mode": str,
    "binary_copy_read_batch_bytes": int,
    "max_source_fragments": int,
    "max_source_rows": int,
    "max_source_bytes": int,
    "data_storage_version": str,
}
# Speed and memory knobs: accepted, and safely ignored.
_TUNING = ("num_threads", "io_buffer_size", "binary_copy_read_batch_bytes")
_MODES = ("reencode", "try_binary_copy", "force_binary_copy")
# Every option pylance documents, in a fixed order (JSON keys come out alike).
OPTION_NAMES = tuple(dict.fromkeys((*_CONFIGURABLE, *_TUNING, "excluded_fragment_ids")))


@dataclass(frozen=True)
class CompactionSettings:
    """Compaction options, resolved: explicit values, else the dataset's
    ``lance.compaction.*`` config, else pylance's defaults."""

    target_rows_per_fragment: int = 1024 * 1024
    max_rows_per_group: int = 1024  # shapes only legacy-format files
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = 0.1
    batch_size: int | None = None
    # A new data file is started once a file's flushed pages reach this size.
    max_bytes_per_file: int | None = None
    max_source_fragments: int | None = None
    max_source_rows: int | None = None
    max_source_bytes: int | None = None
    excluded_fragment_ids: tuple[int, ...] = ()
    # The file format of the rewritten files (None: the dataset's), as in pylance.
    data_storage_version: str | None = None
    # Leave index segments to the Fragment Reuse Index instead of rewriting them.
    defer_index_remap: bool = False

    @classmethod
    def resolve(
        cls, options: Mapping[str, Any] | None, config: Mapping[str, str], where: str
    ) -> CompactionSettings:
        given = {k: v for k, v in (options or {}).items() if v is not None}
        unknown = sorted(set(given).difference(OPTION_NAMES))
        if unknown:
            raise ArgumentError(f"{where}: invalid compaction option: {', '.join(unknown)}")
        values = {**_from_config(config, where), **given}
        _check_supported(values, where)
        names = {f.name for f in fields(cls)}
        settings = cls(**{k: v for k, v in values.items() if k in names})
        if settings.target_rows_per_fragment < 0:
            raise NumberOutOfRangeError(
                f"{where}: target_rows_per_fragment must not be negative, "
                f"got {settings.target_rows_per_fragment}"
            )
        if settings.target_rows_per_fragment < 1:
            raise ArgumentError(f"{where}: target_rows_per_fragment must be at least 1")
        excluded = tuple(int(i) for i in settings.excluded_fragment_ids)
        return replace(settings, excluded_fragment_ids=excluded)

    @property
    def materializes(self) -> bool:
        # A threshold of 100% or more can never be passed.
        return self.materialize_deletions and self.materialize_deletions_threshold < 1.0

    def to_json(self) -> dict[str, Any]:
        """Every option, under pylance's names."""
        out: dict[str, Any] = dict.fromkeys(OPTION_NAMES)
        out.update({f.name: getattr(self, f.name) for f in fields(self)})
        out.update(excluded_fragment_ids=list(self.excluded_fragment_ids))
        return out


def _from_config(config: Mapping[str, str], where: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, parse in _CONFIGURABLE.items():
        raw = config.get(CONFIG_PREFIX + name)
        if raw is None:
            continue
        try:
            found[name] = parse(raw)
        except ValueError as exc:
            raise ValueError(
                f"{where}: config {CONFIG_PREFIX + name} = {raw!r} is invalid: {exc}"
            ) from exc
    return found


def _check_supported(values: Mapping[str, Any], where: str) -> None:
    """Refuse options that would make the result differ from pylance's."""
    mode = values.get("compaction_mode")
    if mode is not None and mode not in _MODES:
        raise ArgumentError(f"{where}: compaction_mode must be one of {_MODES}, not {mode!r}")
    # Binary copy may always fall back to re-encoding; only forcing it is refused.
    refused = {"compaction_mode": mode == "force_binary_copy"}
    for name, is_refused in refused.items():
        if is_refused:
            raise NotImplementedError(
                f"{where}: lancelet does not support compaction with {name}={values[name]!r}"
            )
    if values.get("data_storage_version") is not None:
        storage_version(values["data_storage_version"])
