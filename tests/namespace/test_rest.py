"""lancelet's RestAdapter and RestNamespace against pylance's, in every pairing."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lance
import lance.namespace as pylance_ns
import lance_namespace as ln
import pytest
from lance_namespace import errors as spec
from lance_namespace_urllib3_client.models import Identity

import lancelet.namespace as lancelet_ns
from lancelet.errors import UnsupportedOptionError
from tests.namespace import scenario
from tests.namespace.test_directory import DEVIATIONS

LOCAL = "pylance's RestAdapter serves a DirectoryNamespace on a local root"


@contextmanager
def _served(server: Any, root: str) -> Iterator[int]:
    with server.RestAdapter("dir", {"root": root}, port=0) as adapter:
        yield adapter.port


def _run(server: Any, client: Any, root: Path, delimiter: str = "$") -> dict[str, Any]:
    root.mkdir()
    with _served(server, str(root)) as port:
        namespace = client.RestNamespace(uri=f"http://127.0.0.1:{port}", delimiter=delimiter)
        found = scenario.run(namespace, f"file://{root}")
    return {k: _without(v, str(root)) for k, v in found.items()}


def _without(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, root) for k, v in value.items()}
    return value.replace(root, "<root>") if isinstance(value, str) else value


@pytest.mark.local_files(LOCAL)
@pytest.mark.parametrize(
    ("server", "client"),
    [(lancelet_ns, pylance_ns), (pylance_ns, lancelet_ns), (lancelet_ns, lancelet_ns)],
    ids=["lancelet-server", "lancelet-client", "lancelet-both"],
)
def test_same_answers_as_pylance(tmp_path: Path, server: Any, client: Any) -> None:
    expected = _run(pylance_ns, pylance_ns, tmp_path / "pylance")
    if server is lancelet_ns:
        expected.update(DEVIATIONS)
    assert _run(server, client, tmp_path / "lancelet", delimiter="@") == expected


@pytest.mark.local_files(LOCAL)
def test_pylance_server_keeps_what_lancelet_client_wrote(tmp_path: Path) -> None:
    with _served(pylance_ns, str(tmp_path)) as port:
        ours = lancelet_ns.RestNamespace(uri=f"http://127.0.0.1:{port}")
        ours.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
        ours.create_table(ln.CreateTableRequest(id=["a", "t"]), scenario.ipc_bytes())
    theirs = pylance_ns.DirectoryNamespace(root=str(tmp_path))
    location = theirs.describe_table(ln.DescribeTableRequest(id=["a", "t"])).location
    assert lance.dataset(location).to_table().equals(scenario.DATA)


def _post(port: int, path: str, body: bytes) -> tuple[int, dict[str, Any] | None]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request) as reply:
            payload = reply.read()
            return reply.status, json.loads(payload) if payload else None
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        return exc.code, json.loads(payload) if payload else None


def test_server_answers_as_the_spec_says() -> None:
    root = f"memory://rest-{uuid.uuid4().hex}"
    with _served(lancelet_ns, root) as port:
        assert _post(port, "/v1/namespace/a/create", b"{}") == (200, {})
        # An unknown request field is refused, not dropped.
        status, body = _post(port, "/v1/namespace/b/create", b'{"colour": "red"}')
        assert (status, body and body["code"]) == (400, int(spec.ErrorCode.INVALID_INPUT))
        status, body = _post(port, "/v1/namespace/a/create", b"{}")
        assert status == 409 and body == {"error": "a", "code": 2}
        assert _post(port, "/v1/table/a$t/no_such_action", b"{}") == (404, None)
        # The root is the delimiter alone.
        assert _post(port, "/v1/namespace/%24/describe", b"{}") == (200, {"properties": {}})


def test_adapter_lifecycle_and_refusals() -> None:
    root = f"memory://rest-{uuid.uuid4().hex}"
    adapter = lancelet_ns.RestAdapter("dir", {"root": root}, port=0)
    assert adapter.port == 0
    adapter.start()
    try:
        assert adapter.port > 0
        client = ln.connect("rest", {"uri": "http://127.0.0.1:1"})
        assert not isinstance(client, lancelet_ns.RestNamespace)  # lance_namespace: pylance's
        ours = lancelet_ns.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
        with pytest.raises(spec.UnsupportedOperationError):
            ours.rename_table(ln.RenameTableRequest(id=["t"], new_table_name="u"))
        with pytest.raises(spec.NamespaceNotFoundError, match="Namespace not found"):
            ours.describe_namespace(ln.DescribeNamespaceRequest(id=["nope"]))
    finally:
        adapter.stop()
    assert adapter.port == 0
    with pytest.raises(UnsupportedOptionError, match="loopback"):
        lancelet_ns.RestAdapter("dir", {"root": root}, host="0.0.0.0")
    with pytest.raises(UnsupportedOptionError, match="tls.cert_file"):
        lancelet_ns.RestNamespace(uri="http://127.0.0.1:1", **{"tls.cert_file": "x"})


def test_client_refuses_fields_it_cannot_send() -> None:
    seen: list[str | None] = []

    class Recorder(lancelet_ns.DirectoryNamespace):
        def list_tables(self, request: ln.ListTablesRequest) -> ln.ListTablesResponse:
            seen.append(request.page_token)
            return super().list_tables(request)

    root = f"memory://rest-{uuid.uuid4().hex}"
    adapter = lancelet_ns.RestAdapter("dir", {"root": root}, port=0)
    adapter._namespace = Recorder(root=root)  # a backend that records what arrives
    with adapter:
        ours = lancelet_ns.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
        ours.list_tables(ln.ListTablesRequest(id=[], page_token="m", context={"header.X-A": "1"}))
        assert seen == ["m"]
        with pytest.raises(spec.UnsupportedOperationError, match="identity"):
            ours.list_tables(ln.ListTablesRequest(id=[], identity=Identity(api_key="secret")))
        with pytest.raises(spec.UnsupportedOperationError, match="properties"):
            ours.create_table(
                ln.CreateTableRequest(id=["t"], properties={"k": "v"}), scenario.ipc_bytes()
            )
    assert seen == ["m"]
