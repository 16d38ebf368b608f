"""Turning the URIs users pass into storage locations.

Only local storage exists so far.  A plain path or a ``file://`` URI names a local
file; ``~`` is expanded as a shell would.  Any other scheme (``s3://``, ``gs://``,
``memory://``, ...) is refused by name: treating it as a relative path would
silently write a folder called ``s3:`` wherever the process happens to run.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

from lancelet.errors import URIError

# RFC 3986: a scheme is a letter followed by letters, digits, "+", "-" or ".".
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
# One-letter "schemes" are Windows drive letters (C:\data), not URIs.
_MIN_SCHEME_LENGTH = 2


def local_path(uri: str | os.PathLike[str]) -> str:
    """The absolute local path ``uri`` names; an unsupported scheme or a NUL byte is a
    :class:`URIError`."""
    if not isinstance(uri, (str, os.PathLike)):
        raise TypeError(f"a dataset or file location must be a str or path, not {uri!r}")
    text = os.fspath(uri)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    if "\0" in text:
        raise URIError(f"{text!r}: a path cannot contain a NUL byte")
    match = _SCHEME.match(text)
    if match and len(match.group(1)) >= _MIN_SCHEME_LENGTH:
        text = _from_uri(text, match.group(1).lower())
    return os.path.abspath(os.path.expanduser(text))


def _from_uri(uri: str, scheme: str) -> str:
    if scheme != "file":
        raise URIError(
            f"{uri}: the {scheme!r} storage scheme is not supported yet; lancelet reads and "
            "writes local paths (a plain path or file://) only"
        )
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise URIError(f"{uri}: a file URI must name a local path, not host {parts.netloc!r}")
    if parts.query or parts.fragment:
        raise URIError(f"{uri}: a file URI cannot carry a query or fragment")
    path = unquote(parts.path)
    if "\0" in path:
        raise URIError(f"{uri}: a path cannot contain a NUL byte")
    return path
