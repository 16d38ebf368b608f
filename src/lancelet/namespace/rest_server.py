"""``RestAdapter``: serve a namespace over the Lance Namespace REST API.

A ``ThreadingHTTPServer`` from the standard library, in a background thread, bound
to a loopback address only (the server has no authentication).  Each request is
decoded into the operation's request model (:mod:`lancelet.namespace.rest_routes`),
run on the backend namespace, and answered with the response model as JSON; a
namespace error is answered with its HTTP status and ``{"error", "code"}`` body, as
pylance's adapter answers.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import lance_namespace
from lance_namespace import LanceNamespace
from lance_namespace.errors import ErrorCode, LanceNamespaceError
from pydantic import BaseModel

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.namespace.directory import DirectoryNamespace
from lancelet.namespace.errors import InvalidInputError, wire_message
from lancelet.namespace.rest_client import RestNamespace
from lancelet.namespace.rest_routes import (
    BY_PATH,
    DEFAULT_DELIMITER,
    Route,
    http_status,
    split_id,
)

DEFAULT_PORT = 2333
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class RestAdapter:
    """Serve the namespace ``namespace_client_impl`` ("dir": lancelet's
    DirectoryNamespace; "rest": lancelet's RestNamespace; else a class path, as
    ``lance_namespace.connect`` takes) on ``host:port`` (port 0: any free port)."""

    def __init__(
        self,
        namespace_client_impl: str,
        namespace_client_properties: dict[str, str] | None = None,
        session: Any = None,
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        if session is not None:
            raise UnsupportedOptionError("RestAdapter: lancelet does not support session")
        self.host = host
        self._bind_host = host or "127.0.0.1"
        if self._bind_host not in _LOOPBACK:
            raise UnsupportedOptionError(
                f"RestAdapter: lancelet serves on a loopback address only, not {host!r}"
            )
        self._port = DEFAULT_PORT if port is None else port
        self.namespace_client_impl = namespace_client_impl
        self._namespace = connect_backend(
            namespace_client_impl,
            {str(k): str(v) for k, v in (namespace_client_properties or {}).items()},
        )
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port served on; 0 before :meth:`start`."""
        return self._server.server_address[1] if self._server is not None else 0

    def start(self) -> None:
        if self._server is not None:
            raise ArgumentError("RestAdapter: the server is already running")
        server = ThreadingHTTPServer((self._bind_host, self._port), _handler(self._namespace))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="lancelet-rest-adapter", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> RestAdapter:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RestAdapter(host='{self.host}', port={self.port})"


def connect_backend(impl: str, properties: dict[str, str]) -> LanceNamespace:
    """The namespace ``impl`` names, lancelet's own for "dir" and "rest"."""
    if impl == "dir":
        return DirectoryNamespace(**properties)
    if impl == "rest":
        return RestNamespace(**properties)
    return lance_namespace.connect(impl, properties)


def _handler(namespace: LanceNamespace) -> type[BaseHTTPRequestHandler]:
    class Handler(_NamespaceHandler):
        backend = namespace

    return Handler


class _NamespaceHandler(BaseHTTPRequestHandler):
    backend: LanceNamespace
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a test server: no access log on stderr

    def _serve(self, method: str) -> None:
        if self.headers.get("Transfer-Encoding"):
            # Bodies are read by Content-Length; a chunked one would be misread.
            self._error(int(ErrorCode.INVALID_INPUT), "request bodies must have a Content-Length")
            self.close_connection = True
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = urlsplit(self.path)
        segments = parts.path.split("/")
        # /v1/<kind>/<id>/<action...>
        if len(segments) < 5 or segments[1] != "v1":
            self._reply(404, b"")
            return
        kind, object_id, action = segments[2], unquote(segments[3]), "/".join(segments[4:])
        route = BY_PATH.get((method, kind, action))
        if route is None:
            self._reply(404, b"")
            return
        query = dict(parse_qsl(parts.query))
        try:
            payload = _run(self.backend, route, object_id, query, body)
        except LanceNamespaceError as exc:
            self._error(int(exc.code), str(exc))
        except Exception as exc:  # the backend's failure, reported to the client
            self._error(int(ErrorCode.INTERNAL), f"{type(exc).__name__}: {exc}")
        else:
            self._reply(200, payload)

    def _error(self, code: int, message: str) -> None:
        payload = {"error": wire_message(code, message), "code": code}
        self._reply(http_status(code), json.dumps(payload).encode())

    def _reply(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _run(
    backend: LanceNamespace, route: Route, object_id: str, query: dict[str, str], body: bytes
) -> bytes:
    delimiter = query.pop("delimiter", DEFAULT_DELIMITER)
    fields: dict[str, Any] = {}
    if body and not route.arrow_body:
        try:
            fields = json.loads(body)
        except ValueError as exc:
            raise InvalidInputError(f"Invalid input: the request body is not JSON: {exc}") from exc
        if not isinstance(fields, dict):
            raise InvalidInputError("Invalid input: the request body must be a JSON object")
    fields.update({k: _query_value(k, v) for k, v in query.items() if k in route.query})
    fields["id"] = split_id(object_id, delimiter)
    request = _request(route, fields)
    operation = getattr(backend, route.operation)
    result = operation(request, body) if route.arrow_body else operation(request)
    if route.empty_reply or result is None:
        return b""
    return json.dumps(result.model_dump(by_alias=True, exclude_none=True)).encode()


def _request(route: Route, fields: dict[str, Any]) -> BaseModel:
    """The request model; a field the model does not know is refused, not dropped."""
    model = route.request
    known = {name for name in model.model_fields} | {
        f.alias for f in model.model_fields.values() if f.alias
    }
    unknown = sorted(set(fields) - known)
    if unknown:
        raise InvalidInputError(f"Invalid input: {route.operation} has no fields {unknown}")
    try:
        return model.model_validate(fields)
    except ValueError as exc:
        raise InvalidInputError(f"Invalid input: {exc}") from exc


def _query_value(name: str, text: str) -> Any:
    """A query parameter as its request field's type."""
    if name == "limit":
        return int(text) if text.lstrip("-").isdigit() else text
    if name in ("include_declared", "with_table_uri", "load_detailed_metadata", "check_declared"):
        return {"true": True, "false": False}.get(text.lower(), text)
    return text
