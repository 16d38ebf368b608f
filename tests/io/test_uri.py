"""Locations: how a path or URI is parsed and written canonically, and which are refused.

The expected values are written out by hand from the URI grammar (RFC 3986) and the
schemes lancelet documents, not taken from lancelet's own output.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lancelet import io
from lancelet.errors import URIError
from lancelet.io import uri as uris
from lancelet.io.uri import Location


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://bucket/a/b", Location("s3", "bucket", "a/b")),
        ("s3://bucket/a/b/", Location("s3", "bucket", "a/b")),
        ("s3://bucket//a///b", Location("s3", "bucket", "a/b")),
        ("s3://bucket/./a/./b", Location("s3", "bucket", "a/b")),
        ("s3://bucket", Location("s3", "bucket", "")),
        ("s3://bucket/", Location("s3", "bucket", "")),
        ("S3://bucket/k", Location("s3", "bucket", "k")),
        ("s3a://bucket/k", Location("s3a", "bucket", "k")),
        ("gs://bucket/k", Location("gs", "bucket", "k")),
        ("az://container/k", Location("az", "container", "k")),
        ("abfs://container/k", Location("abfs", "container", "k")),
        ("abfss://container/k", Location("abfss", "container", "k")),
        ("memory://a/b", Location("memory", "", "a/b")),
        ("memory:///a/b/", Location("memory", "", "a/b")),
        ("memory://", Location("memory", "", "")),
        # Keys are percent-decoded, as pylance decodes them (checked against pylance in
        # tests/store/test_s3_interop.py); "+" stays a plus.
        ("s3://bucket/a%20b/k", Location("s3", "bucket", "a b/k")),
        ("s3://bucket/a%2520b", Location("s3", "bucket", "a%20b")),
        ("s3://bucket/a%3Fb%23c", Location("s3", "bucket", "a?b#c")),
        ("s3://bucket/x%C3%BC", Location("s3", "bucket", "x\u00fc")),
        ("s3://bucket/a+b", Location("s3", "bucket", "a+b")),
        ("memory://x%25y", Location("memory", "", "x%y")),
    ],
)
def test_object_locations(text: str, expected: Location) -> None:
    assert uris.parse(text) == expected


def test_canonical_form_parses_back_to_the_same_key() -> None:
    for key in ("a b", "a%20b", "100%", "what?", "#1", "x/%25/y", "\u00fc"):
        canonical = io.normalize(f"s3://bucket/{quote(key, safe='/')}")
        assert uris.parse(canonical) == Location("s3", "bucket", key)
        assert uris.parse(io.join(canonical, "_versions")).key == key + "/_versions"


def test_s3a_uses_the_s3_backend() -> None:
    assert uris.parse("s3a://b/k").backend_scheme == "s3"
    assert uris.parse("s3://b/k").backend_scheme == "s3"
    assert uris.parse("/tmp/x").backend_scheme == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://bucket/a//b/", "s3://bucket/a/b"),
        ("s3://bucket/", "s3://bucket"),
        ("s3a://bucket/./k", "s3a://bucket/k"),
        ("GS://bucket/k/", "gs://bucket/k"),
        ("memory:///x//y/", "memory://x/y"),
        ("file:///tmp/a%20b", "/tmp/a b"),
        ("file://localhost/tmp/x", "/tmp/x"),
        ("/tmp/x/../y", "/tmp/y"),
        ("s3://bucket/a%20b", "s3://bucket/a b"),
        # A decoded key that holds "%", "?" or "#" keeps them escaped, so that the
        # canonical form parses back to the same key.
        ("s3://bucket/a%2520b", "s3://bucket/a%2520b"),
        ("s3://bucket/a%3Fb%23c", "s3://bucket/a%3Fb%23c"),
        ("memory://x%25y", "memory://x%25y"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert io.normalize(text) == expected
    # Canonical forms are fixed points.
    assert io.normalize(expected) == expected


def test_local_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert io.normalize("rel/x") == os.path.join(str(tmp_path), "rel", "x")
    assert io.normalize(Path("rel")) == os.path.join(str(tmp_path), "rel")
    assert io.normalize("~/data") == os.path.join(str(tmp_path), "home", "data")
    assert io.normalize(b"rel".decode()) == os.path.join(str(tmp_path), "rel")
    # A one-letter "scheme" is a drive letter, not a URI: on POSIX a relative name.
    assert uris.scheme_of("C:\\data") == ""
    assert uris.parse("/abs").scheme == ""
    assert io.is_local("/abs") and io.is_local("file:///abs") and io.is_local("rel")
    assert not io.is_local("s3://b/k") and not io.is_local("memory://k")


def test_local_path_of_an_object_uri_is_refused() -> None:
    with pytest.raises(URIError, match="not a local path"):
        io.local_path("s3://bucket/k")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hdfs://namenode/x", "'hdfs' storage scheme is not supported"),
        ("http://host/x", "'http' storage scheme is not supported"),
        ("wasb://c/x", "'wasb' storage scheme is not supported"),
        ("s3+ddb://bucket/x", "DynamoDB"),
        ("s3://bucket/a/../b", "'..'"),
        ("memory://a/../b", "'..'"),
        ("s3://bucket/a/%2E%2E/b", "'..'"),
        ("s3://bucket/a%00b", "NUL"),
        ("s3:///key", "must name a bucket"),
        ("gs:///key", "must name a bucket"),
        ("s3://bucket/k?versionId=1", "query or fragment"),
        ("s3://bucket/k#frag", "query or fragment"),
        ("file://otherhost/x", "not host 'otherhost'"),
        ("file:///tmp/x?y=1", "query or fragment"),
        ("/tmp/a\0b", "NUL"),
        ("file:///tmp/a%00b", "NUL"),
    ],
)
def test_refused(text: str, words: str) -> None:
    with pytest.raises(URIError) as caught:
        io.normalize(text)
    assert words in str(caught.value)
    # The same refusal wherever the location is used.
    with pytest.raises(URIError):
        io.FileIO().resolve(text)


def test_refusal_names_the_supported_schemes() -> None:
    with pytest.raises(URIError) as caught:
        io.normalize("ftp://host/x")
    for scheme in ("s3://", "gs://", "az://", "memory://", "file://"):
        assert scheme in str(caught.value)


@pytest.mark.parametrize("value", [42, None, b"/tmp/x", ["s3://b/k"]])
def test_wrong_types(value: object) -> None:
    with pytest.raises(TypeError):
        io.normalize(value)  # type: ignore[arg-type]


def test_unsupported_scheme_writes_nothing_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for call in (
        lambda: io.FileIO().put("hdfs://n/x/file", b"data"),
        lambda: io.FileIO().put_if_not_exists("hdfs://n/x/file", b"data"),
        lambda: io.FileIO().open_output("hdfs://n/x/file"),
        lambda: io.FileIO().list_dir("hdfs://n/x"),
    ):
        with pytest.raises(URIError):
            call()
    assert list(tmp_path.iterdir()) == []


def test_join() -> None:
    assert io.join("s3://b/root", "_versions", "1.manifest") == "s3://b/root/_versions/1.manifest"
    # Joined names are names, not URI text: they reach the key unchanged.
    for name in ("a%20b", "what?", "#1", "100%"):
        assert uris.parse(io.join("s3://b/root", name)).key == f"root/{name}"
        assert uris.parse(io.join("memory://root", "d", name)).key == f"root/d/{name}"
        assert io.join("/tmp/root", name) == f"/tmp/root/{name}"
    assert io.join("/tmp/root", "data/x.lance") == "/tmp/root/data/x.lance"
    assert io.relative("s3://b/root/data/x", "s3://b/root") == "data/x"
    with pytest.raises(ValueError):
        io.relative("s3://b/rootless/x", "s3://b/root")


@given(st.lists(st.sampled_from(["a", "b c", ".", "..", "", "~", "%20"]), max_size=6))
def test_absolute_paths_parse_as_the_os_resolves_them(segments: list[str]) -> None:
    """Absolute paths are parsed once and kept (they depend on their text alone): the
    kept answer is the one ``os.path.abspath`` gives, asked twice."""
    text = "/" + "/".join(segments)
    for _ in range(2):
        assert uris.parse(text) == Location("", "", os.path.abspath(text))


def test_relative_paths_follow_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for place in (tmp_path / "one", tmp_path / "two"):
        place.mkdir()
        monkeypatch.chdir(place)
        assert uris.parse("data/x.lance").key == str(place / "data" / "x.lance")
