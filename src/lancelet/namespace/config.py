"""The properties a directory namespace is configured by (pylance 14's names)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lancelet import io
from lancelet.errors import ArgumentError, UnsupportedOptionError

STORAGE_PREFIX = "storage."


@dataclass(frozen=True)
class DirectoryConfig:
    """``root`` as given (shown by namespace_id), its canonical URI, and the switches."""

    root: str
    root_uri: str
    manifest_enabled: bool
    dir_listing_enabled: bool
    storage_options: dict[str, str] | None


def parse_properties(properties: Mapping[str, Any]) -> DirectoryConfig:
    props = {str(k): str(v) for k, v in properties.items()}
    root = props.pop("root", None)
    if not root:
        raise ArgumentError("DirectoryNamespace: the 'root' property is required")
    manifest_enabled = _flag(props.pop("manifest_enabled", "true"), "manifest_enabled")
    dir_listing_enabled = _flag(props.pop("dir_listing_enabled", "true"), "dir_listing_enabled")
    storage = {
        key[len(STORAGE_PREFIX) :]: props.pop(key)
        for key in list(props)
        if key.startswith(STORAGE_PREFIX)
    }
    if props:
        raise UnsupportedOptionError(
            f"DirectoryNamespace: lancelet does not support the properties {sorted(props)} "
            "(it supports root, manifest_enabled, dir_listing_enabled and storage.*)"
        )
    return DirectoryConfig(
        root=root,
        root_uri=root_uri(root),
        manifest_enabled=manifest_enabled,
        dir_listing_enabled=dir_listing_enabled,
        storage_options=storage or None,
    )


def root_uri(root: str) -> str:
    """``root`` as a URI without a trailing slash (a local path becomes file://)."""
    text = root.rstrip("/") or "/"
    if "://" in text:
        return text
    return "file://" + io.local_path(text).rstrip("/")


def _flag(value: str, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ArgumentError(f"DirectoryNamespace: {name} must be 'true' or 'false', not {value!r}")
