"""A local S3-compatible server for tests: moto's, on 127.0.0.1 only.

One server per test session (see the ``s3`` fixture in ``tests/conftest.py``); each
test takes a fresh bucket, so tests never see each other's objects.  moto honours
conditional writes (``If-None-Match``), which commits rely on, and pylance talks to
it through the same ``storage_options`` as lancelet.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

ACCESS_KEY = "lancelet-test"
SECRET_KEY = "lancelet-test-secret"
REGION = "us-east-1"
_buckets = itertools.count()


@dataclass
class S3Server:
    endpoint: str
    _server: Any = field(repr=False)

    @property
    def storage_options(self) -> dict[str, str]:
        """pylance's keys, which lancelet takes too."""
        return {
            "endpoint": self.endpoint,
            "region": REGION,
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "allow_http": "true",
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def new_bucket(self, prefix: str = "bucket") -> str:
        """A new, empty bucket's name."""
        name = f"{prefix}-{next(_buckets)}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def stop(self) -> None:
        self._server.stop()


def start() -> S3Server:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == "127.0.0.1", host
    return S3Server(f"http://127.0.0.1:{port}", server)


@dataclass(frozen=True)
class SignedRequest:
    """One request the server received: its method, path (``/bucket/key``, path-style)
    and the access key id its SigV4 ``Authorization`` header names ("" if unsigned)."""

    method: str
    path: str
    list_prefix: str
    access_key: str


_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")


class RequestLog:
    """The requests a recording server received, in arrival order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[SignedRequest] = []

    def add(self, environ: dict[str, Any]) -> None:
        found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        query = parse_qs(environ.get("QUERY_STRING", ""))
        seen = SignedRequest(
            environ["REQUEST_METHOD"],
            unquote(environ.get("PATH_INFO", "")),
            query.get("prefix", [""])[0],
            found.group(1) if found else "",
        )
        with self._lock:
            self._seen.append(seen)

    def under(self, bucket: str, prefix: str) -> list[SignedRequest]:
        """Requests naming objects below ``prefix`` in ``bucket``, or listing them."""
        with self._lock:
            seen = list(self._seen)
        return [
            r
            for r in seen
            if r.path.startswith(f"/{bucket}/{prefix}")
            or (r.path.rstrip("/") == f"/{bucket}" and r.list_prefix.startswith(prefix))
        ]

    def all(self) -> list[SignedRequest]:
        with self._lock:
            return list(self._seen)


def start_recording() -> tuple[S3Server, RequestLog]:
    """A server of its own that also logs every request's signing key.  moto accepts
    any key, so two datasets can use two; the log shows which one signed what."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    log = RequestLog()

    def recording(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
        def call(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            log.add(environ)
            return app(environ, start_response)

        return call

    class Recording(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = recording(DomainDispatcherApplication(create_backend_app))
            self._server = make_server(
                "127.0.0.1", 0, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    server = Recording(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == "127.0.0.1", host
    return S3Server(f"http://127.0.0.1:{port}", server), log
