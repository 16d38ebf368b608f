"""A local S3-compatible server for tests: moto's, on 127.0.0.1 only.

One server per test session (see the ``s3`` fixture in ``tests/conftest.py``); each
test takes a fresh bucket, so tests never see each other's objects.  moto honours
conditional writes (``If-None-Match``), which commits rely on, and pylance talks to
it through the same ``storage_options`` as lancelet.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

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
