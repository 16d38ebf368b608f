"""pylance keyword arguments lancelet does not implement: which it may ignore, which it
must refuse.

A keyword that only tunes speed or memory (buffer sizes, readahead, caches, thread
counts) changes no result, so it is accepted and ignored.  Every other keyword
pylance takes that lancelet does not implement is accepted only at its default
value; any other value raises :class:`UnsupportedOptionError` rather than give a
result that differs from what was asked for.  A keyword pylance does not know
either is a :class:`TypeError`, as Python gives for any unexpected keyword.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from lancelet.errors import UnsupportedOptionError

# Tuning only: ignoring them returns the same rows.  ``scan_in_order=False`` allows any
# order, and lancelet's order is one; ``prefilter`` matters only with a vector search.
TUNING = frozenset(
    {
        "batch_readahead",
        "block_size",
        "data_cache_bytes",
        "delete_concurrency",
        "delete_rate_limit",
        "disable_scoring_autoprojection",
        "fragment_readahead",
        "index_cache_size",
        "index_cache_size_bytes",
        "io_buffer_size",
        "late_materialization",
        "max_page_bytes",
        "metadata_cache_size_bytes",
        "prefilter",
        "scan_in_order",
        "use_scalar_index",
        "use_stats",
    }
)

DEFAULT_MAX_BYTES_PER_FILE = 96636764160  # pylance's default: 90 GiB
_MINUTE = timedelta(minutes=1)


def _is_default(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (dict, list)) and not value)


# Keywords whose default is not None/False/empty.
_DEFAULTS: dict[str, Callable[[Any], bool]] = {
    "external_blob_mode": lambda v: v == "reference",
    "max_bytes_per_file": lambda v: v == DEFAULT_MAX_BYTES_PER_FILE,
    # lancelet's commit loop gives up within seconds, inside any timeout of a minute.
    "commit_timeout": lambda v: (
        v is None or (isinstance(v, timedelta) and v >= timedelta(1 / 1440))
    ),
}

# Per call: the pylance keywords lancelet's signature does not spell out; those in
# TUNING are accepted and ignored, the others refused unless given their default.
PYLANCE_KEYWORDS: dict[str, frozenset[str]] = {
    "add_columns": frozenset({"batch_size"}),
}


def check_options(options: Mapping[str, Any], call: str) -> None:
    """Refuse the ``options`` (keywords beyond ``call``'s own parameters) that lancelet
    would otherwise ignore at a cost to the result."""
    known = PYLANCE_KEYWORDS.get(call, frozenset())
    for name, value in options.items():
        if name not in known:
            raise TypeError(f"{call}() got an unexpected keyword argument {name!r}")
        if name not in TUNING:
            refuse_unless_default(call, name, value)


def refuse_unless_default(call: str, name: str, value: Any) -> None:
    is_default = _DEFAULTS.get(name, _is_default)
    if not is_default(value):
        raise UnsupportedOptionError(f"{call}: lancelet does not support {name}={value!r} yet")


def refuse_unimplemented(call: str, **values: Any) -> None:
    """Refuse each explicitly named parameter given a value other than its default."""
    for name, value in values.items():
        refuse_unless_default(call, name, value)


def legacy_format_version(
    use_legacy_format: bool | None, data_storage_version: str | None
) -> str | None:
    """pylance's deprecated ``use_legacy_format``: True writes "legacy" files, False
    "stable" ones (overriding ``data_storage_version``, as there)."""
    if use_legacy_format is None:
        return data_storage_version
    warnings.warn(
        "use_legacy_format is deprecated, use data_storage_version instead",
        DeprecationWarning,
        stacklevel=3,
    )
    return "legacy" if use_legacy_format else "stable"
