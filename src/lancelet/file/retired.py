"""``Field.storage_class`` (field 11 of ``lance.file.Field``, a string), which Lance 0.19
to 0.39 wrote and later releases retired.

"default" (or "") was the ordinary storage; "blob" kept the column in a separate
``_blobs`` dataset.  It says where a dataset keeps a column, not how a file encodes
it: a file reader may drop it, a dataset reader must refuse "blob" columns.
"""

from __future__ import annotations

from google.protobuf import unknown_fields
from google.protobuf.message import Message

STORAGE_CLASS_NUMBER = 11
DEFAULT_CLASSES = (b"", b"default")
BLOB_CLASS = b"blob"
# Wire type of length-delimited fields (strings).
LEN_WIRE_TYPE = 2


def storage_class(field: Message) -> tuple[int, bytes] | None:
    """The wire type and bytes of ``field``'s storage class, if it has one."""
    found = unknown_fields.UnknownFieldSet(field)
    for i in range(len(found)):
        if found[i].field_number == STORAGE_CLASS_NUMBER:
            data = found[i].data
            return found[i].wire_type, data if isinstance(data, bytes) else b""
    return None


def drop_storage_class(field: Message) -> None:
    """Forget a well-formed storage class of ``field`` when it is its only unknown
    field (anything else is left for the caller's checks to find)."""
    found = unknown_fields.UnknownFieldSet(field)
    if len(found) != 1:
        return
    kind = storage_class(field)
    if kind is not None and kind[0] == LEN_WIRE_TYPE and kind[1] in (*DEFAULT_CLASSES, BLOB_CLASS):
        field.DiscardUnknownFields()
