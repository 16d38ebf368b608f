"""Storage access: byte ranges in, whole files out.

The interface is deliberately small (pyiceberg's FileIO is the model): readers
ask for byte ranges of an immutable file, writers stream bytes into a file that
only becomes visible under its final name when it is complete, and the commit
path needs one atomic primitive, :func:`put_if_not_exists`.
"""

from lancelet.io.local import (
    LocalInputFile,
    LocalOutputFile,
    delete,
    fingerprint,
    list_dir,
    modified_at,
    open_input,
    open_output,
    put,
    put_if_not_exists,
    read_bytes,
)
from lancelet.io.uri import local_path

__all__ = [
    "LocalInputFile",
    "LocalOutputFile",
    "delete",
    "fingerprint",
    "list_dir",
    "local_path",
    "modified_at",
    "open_input",
    "open_output",
    "put",
    "put_if_not_exists",
    "read_bytes",
]
