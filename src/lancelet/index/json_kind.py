"""The JSON index as an index type (:mod:`lancelet.index.registry`): building one
(the values at its path, indexed by its target type), and the target type that reads
a recorded index, JSON or not.  What a JSON index is: :mod:`lancelet.index.json_index`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lancelet.errors import ArgumentError, UnsupportedIndexError, UnsupportedOptionError
from lancelet.file.extensions import ARROW_JSON, is_extension
from lancelet.index import json_index, registry
from lancelet.index._files import IndexDetails
from lancelet.index.base import ScalarIndex

_PARAMETERS = frozenset({"target_index_type", "path", "target_index_parameters"})
# Not a user's parameter: the value type of the index a rebuild replaces, which the
# new one keeps (as pylance's update does).
VALUE_TYPE = "value_type"


def _not_opened(directory: str, dtype: pa.DataType) -> ScalarIndex:
    raise AssertionError("a JSON index is opened as its target type (see target_kind)")


@dataclass(frozen=True)
class JsonIndexType(registry.IndexType):
    """``IndexConfig("json", {"target_index_type": ..., "path": ...})``."""

    def version_for(self, stable_row_ids: bool) -> int:
        return json_index.INDEX_VERSION

    def build(
        self,
        batches: registry.Batches,
        directory: str,
        value_type: pa.DataType,
        file_version: str,
        params: Mapping[str, Any],
    ) -> IndexDetails:
        where = "JSON index"
        if not (is_extension(value_type) and value_type.extension_name == ARROW_JSON):
            raise ArgumentError(
                f"{where}: a JSON index can only be created on a JSON column, not {value_type}"
            )
        target, path = _target(params, where)
        values, dtype = json_index.extracted(batches, path, where, params.get(VALUE_TYPE))
        written = target.build(values, directory, dtype, file_version, {})
        return json_index.wrap(path, written)


JSON = JsonIndexType(
    "JSON",
    IndexDetails(json_index.TYPE_URL, b"", json_index.INDEX_VERSION),
    lambda *args, **kwargs: None,
    _not_opened,
    _PARAMETERS,
)


def _target(params: Mapping[str, Any], where: str) -> tuple[registry.IndexType, str]:
    missing = sorted({"target_index_type", "path"} - set(params))
    if missing:
        raise ArgumentError(f"{where}: the parameters need {missing}")
    name = params["target_index_type"]
    if not isinstance(name, str):
        raise ArgumentError(f"{where}: target_index_type must be a string, not {name!r}")
    if name.upper() not in json_index.TARGETS:
        raise UnsupportedIndexError(
            f"{where}: lancelet builds JSON indices with target types "
            f"{sorted(json_index.TARGETS)}, not {name!r}"
        )
    extra = params.get("target_index_parameters")
    if extra is not None and (not isinstance(extra, str) or json.loads(extra or "{}") != {}):
        raise UnsupportedOptionError(
            f"{where}: target_index_parameters {extra!r}: lancelet builds the target index "
            "with its default parameters only"
        )
    path = params["path"]
    json_index.path_keys(path, where)
    return registry.BY_NAME[name.upper()], path


def target_kind(details: IndexDetails | Any | None) -> registry.IndexType | None:
    """The index type whose reader reads an index with these details: its own, or for
    a JSON index its target's (None when lancelet reads neither)."""
    if details is None:
        return None
    unwrapped = json_index.unwrap(details.type_url, details.value)
    if unwrapped is None:
        return registry.BY_TYPE_URL.get(details.type_url)
    kind = registry.BY_TYPE_URL.get(unwrapped.target_type_url)
    return kind if kind is not None and kind.name in json_index.TARGETS else None


def rebuild_kind(details: IndexDetails | Any | None) -> registry.IndexType | None:
    """The index type that rebuilds an index with these details (None: lancelet does
    not), and for a JSON index its parameters."""
    if details is None:
        return None
    if json_index.unwrap(details.type_url, details.value) is None:
        return registry.BY_TYPE_URL.get(details.type_url)
    return JSON if target_kind(details) is not None else None


def rebuild_parameters(details: Any, value_type: pa.DataType) -> dict[str, Any]:
    """The parameters that rebuild a JSON index with these details, whose target holds
    values of ``value_type``."""
    wrapped = json_index.unwrap(details.type_url, details.value)
    target = target_kind(details)
    assert wrapped is not None and target is not None
    return {"target_index_type": target.name, "path": wrapped.path, VALUE_TYPE: value_type}
