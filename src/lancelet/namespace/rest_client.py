"""``RestNamespace``: a client of a Lance Namespace REST server.

Each operation of :data:`lancelet.namespace.rest_routes.ROUTES` is one HTTP request
(standard library ``urllib``); an error answer becomes the namespace error its code
names.  Operations without a route raise ``UnsupportedOperationError``, as the
``LanceNamespace`` base class does.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

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
    LanceNamespace,
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

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.namespace.errors import UnsupportedOperationError, from_error_code
from lancelet.namespace.rest_routes import ARROW_STREAM, BY_OPERATION, DEFAULT_DELIMITER, join_id

HEADER_PREFIX = "header."
Reply = TypeVar("Reply", bound=BaseModel)


class RestNamespace(LanceNamespace):
    """Properties: ``uri`` (the server, required), ``delimiter`` (of ids in paths,
    default "$") and ``header.<name>`` (an HTTP header sent with every request).
    Others (``tls.*``, ...) are refused."""

    def __init__(self, context_provider: Any = None, **properties: Any) -> None:
        if context_provider is not None:
            raise UnsupportedOptionError(
                "RestNamespace: lancelet does not support context_provider"
            )
        props = {str(k): str(v) for k, v in properties.items()}
        uri = props.pop("uri", None)
        if not uri:
            raise ArgumentError("RestNamespace: the 'uri' property is required")
        self._endpoint = uri.rstrip("/")
        self._delimiter = props.pop("delimiter", DEFAULT_DELIMITER)
        self._headers = {
            k[len(HEADER_PREFIX) :]: props.pop(k)
            for k in list(props)
            if k.startswith(HEADER_PREFIX)
        }
        if props:
            raise UnsupportedOptionError(
                f"RestNamespace: lancelet does not support the properties {sorted(props)} "
                "(it supports uri, delimiter and header.*)"
            )

    def namespace_id(self) -> str:
        return f'RestNamespace {{ endpoint: "{self._endpoint}", delimiter: "{self._delimiter}" }}'

    def __repr__(self) -> str:
        return self.namespace_id()

    def retrieve_ops_metrics(self) -> dict[str, int]:
        """Calls per operation: none are counted, as in pylance without the
        ``ops_metrics_enabled`` property (which lancelet does not take)."""
        return {}

    def reset_ops_metrics(self) -> None:
        """Nothing to reset (see ``retrieve_ops_metrics``)."""

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        return self._call("create_namespace", request, CreateNamespaceResponse)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._call("list_namespaces", request, ListNamespacesResponse)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._call("describe_namespace", request, DescribeNamespaceResponse)

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        return self._call("drop_namespace", request, DropNamespaceResponse)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return self._call("namespace_exists", request, NamespaceExistsResponse)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        return self._call("list_tables", request, ListTablesResponse)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        return self._call("describe_table", request, DescribeTableResponse)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        return self._call("table_exists", request, TableExistsResponse)

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        return self._call("create_table", request, CreateTableResponse, request_data)

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        return self._call("declare_table", request, DeclareTableResponse)

    def create_empty_table(self, request: CreateTableRequest) -> CreateTableResponse:
        """lance-namespace's deprecated ``create_empty_table``: declares the table."""
        if request.mode is not None or request.properties or request.storage_options:
            raise UnsupportedOperationError(
                "Unsupported: lancelet's create_empty_table takes only an id"
            )
        declared = self.declare_table(DeclareTableRequest(id=request.id))
        return CreateTableResponse(location=declared.location)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        return self._call("register_table", request, RegisterTableResponse)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        return self._call("deregister_table", request, DeregisterTableResponse)

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        return self._call("drop_table", request, DropTableResponse)

    def _call(
        self, operation: str, request: BaseModel, reply: type[Reply], data: bytes | None = None
    ) -> Reply:
        route = BY_OPERATION[operation]
        fields = request.model_dump(by_alias=True, exclude_none=True)
        ident = fields.pop("id", None)
        query = {"delimiter": self._delimiter} if self._delimiter != DEFAULT_DELIMITER else {}
        for name in route.query:
            value = fields.pop(name, None)
            if value is not None:
                query[name] = str(value).lower() if isinstance(value, bool) else str(value)
        headers = _context_headers(fields)
        if (route.method == "GET" or route.arrow_body) and any(fields.values()):
            # Only the JSON body of a POST carries the other fields.
            raise UnsupportedOperationError(
                f"Unsupported: lancelet's RestNamespace cannot send {sorted(fields)} "
                f"with {operation}"
            )
        path = route.path(quote(join_id(ident, self._delimiter), safe=""))
        url = self._endpoint + path + ("?" + urlencode(query) if query else "")
        if route.arrow_body:
            body, content_type = bytes(data or b""), ARROW_STREAM
        else:
            body, content_type = json.dumps(fields).encode(), "application/json"
        sent = body if route.method == "POST" else None
        answer = self._send(route.method, url, sent, {**headers, "Content-Type": content_type})
        return reply.model_validate(json.loads(answer) if answer else {})

    def _send(self, method: str, url: str, body: bytes | None, extra: dict[str, str]) -> bytes:
        headers = {**self._headers, **extra}
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request) as reply:
                return bytes(reply.read())
        except urllib.error.HTTPError as exc:
            raise _error_of(exc.code, exc.read()) from None


def _context_headers(fields: dict[str, Any]) -> dict[str, str]:
    """The request context's ``header.<name>`` entries, as HTTP headers (the REST
    spec's mapping); other entries stay in ``fields``."""
    context = fields.pop("context", None) or {}
    headers = {
        k[len(HEADER_PREFIX) :]: v for k, v in context.items() if k.startswith(HEADER_PREFIX)
    }
    rest = {k: v for k, v in context.items() if not k.startswith(HEADER_PREFIX)}
    if rest:
        fields["context"] = rest
    return headers


def _error_of(status: int, payload: bytes) -> Exception:
    try:
        found = json.loads(payload)
        return from_error_code(int(found["code"]), str(found.get("error") or ""))
    except (ValueError, KeyError, TypeError):
        text = payload.decode(errors="replace")
        return from_error_code(int(ErrorCode.INTERNAL), f"HTTP {status}: {text}")
