"""Every kind of operation, registered once, and transactions to and from bytes.

Each kind's module under :mod:`.operations` holds its class, codec, fold, claims and
description in a :class:`~.operations.kind.Kind`; :data:`KINDS` lists them.
Operations of other writers that lancelet does not perform decode as
:class:`~.operations.Foreign`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from lancelet._proto import transaction_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.transaction import operations as ops
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations import (
    append,
    create_index,
    data_replacement,
    delete,
    foreign,
    merge,
    overwrite,
    project,
    reserve_fragments,
    restore,
    rewrite,
    update,
    update_bases,
    update_config,
)
from lancelet.transaction.operations.kind import Description, Kind

KINDS: tuple[Kind[Any], ...] = (
    append.KIND,
    delete.KIND,
    overwrite.KIND,
    create_index.KIND,
    rewrite.KIND,
    merge.KIND,
    restore.KIND,
    reserve_fragments.KIND,
    update.KIND,
    project.KIND,
    update_config.KIND,
    update_bases.KIND,
    data_replacement.KIND,
)

_BY_CLASS: dict[type, Kind[Any]] = {k.cls: k for k in KINDS}
_BY_NAME: dict[str, Kind[Any]] = {k.name: k for k in KINDS}
_ONEOF = {f.name for f in transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"].fields}
assert set(_BY_NAME) <= _ONEOF, sorted(set(_BY_NAME) - _ONEOF)
assert len(_BY_CLASS) == len(_BY_NAME) == len(KINDS), "a kind is registered twice"


def kind(op: ops.Operation) -> Kind[Any]:
    """The kind of a lancelet operation (not a :class:`~.operations.Foreign` one)."""
    return _BY_CLASS[type(op)]


def kind_of(op: ops.Operation | None) -> str:
    """The operation's name in ``transaction.proto`` (``"unknown"`` for none)."""
    if op is None:
        return "unknown"
    if isinstance(op, ops.Foreign):
        return op.name
    return kind(op).name


def claims_of(op: ops.Operation) -> Claims | None:
    if isinstance(op, ops.Foreign):
        return foreign.claims(op)
    return kind(op).claims(op)


def describe(op: ops.Operation) -> Description:
    """The operation's parameters and counts, as a table's history shows them."""
    if isinstance(op, ops.Foreign):
        return Description()
    return kind(op).describe(op)


# -- transactions to and from bytes ------------------------------------------------


def encode_transaction(txn: ops.Transaction) -> bytes:
    pb = transaction_pb2.Transaction(read_version=txn.read_version, uuid=txn.uuid, tag=txn.tag)
    pb.transaction_properties.update(txn.properties)
    if isinstance(txn.operation, ops.Foreign):
        raise TypeError(f"lancelet cannot write a {txn.operation.name} transaction")
    found = kind(txn.operation)
    body = getattr(pb, found.name)
    body.SetInParent()  # an operation with nothing to say is still that operation
    found.encode(txn.operation, body)
    return pb.SerializeToString()


def decode_transaction(data: bytes, path: str) -> ops.Transaction:
    pb = transaction_pb2.Transaction()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptDatasetError(f"{path}: transaction does not parse: {exc}") from exc
    name = pb.WhichOneof("operation") or "unknown"
    found = _BY_NAME.get(name)
    try:
        body = getattr(pb, name, None)
        operation = foreign.decode(name, body) if found is None else found.decode(body, path)
    except (KeyError, ValueError) as exc:  # an enum value or a map key no writer uses
        raise CorruptDatasetError(f"{path}: transaction content is invalid: {exc!r}") from exc
    return ops.Transaction(
        pb.read_version, operation, pb.uuid, pb.tag, dict(pb.transaction_properties)
    )
