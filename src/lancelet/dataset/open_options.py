"""The keywords pylance's ``lance.dataset`` and ``LanceDataset(...)`` take beyond a
location, a version, storage options, a commit lock and default scan options.

Those that only size caches or reads (``block_size``, ``index_cache_size``,
``metadata_cache_size`` and the byte sizes) are accepted: lancelet's results do not
depend on them.  ``index_cache_size_bytes`` bounds the session's index cache (see
:class:`Session`); ``index_cache_size`` (in entries) is deprecated as in pylance,
which warns and counts 20 MiB per entry unless the size in bytes is given.  The
namespace and multi-base store keywords, and a serialized manifest, are refused
unless given their defaults.
"""

from __future__ import annotations

import warnings
from typing import Any

from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.transaction.index_cache import BYTES_PER_ENTRY, check_size
from lancelet.transaction.session import Session

# File reader options that only tune speed (caching, extra checks while decoding):
# lancelet's results are the same either way, and it always checks what it decodes.
_READ_PARAMS = frozenset({"cache_repetition_index", "validate_on_decode"})


def check_read_params(params: Any, call: str) -> None:
    if params is None:
        return
    if not isinstance(params, dict):
        raise TypeError(f"{call}: read_params must be a dict, not {params!r}")
    for name, value in params.items():
        if name not in _READ_PARAMS:
            raise UnsupportedOptionError(f"{call}: lancelet does not support read_params {name!r}")
        if not isinstance(value, bool):
            raise TypeError(f"{call}: read_params {name!r} must be True or False, not {value!r}")


def open_session(
    call: str,
    *,
    serialized_manifest: bytes | None,
    metadata_cache_size_bytes: int | None,
    index_cache_size_bytes: int | None,
    read_params: dict[str, Any] | None,
    session: Session | None,
    index_cache_size: int | None = None,
    namespace_client: Any,
    table_id: list[str] | None,
    namespace_client_managed_versioning: bool,
    base_store_params: dict[str, dict[str, str]] | None,
) -> Session | None:
    """Check the keywords of an open and return the session it uses: the one passed,
    else one with the cache sizes given, else None (the store makes its own)."""
    refuse_unimplemented(
        call,
        serialized_manifest=serialized_manifest,
        namespace_client=namespace_client,
        table_id=table_id,
        namespace_client_managed_versioning=namespace_client_managed_versioning,
        base_store_params=base_store_params,
    )
    check_read_params(read_params, call)
    for name, size in (
        ("index_cache_size", index_cache_size),
        ("index_cache_size_bytes", index_cache_size_bytes),
        ("metadata_cache_size_bytes", metadata_cache_size_bytes),
    ):
        check_size(size, name)
    if index_cache_size is not None:
        warnings.warn(
            "The 'index_cache_size' parameter is deprecated. "
            "Use 'index_cache_size_bytes' instead. "
            "The old parameter will be converted to bytes using 20 MiB per entry.",
            DeprecationWarning,
            stacklevel=3,  # the caller of LanceDataset(...), as pylance's
        )
        if index_cache_size_bytes is None:
            index_cache_size_bytes = index_cache_size * BYTES_PER_ENTRY
    if session is not None and not isinstance(session, Session):
        raise TypeError(f"{call}: session must be a lancelet Session, not {session!r}")
    sizes = {
        name: size
        for name, size in (
            ("index_cache_size_bytes", index_cache_size_bytes),
            ("metadata_cache_size_bytes", metadata_cache_size_bytes),
        )
        if size is not None
    }
    if session is not None or not sizes:
        return session
    return Session(**sizes)


def check_location(uri: Any, namespace_client: Any, table_id: Any, call: str) -> None:
    """pylance opens a dataset by ``uri`` or through a namespace; lancelet by ``uri``."""
    if (namespace_client is None) != (table_id is None):
        raise ArgumentError(
            f"{call}: Both 'namespace_client' and 'table_id' must be provided together."
        )
    refuse_unimplemented(call, namespace_client=namespace_client, table_id=table_id)
    if uri is None:
        raise ArgumentError(
            f"{call}: Must specify either 'uri' or both 'namespace_client' and 'table_id'."
        )
