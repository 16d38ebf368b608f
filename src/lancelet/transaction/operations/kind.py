"""What every kind of operation provides, in its own module of this package.

A :class:`Kind` ties an operation class to its name (the field of the
``Transaction.operation`` oneof in ``transaction.proto``, which is also its row and
column in the conflict table of :mod:`lancelet.transaction.conflicts`), its
protobuf encoder and decoder, its fold into the manifest it is committed on, what
it claims to change (checked against winners' manifests by
:mod:`lancelet.transaction.verify`) and how it describes itself in a table's
history.  :mod:`lancelet.transaction.registry` lists every kind once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import FoldContext

O = TypeVar("O")  # noqa: E741 - an operation

# A oneof's message: each kind has its own class, all of them protobuf messages.
Message = Any


@dataclass(frozen=True)
class Description:
    """An operation as a table's history shows it: its parameters and what it
    counted (values as text, keyed as Delta's history keys them)."""

    parameters: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, str] = field(default_factory=dict)


def says_nothing(op: object) -> Description:
    return Description()


@dataclass(frozen=True)
class Kind(Generic[O]):
    name: str
    cls: type[O]
    # Fills the operation's message inside ``Transaction.operation``.
    encode: Callable[[O, Message], None]
    # Reads it back; the string names the transaction file in errors.
    decode: Callable[[Message, str], O]
    # The new version's manifest (before it is stamped) from the latest one.
    fold: Callable[[Manifest | None, O, FoldContext], Manifest]
    claims: Callable[[O], Claims | None]
    describe: Callable[[O], Description] = says_nothing


# -- codec helpers the kinds share -----------------------------------------------------


def decode_fragments(pbs: Iterable[Any]) -> tuple[Fragment, ...]:
    return tuple(Fragment.from_proto(f) for f in pbs)


def encode_fragments(fragments: Iterable[Fragment]) -> list[Any]:
    return [f.to_proto() for f in fragments]


def decode_schema(pb: Message) -> LanceSchema:
    """The schema of an operation message with ``schema`` and ``schema_metadata``."""
    return LanceSchema.from_proto(pb.schema, pb.schema_metadata)


def encode_schema(schema: LanceSchema, pb: Message) -> None:
    pb.schema.extend(schema.proto_fields())
    pb.schema_metadata.update(schema.metadata)


def row_count(fragments: Iterable[Fragment]) -> str:
    return str(sum(f.physical_rows for f in fragments))
