"""The Lance Namespace REST operations lancelet serves and calls: method, path, models.

Paths and bodies follow the lance-namespace REST spec (lance_namespace_urllib3_client's
api modules): ``/v1/<kind>/<id>/<action>``, the id's names joined by the delimiter
(``$`` unless the ``delimiter`` query parameter names another; the delimiter alone
is the root namespace), the request as a JSON body or (create_table) an Arrow IPC
stream, and some request fields as query parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import ErrorCode
from pydantic import BaseModel

DEFAULT_DELIMITER = "$"
ARROW_STREAM = "application/vnd.apache.arrow.stream"


@dataclass(frozen=True)
class Route:
    """One operation: the namespace method it calls and how it travels."""

    operation: str
    method: str
    kind: str
    action: str
    request: type[BaseModel]
    response: type[BaseModel]
    # Request fields sent as query parameters rather than in the body.
    query: tuple[str, ...] = ()
    # The body is the Arrow IPC stream of the data, not JSON.
    arrow_body: bool = False
    # Answered with an empty body (pylance's server sends none for the exists checks).
    empty_reply: bool = False

    def path(self, object_id: str) -> str:
        return f"/v1/{self.kind}/{object_id}/{self.action}"


ROUTES: tuple[Route, ...] = (
    Route(
        "create_namespace",
        "POST",
        "namespace",
        "create",
        CreateNamespaceRequest,
        CreateNamespaceResponse,
    ),
    Route(
        "list_namespaces",
        "GET",
        "namespace",
        "list",
        ListNamespacesRequest,
        ListNamespacesResponse,
        query=("page_token", "limit"),
    ),
    Route(
        "describe_namespace",
        "POST",
        "namespace",
        "describe",
        DescribeNamespaceRequest,
        DescribeNamespaceResponse,
    ),
    Route(
        "drop_namespace", "POST", "namespace", "drop", DropNamespaceRequest, DropNamespaceResponse
    ),
    Route(
        "namespace_exists",
        "POST",
        "namespace",
        "exists",
        NamespaceExistsRequest,
        NamespaceExistsResponse,
        empty_reply=True,
    ),
    Route(
        "list_tables",
        "GET",
        "namespace",
        "table/list",
        ListTablesRequest,
        ListTablesResponse,
        query=("page_token", "limit", "include_declared"),
    ),
    Route(
        "create_table",
        "POST",
        "table",
        "create",
        CreateTableRequest,
        CreateTableResponse,
        query=("mode",),
        arrow_body=True,
    ),
    Route("declare_table", "POST", "table", "declare", DeclareTableRequest, DeclareTableResponse),
    Route(
        "describe_table",
        "POST",
        "table",
        "describe",
        DescribeTableRequest,
        DescribeTableResponse,
        query=("with_table_uri", "load_detailed_metadata", "check_declared"),
    ),
    Route(
        "table_exists",
        "POST",
        "table",
        "exists",
        TableExistsRequest,
        TableExistsResponse,
        empty_reply=True,
    ),
    Route("drop_table", "POST", "table", "drop", DropTableRequest, DropTableResponse),
    Route(
        "deregister_table",
        "POST",
        "table",
        "deregister",
        DeregisterTableRequest,
        DeregisterTableResponse,
    ),
    Route(
        "register_table", "POST", "table", "register", RegisterTableRequest, RegisterTableResponse
    ),
)

BY_OPERATION = {r.operation: r for r in ROUTES}
BY_PATH = {(r.method, r.kind, r.action): r for r in ROUTES}

_NOT_FOUND = {
    ErrorCode.NAMESPACE_NOT_FOUND,
    ErrorCode.TABLE_NOT_FOUND,
    ErrorCode.TABLE_INDEX_NOT_FOUND,
    ErrorCode.TABLE_TAG_NOT_FOUND,
    ErrorCode.TRANSACTION_NOT_FOUND,
    ErrorCode.TABLE_VERSION_NOT_FOUND,
    ErrorCode.TABLE_COLUMN_NOT_FOUND,
    ErrorCode.TABLE_BRANCH_NOT_FOUND,
}
_CONFLICT = {
    ErrorCode.NAMESPACE_ALREADY_EXISTS,
    ErrorCode.NAMESPACE_NOT_EMPTY,
    ErrorCode.TABLE_ALREADY_EXISTS,
    ErrorCode.TABLE_INDEX_ALREADY_EXISTS,
    ErrorCode.TABLE_TAG_ALREADY_EXISTS,
    ErrorCode.TABLE_BRANCH_ALREADY_EXISTS,
    ErrorCode.CONCURRENT_MODIFICATION,
}
_OTHER: dict[int, int] = {
    ErrorCode.UNSUPPORTED: 406,
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.THROTTLING: 429,
}


def http_status(code: int) -> int:
    """The HTTP status a namespace error code is reported with."""
    if code in _NOT_FOUND:
        return 404
    if code in _CONFLICT:
        return 409
    return _OTHER.get(code, 500)


def join_id(ident: list[str] | None, delimiter: str) -> str:
    """The path form of an id (the delimiter alone for the root)."""
    return delimiter.join(ident) if ident else delimiter


def split_id(text: str, delimiter: str) -> list[str]:
    return [] if text == delimiter else text.split(delimiter)
