"""Every kind of operation, registered once.

A :class:`Kind` ties an operation class to its name (the field of the
``Transaction.operation`` oneof in ``transaction.proto``, which is also its row and
column in the conflict table of :mod:`.conflicts`), its protobuf encoder and
decoder (:mod:`.operations`), its fold into the manifest (:mod:`.apply`) and what
it claims to change (:mod:`.claims`, checked against winners' manifests by
:mod:`.verify`).

To add a kind: its class and codec in :mod:`.operations`, its fold in
:mod:`.apply`, one :class:`Kind` in :data:`KINDS` below, and its row in the
conflict table (whose import checks that every kind has one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from google.protobuf.message import DecodeError

from lancelet._proto import transaction_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table.manifest import Manifest
from lancelet.transaction import apply, claims
from lancelet.transaction import operations as ops
from lancelet.transaction.apply import FoldContext, ManifestLoader
from lancelet.transaction.claims import Claims

O = TypeVar("O")  # noqa: E741 - an operation


@dataclass(frozen=True)
class Kind(Generic[O]):
    name: str
    cls: type[O]
    encode: Callable[[O, Any], None]
    decode: Callable[[Any, str], O]
    fold: Callable[[Manifest | None, O, FoldContext], Manifest]
    claims: Callable[[O], Claims | None]


KINDS: tuple[Kind[Any], ...] = (
    Kind("append", ops.Append, ops.encode_append, ops.decode_append,
         apply.fold_append, claims.append),
    Kind("delete", ops.Delete, ops.encode_delete, ops.decode_delete,
         apply.fold_delete, claims.delete),
    Kind("overwrite", ops.Overwrite, ops.encode_overwrite, ops.decode_overwrite,
         apply.fold_overwrite, claims.anything),
    Kind("create_index", ops.CreateIndex, ops.encode_create_index, ops.decode_create_index,
         apply.fold_create_index, claims.nothing),
    Kind("rewrite", ops.Rewrite, ops.encode_rewrite, ops.decode_rewrite,
         apply.fold_rewrite, claims.rewrite),
    Kind("merge", ops.Merge, ops.encode_merge, ops.decode_merge,
         apply.fold_merge, claims.merge),
    Kind("restore", ops.Restore, ops.encode_restore, ops.decode_restore,
         apply.fold_restore, claims.anything),
    Kind("reserve_fragments", ops.ReserveFragments, ops.encode_reserve, ops.decode_reserve,
         apply.fold_reserve, claims.nothing),
    Kind("update", ops.Update, ops.encode_update, ops.decode_update,
         apply.fold_update, claims.update),
    Kind("project", ops.Project, ops.encode_project, ops.decode_project,
         apply.fold_project, claims.project),
    Kind("update_config", ops.UpdateConfig, ops.encode_update_config, ops.decode_update_config,
         apply.fold_update_config, claims.nothing),
    Kind("update_bases", ops.UpdateBases, ops.encode_update_bases, ops.decode_update_bases,
         apply.fold_update_bases, claims.nothing),
    Kind("data_replacement", ops.DataReplacement, ops.encode_data_replacement,
         ops.decode_data_replacement, apply.fold_data_replacement, claims.data_replacement),
)  # fmt: skip

_BY_CLASS: dict[type, Kind[Any]] = {k.cls: k for k in KINDS}
_BY_NAME: dict[str, Kind[Any]] = {k.name: k for k in KINDS}
_ONEOF = {f.name for f in transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"].fields}
assert set(_BY_NAME) <= _ONEOF, sorted(set(_BY_NAME) - _ONEOF)


def kind_of(op: ops.Operation | None) -> str:
    """The operation's name in ``transaction.proto`` (``"unknown"`` for none)."""
    if op is None:
        return "unknown"
    if isinstance(op, ops.Foreign):
        return op.name
    return _BY_CLASS[type(op)].name


def claims_of(op: ops.Operation) -> Claims | None:
    if isinstance(op, ops.Foreign):
        return claims.foreign(op)
    return _BY_CLASS[type(op)].claims(op)


# -- transactions to and from bytes ------------------------------------------------


def encode_transaction(txn: ops.Transaction) -> bytes:
    pb = transaction_pb2.Transaction(read_version=txn.read_version, uuid=txn.uuid, tag=txn.tag)
    pb.transaction_properties.update(txn.properties)
    if isinstance(txn.operation, ops.Foreign):
        raise TypeError(f"lancelet cannot write a {txn.operation.name} transaction")
    kind = _BY_CLASS[type(txn.operation)]
    body = getattr(pb, kind.name)
    body.SetInParent()  # an operation with nothing to say is still that operation
    kind.encode(txn.operation, body)
    return pb.SerializeToString()


def decode_transaction(data: bytes, path: str) -> ops.Transaction:
    pb = transaction_pb2.Transaction()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptDatasetError(f"{path}: transaction does not parse: {exc}") from exc
    name = pb.WhichOneof("operation") or "unknown"
    kind = _BY_NAME.get(name)
    try:
        operation = (
            ops.decode_foreign(pb, name) if kind is None else kind.decode(getattr(pb, name), path)
        )
    except (KeyError, ValueError) as exc:  # an enum value or a map key no writer uses
        raise CorruptDatasetError(f"{path}: transaction content is invalid: {exc!r}") from exc
    return ops.Transaction(
        pb.read_version, operation, pb.uuid, pb.tag, dict(pb.transaction_properties)
    )


# -- the manifest of a commit --------------------------------------------------------


def build_manifest(
    base: Manifest | None,
    txn: ops.Transaction,
    *,
    transaction_file: str,
    load: ManifestLoader,
    data_format: tuple[str, str] = ("lance", "2.0"),
) -> Manifest:
    """The manifest of version ``base.version + 1`` (or 1 for a new dataset)."""
    op = txn.operation
    ctx = FoldContext(load, data_format)
    if isinstance(op, ops.Foreign):
        derived = apply.fold_foreign(base, op, ctx)
    else:
        derived = _BY_CLASS[type(op)].fold(base, op, ctx)
    return apply.stamp(derived, base, op, transaction_file)
