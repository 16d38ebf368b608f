"""The lancelet error hierarchy.

Every error lancelet raises on purpose derives from :class:`LanceletError`, so
callers can catch one class.  Messages name the file, column or version that is
at fault.
"""

from __future__ import annotations


class LanceletError(Exception):
    """Base class of every error lancelet raises deliberately."""


class LanceFileError(LanceletError):
    """A Lance data file cannot be read or written."""


class CorruptFileError(LanceFileError):
    """A file's bytes contradict the format: bad magic, offsets out of range, bad protobuf."""


class UnsupportedVersionError(LanceFileError):
    """A file uses a format version this reader does not implement."""


class UnsupportedEncodingError(LanceFileError):
    """A page uses an encoding this reader does not implement."""


class SchemaError(LanceletError, ValueError):
    """A schema is invalid, unsupported, or does not match the data given."""


class UnsupportedTypeError(SchemaError):
    """An Arrow type cannot be stored in the requested Lance format version."""
