"""``--storage-option`` and ``$LANCELET_STORAGE_OPTIONS`` against the tests' local S3
server (moto on 127.0.0.1), checked through pylance with the same options."""

from __future__ import annotations

import json

import lance
import pytest
from click.testing import CliRunner

from tests import s3server
from tests.cli.conftest import Cli, rows
from tests.s3server import S3Server


@pytest.fixture(autouse=True)
def _local_only_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a store finds in the environment points at a closed local port, so
    only the options the command is given can reach the server."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "wrong")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    monkeypatch.setenv("AWS_REGION", s3server.REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)


def _flags(options: dict[str, str]) -> list[str]:
    return [word for key, value in options.items() for word in ("-S", f"{key}={value}")]


def test_storage_options_as_flags_and_from_the_environment(
    run: Cli, s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3://{s3_bucket}/table"
    options = s3_server.storage_options
    lance.write_dataset(rows(0, 30), uri, storage_options=options, max_rows_per_file=10)
    lance.write_dataset(rows(30, 5), uri, mode="append", storage_options=options)
    theirs = lance.dataset(uri, storage_options=options)

    info = run.json("info", uri, *_flags(options))
    assert info["rows"] == theirs.count_rows() == 35
    assert info["fragments"] == len(theirs.get_fragments()) == 4
    assert info["version"] == theirs.version == 2
    head = run.json("head", uri, "-n", "3", "--filter", "id >= 30", *_flags(options))
    assert head == theirs.to_table(filter="id >= 30", limit=3).to_pylist()

    # From the environment; a flag overrides the key the environment also gives.
    wrong_endpoint = {**options, "endpoint": "http://127.0.0.1:9"}
    env = {"COLUMNS": "250", "LANCELET_STORAGE_OPTIONS": json.dumps(wrong_endpoint)}
    from_env = Cli(CliRunner(env=env))
    history = from_env.json("history", uri, "-S", f"endpoint={options['endpoint']}")
    assert [e["version"] for e in history] == [v["version"] for v in theirs.versions()[::-1]]
    env["LANCELET_STORAGE_OPTIONS"] = json.dumps(options)
    from_env("tag", "create", uri, "first", "1")
    assert lance.dataset(uri, storage_options=options).tags.get_version("first") == 1
    assert s3_server.keys(s3_bucket, "table/_refs/tags/") == ["table/_refs/tags/first.json"]
