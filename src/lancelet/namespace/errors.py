"""The namespace errors: lance_namespace's classes, joined to lancelet's hierarchy.

pylance's namespaces raise ``lance_namespace.errors`` classes, and a REST server
reports them by their error code; each class here derives from the lance_namespace
class of the same name (so code written for pylance catches it) and from
:class:`lancelet.errors.LanceletError`.
"""

from __future__ import annotations

from lance_namespace import errors as spec

from lancelet.errors import LanceletError


class UnsupportedOperationError(LanceletError, spec.UnsupportedOperationError):
    """The namespace does not implement this operation, or this mode of it."""


class NamespaceNotFoundError(LanceletError, spec.NamespaceNotFoundError):
    """The namespace named does not exist."""


class NamespaceAlreadyExistsError(LanceletError, spec.NamespaceAlreadyExistsError):
    """A namespace of that name exists."""


class NamespaceNotEmptyError(LanceletError, spec.NamespaceNotEmptyError):
    """The namespace still holds tables or namespaces."""


class TableNotFoundError(LanceletError, spec.TableNotFoundError):
    """The table named does not exist."""


class TableAlreadyExistsError(LanceletError, spec.TableAlreadyExistsError):
    """A table of that name exists."""


class InvalidInputError(LanceletError, spec.InvalidInputError):
    """The request is malformed (an empty id, a location outside the root, ...)."""


# The labels pylance's messages start with.  On the wire (a REST error's "error")
# the message goes without its label, as pylance's server sends it; the code says it.
LABELS: dict[int, str] = {
    spec.ErrorCode.UNSUPPORTED: "Unsupported",
    spec.ErrorCode.NAMESPACE_NOT_FOUND: "Namespace not found",
    spec.ErrorCode.NAMESPACE_ALREADY_EXISTS: "Namespace already exists",
    spec.ErrorCode.NAMESPACE_NOT_EMPTY: "Namespace not empty",
    spec.ErrorCode.TABLE_NOT_FOUND: "Table not found",
    spec.ErrorCode.TABLE_ALREADY_EXISTS: "Table already exists",
    spec.ErrorCode.INVALID_INPUT: "Invalid input",
}


def wire_message(code: int, message: str) -> str:
    """``message`` without the label its code implies."""
    label = LABELS.get(code)
    if label and message.startswith(label + ": "):
        return message[len(label) + 2 :]
    return message


def from_error_code(code: int, message: str) -> spec.LanceNamespaceError:
    """The error a REST server reported by its code (lancelet's class where there is
    one, else lance_namespace's), its message labelled as pylance labels it."""
    for cls in _OURS:
        if cls.code == code:
            label = LABELS[cls.code]
            return cls(message if message.startswith(label) else f"{label}: {message}")
    return spec.from_error_code(code, message)


_OURS: tuple[type[spec.LanceNamespaceError], ...] = (
    UnsupportedOperationError,
    NamespaceNotFoundError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    TableNotFoundError,
    TableAlreadyExistsError,
    InvalidInputError,
)
