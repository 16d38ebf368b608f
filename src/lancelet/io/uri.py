"""Turning the URIs users pass into storage locations.

A plain path or a ``file://`` URI names a local file; ``~`` is expanded as a shell
would.  ``s3://`` (and Spark's ``s3a://``), ``gs://``, ``az://``/``abfs(s)://`` name
an object in a bucket, and ``memory://`` an object in the process's memory store.
Any other scheme is refused by name: treating it as a relative path would silently
write a folder called ``hdfs:`` wherever the process happens to run.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from lancelet.errors import URIError

# RFC 3986: a scheme is a letter followed by letters, digits, "+", "-" or ".".
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# One-letter "schemes" are Windows drive letters (C:\data), not URIs.
_MIN_SCHEME_LENGTH = 2


# Object-store schemes, each with the scheme its backend knows it by.
OBJECT_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "az": "az",
    "abfs": "abfs",
    "abfss": "abfss",
    "memory": "memory",
}


@dataclass(frozen=True)
class Location:
    """A parsed location: ``scheme`` is "" for a local path; ``bucket`` is "" for
    local and memory locations; ``key`` is the absolute path or the object key."""

    scheme: str
    bucket: str
    key: str

    @property
    def backend_scheme(self) -> str:
        return OBJECT_SCHEMES.get(self.scheme, "")


def scheme_of(uri: str) -> str:
    """The URI's scheme in lower case, "" for a plain path (or a drive letter)."""
    match = _SCHEME.match(uri)
    if match and len(match.group(1)) >= _MIN_SCHEME_LENGTH:
        return match.group(1).lower()
    return ""


def parse(uri: str | os.PathLike[str]) -> Location:
    """Where ``uri`` points; an unsupported scheme or a malformed URI is a :class:`URIError`."""
    text = _text(uri)
    if text.startswith("/"):
        # A commit resolves a few dozen locations, nearly all absolute paths; those
        # depend on nothing but their text (no working directory, no home).
        return _absolute(text)
    scheme = scheme_of(text)
    if scheme in ("", "file"):
        return Location("", "", local_path(text))
    if scheme not in OBJECT_SCHEMES:
        raise URIError(_unsupported(text, scheme))
    parts = urlsplit(text)
    if parts.query or parts.fragment:
        raise URIError(f"{text}: a storage URI cannot carry a query or fragment")
    if scheme == "memory":
        key = (parts.netloc + "/" + parts.path).strip("/")
        return Location(scheme, "", _clean_key(text, key))
    if not parts.netloc:
        raise URIError(f"{text}: a {scheme}:// URI must name a bucket")
    return Location(scheme, parts.netloc, _clean_key(text, parts.path.strip("/")))


@lru_cache(maxsize=4096)
def _absolute(path: str) -> Location:
    return Location("", "", os.path.normpath(path))


def _clean_key(uri: str, key: str) -> str:
    """The key, percent-decoded as pylance decodes it (``a%20b`` is the key ``a b``),
    with "." and empty segments removed; ".." is refused (object keys have no parent
    directories to climb to)."""
    key = unquote(key)
    if "\0" in key:
        raise URIError(f"{uri}: an object key cannot contain a NUL byte")
    segments = [s for s in key.split("/") if s not in ("", ".")]
    if ".." in segments:
        raise URIError(f"{uri}: an object key cannot contain '..'")
    return "/".join(segments)


def normalize(uri: str | os.PathLike[str]) -> str:
    """The canonical form of a location: an absolute local path, or
    ``scheme://bucket/key`` with no trailing slash."""
    found = parse(uri)
    if not found.scheme:
        return found.key
    key = _escape(found.key)
    if found.scheme == "memory":
        return f"memory://{key}"
    return f"{found.scheme}://{found.bucket}/{key}".rstrip("/")


# What a key must escape for its URI to parse back to it: the percent sign (keys are
# percent-decoded) and the characters that would start a query or a fragment.
_ESCAPES = str.maketrans({"%": "%25", "?": "%3F", "#": "%23"})


def _escape(key: str) -> str:
    return key.translate(_ESCAPES)


def join(base: str, *parts: str) -> str:
    """``base`` and relative ``parts`` joined with "/" (for paths and URIs alike).

    ``parts`` are names as they are (a listing's, a manifest's): below an object-store
    URI they are escaped, so that the URI's percent-decoding gives them back."""
    if scheme_of(base) in OBJECT_SCHEMES:
        parts = tuple(_escape(part) for part in parts)
    return posixpath.join(base, *parts)


def is_local(uri: str | os.PathLike[str]) -> bool:
    return scheme_of(_text(uri)) in ("", "file")


def _text(uri: str | os.PathLike[str]) -> str:
    if not isinstance(uri, (str, os.PathLike)):
        raise TypeError(f"a dataset or file location must be a str or path, not {uri!r}")
    text = os.fspath(uri)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    if "\0" in text:
        raise URIError(f"{text!r}: a path cannot contain a NUL byte")
    return text


def _unsupported(uri: str, scheme: str) -> str:
    known = ", ".join(sorted(f"{s}://" for s in OBJECT_SCHEMES))
    if scheme.endswith("+ddb"):
        return (
            f"{uri}: the {scheme!r} scheme (commits through a DynamoDB manifest store) is "
            "not supported; S3 has conditional writes, which lancelet commits with: use s3://"
        )
    return (
        f"{uri}: the {scheme!r} storage scheme is not supported; lancelet reads and writes "
        f"local paths (a plain path or file://) and {known}"
    )


def local_path(uri: str | os.PathLike[str]) -> str:
    """The absolute local path ``uri`` names; an unsupported scheme or a NUL byte is a
    :class:`URIError`."""
    text = _text(uri)
    scheme = scheme_of(text)
    if scheme:
        text = _from_uri(text, scheme)
    return os.path.abspath(os.path.expanduser(text))


def _from_uri(uri: str, scheme: str) -> str:
    if scheme in OBJECT_SCHEMES:
        raise URIError(f"{uri}: a {scheme}:// location is not a local path")
    if scheme != "file":
        raise URIError(_unsupported(uri, scheme))
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise URIError(f"{uri}: a file URI must name a local path, not host {parts.netloc!r}")
    if parts.query or parts.fragment:
        raise URIError(f"{uri}: a file URI cannot carry a query or fragment")
    path = unquote(parts.path)
    if "\0" in path:
        raise URIError(f"{uri}: a path cannot contain a NUL byte")
    return path
