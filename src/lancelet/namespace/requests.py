"""Checking namespace requests: ids, locations, paging, the fields lancelet honours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lancelet.namespace.errors import InvalidInputError, UnsupportedOperationError

# Case-insensitive spellings of the default mode of each operation.
CREATE_MODES = ("create",)
DROP_MODES = ("fail",)
# Fields any request may carry: who asks and free-form context do not change what a
# directory namespace does.
_ALWAYS = frozenset({"id", "identity", "context"})


def refuse_fields(request: Any, operation: str, **accepted: tuple[Any, ...] | None) -> None:
    """Refuse a request field lancelet does not implement.  ``accepted`` names the
    fields honoured: ``None`` for any value, or the values honoured (strings compared
    case-insensitively, snake_case or PascalCase).  Other fields must be unset."""
    for name in type(request).model_fields:
        value = getattr(request, name)
        if name in _ALWAYS or value is None:
            continue
        if name in accepted:
            allowed = accepted[name]
            if allowed is None or _normal(value) in allowed:
                continue
        elif value in ({}, []):
            continue
        raise UnsupportedOperationError(
            f"Unsupported: lancelet's {operation} does not support {name}={value!r}"
        )


def _normal(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("_", "").lower()
    return value


def namespace_id(ident: Sequence[str] | None) -> list[str]:
    """A namespace id; None and [] are the root."""
    return _checked(list(ident or []))


def required_namespace_id(ident: Sequence[str] | None) -> list[str]:
    if ident is None:
        raise InvalidInputError("Invalid input: Namespace ID is required")
    return _checked(list(ident))


def table_id(ident: Sequence[str] | None) -> list[str]:
    if not ident:
        raise InvalidInputError("Invalid input: Table ID cannot be empty")
    return _checked(list(ident))


def _checked(ident: list[str]) -> list[str]:
    for name in ident:
        if not name or "$" in name or "/" in name or name in (".", ".."):
            raise InvalidInputError(
                f"Invalid input: {name!r} is not a valid object name (it must be non-empty "
                "and contain neither '$' nor '/')"
            )
    return ident


def relative_location(location: str | None) -> str:
    """A table location to register: a path relative to the namespace's root."""
    if not location:
        raise InvalidInputError("Invalid input: register_table requires a location")
    rule = "Location must be a relative path within the root directory"
    if "://" in location:
        raise InvalidInputError(
            f"Invalid input: Absolute URIs are not allowed for register_table. {rule}: {location}"
        )
    if location.startswith(("/", "\\")) or (len(location) > 1 and location[1] == ":"):
        raise InvalidInputError(
            f"Invalid input: Absolute paths are not allowed for register_table. {rule}: {location}"
        )
    if ".." in location.replace("\\", "/").split("/"):
        raise InvalidInputError(f"Invalid input: Path traversal is not allowed. {rule}: {location}")
    return location


def page(names: list[str], token: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """The names after ``token`` (sorted order), at most ``limit`` of them, and the
    token of the next page (None on the last)."""
    if token is not None:
        names = [n for n in names if n > token]
    if limit is None or limit >= len(names):
        return names, None
    if limit < 0:
        raise InvalidInputError(f"Invalid input: limit must not be negative, not {limit}")
    kept = names[:limit]
    return kept, (kept[-1] if kept else None)


def read_ipc_stream(data: bytes) -> pa.Table:
    try:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except pa.ArrowInvalid as exc:
        raise InvalidInputError(
            f"Invalid input: the request data is not an Arrow IPC stream: {exc}"
        ) from exc
