"""Datasets on the session's local S3 server (moto on 127.0.0.1)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests import s3server
from tests.s3server import S3Server


@pytest.fixture(autouse=True)
def _local_only_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store built without options reads the environment: make anything it finds
    there point at this machine (a closed port), with static credentials, so that no
    test can reach a real endpoint or a cloud metadata service by mistake."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3server.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3server.SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", s3server.REGION)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)


@dataclass(frozen=True)
class S3Place:
    """A fresh bucket, a dataset URI in it, and pylance-style options for the server."""

    server: S3Server
    bucket: str
    uri: str

    @property
    def options(self) -> dict[str, str]:
        return self.server.storage_options

    def objects(self, prefix: str = "") -> list[str]:
        return self.server.keys(self.bucket, prefix)


@pytest.fixture
def s3(s3_server: S3Server, s3_bucket: str) -> S3Place:
    return S3Place(s3_server, s3_bucket, f"s3://{s3_bucket}/ds")
