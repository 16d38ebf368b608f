"""``storage_options``: pylance's keys sorted into store, HTTP client and retry
settings; keys lancelet cannot honour refused; values turned into strings."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from lancelet import io
from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.io.options import StoreOptions, split_options


def test_keys_are_sorted_into_store_client_and_retry_settings() -> None:
    found = split_options(
        {
            "aws_access_key_id": "AK",
            "aws_secret_access_key": "SK",
            "endpoint": "http://127.0.0.1:9",
            "region": "us-east-1",
            "allow_http": "true",
            "timeout": "30s",
            "connect_timeout": "5s",
            "client_max_retries": "3",
            "client_retry_timeout": "20",
        },
        "test",
    )
    assert found.config == {
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "endpoint": "http://127.0.0.1:9",
        "region": "us-east-1",
    }
    assert found.client == {"allow_http": "true", "timeout": "30s", "connect_timeout": "5s"}
    assert found.retry == {"max_retries": 3, "retry_timeout": timedelta(seconds=20)}


def test_key_case_is_ignored() -> None:
    found = split_options({"ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1"}, "test")
    assert found.client == {"allow_http": "true"}
    assert found.config == {"aws_region": "eu-west-1"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (2.5, "2.5"),
        ("already", "already"),
    ],
)
def test_values_become_strings(value: Any, expected: str) -> None:
    found = split_options({"allow_http": value, "region": value}, "test")
    assert found.client == {"allow_http": expected}
    assert found.config == {"region": expected}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10", timedelta(seconds=10)), ("2.5s", timedelta(seconds=2.5)), (7, timedelta(seconds=7))],
)
def test_retry_timeout_values(text: Any, expected: timedelta) -> None:
    assert split_options({"client_retry_timeout": text}, "t").retry == {"retry_timeout": expected}


@pytest.mark.parametrize(
    "value", ["many", "", "3x", "-1", "2.7", "nan", "inf", "1e30", str(2**64), "\u00b2"]
)
def test_retry_counts_that_are_not_counts(value: str) -> None:
    # Each was once a raw OverflowError or ValueError from the store's constructor
    # (or, for "2.7", silently 2); the option is named instead.
    with pytest.raises(ArgumentError, match="client_max_retries"):
        split_options({"client_max_retries": value}, "t")


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "1e30"])
def test_retry_timeouts_that_are_not_durations(value: str) -> None:
    with pytest.raises(ArgumentError, match="client_retry_timeout"):
        split_options({"client_retry_timeout": value}, "t")


def test_bad_retry_values_fail_at_configure() -> None:
    uri = f"s3://retries-{uuid.uuid4().hex[:8]}/ds"
    for options in ({"client_max_retries": "-1"}, {"client_retry_timeout": "1e30"}):
        with pytest.raises(ArgumentError):
            io.FileIO.for_uri(uri, options)


def test_a_value_of_none_is_refused() -> None:
    # str(None) would quietly configure the region "None".
    with pytest.raises(TypeError, match="region"):
        split_options({"region": None}, "t")


@pytest.mark.parametrize(
    "key",
    [
        "download_retry_count",
        "expires_at_millis",
        "aws_s3_express",
        "s3_express",
        "use_opendal",
        "lance_io_threads",
        "USE_OPENDAL",
    ],
)
def test_keys_lancelet_cannot_honour_are_refused(key: str) -> None:
    with pytest.raises(UnsupportedOptionError, match=key):
        split_options({key: "1"}, "t")


@pytest.mark.parametrize("options", ["allow_http=true", [("allow_http", "true")], 3])
def test_options_must_be_a_mapping(options: Any) -> None:
    with pytest.raises(TypeError, match="storage_options"):
        split_options(options, "t")


def test_option_names_must_be_strings() -> None:
    with pytest.raises(TypeError, match="names must be strings"):
        split_options({1: "x"}, "t")


def test_none_and_empty() -> None:
    assert split_options(None, "t") == StoreOptions()
    assert split_options({}, "t") == StoreOptions()


def test_equal_options_share_a_key_whatever_their_order() -> None:
    a = split_options({"region": "r", "allow_http": "true", "client_max_retries": 2}, "t")
    b = split_options({"client_max_retries": "2", "allow_http": True, "region": "r"}, "t")
    assert a.key() == b.key()
    assert a.key() != split_options({"region": "r"}, "t").key()


def test_a_file_io_refuses_an_unknown_key_at_once() -> None:
    # The store is built when the FileIO is made for a URI, so the call that gave a
    # bad key fails, before any request (no server is needed).
    uri = f"s3://unknown-key-{uuid.uuid4().hex[:8]}/ds"
    with pytest.raises(UnsupportedOptionError, match="no_such_option"):
        io.FileIO.for_uri(uri, {"no_such_option": "1"})


def test_local_options_are_checked_too(tmp_path: object) -> None:
    io.FileIO.for_uri(str(tmp_path), {"region": "ignored"})  # pylance ignores them too
    with pytest.raises(TypeError):
        io.FileIO.for_uri(str(tmp_path), "region=x")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedOptionError):
        io.FileIO.for_uri(str(tmp_path), {"use_opendal": "true"})


def test_the_memory_store_takes_no_options() -> None:
    uri = f"memory://{uuid.uuid4().hex}/x"
    with pytest.raises(UnsupportedOptionError, match="memory"):
        io.FileIO.for_uri(uri, {"region": "x"})
    files = io.FileIO.for_uri(uri, None)
    files.put(uri, b"kept")
    assert files.read_bytes(uri) == b"kept"
