"""Each kind of operation lives in one module, registered once, and its codec writes
what it reads back.

The module of a kind holds its class, protobuf codec, fold into the manifest, claims
and description; the registry lists every kind once, and the conflict table has a
row for each and names only kinds ``transaction.proto`` knows.
"""

from __future__ import annotations

import importlib
import inspect
import uuid

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from lancelet._proto import transaction_pb2
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.index import IndexFile
from lancelet.table.schema import LanceSchema
from lancelet.transaction import claims, conflicts, registry
from lancelet.transaction import operations as ops
from lancelet.transaction.operations import kind as kind_module

_ONEOF = {f.name for f in transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"].fields}
# Parts a kind may share rather than define (an operation that claims or says nothing).
_SHARED = {claims.anything, claims.nothing, kind_module.says_nothing}


def test_each_kind_lives_in_its_own_module() -> None:
    assert len({k.name for k in registry.KINDS}) == len(registry.KINDS)
    assert len({k.cls for k in registry.KINDS}) == len(registry.KINDS)
    for kind in registry.KINDS:
        module = importlib.import_module(f"lancelet.transaction.operations.{kind.name}")
        assert module.KIND is kind
        assert kind.cls.__module__ == module.__name__, kind.name
        for part in (kind.encode, kind.decode, kind.fold, kind.claims, kind.describe):
            assert part in _SHARED or inspect.getmodule(part) is module, (kind.name, part)
        # The package exports the class under its own name.
        assert getattr(ops, kind.cls.__name__) is kind.cls


def test_every_operation_class_is_a_registered_kind() -> None:
    classes = set(ops.Operation.__args__)  # type: ignore[attr-defined]
    assert classes == {k.cls for k in registry.KINDS} | {ops.Foreign}


def test_the_conflict_table_covers_every_kind() -> None:
    names = {k.name for k in registry.KINDS}
    assert set(conflicts.RULES) == names
    for row in conflicts.RULES.values():
        assert "*" in row
        assert set(row) <= _ONEOF | {"*", "unknown"}


# -- codec round trips -----------------------------------------------------------------

_IDS = st.integers(0, 2**31)
_TEXT = st.text(max_size=6)


@st.composite
def _data_files(draw: st.DrawFn) -> DataFile:
    fields = draw(st.lists(st.integers(0, 50), max_size=3))
    return DataFile(
        f"{draw(st.uuids())}.lance",
        fields,
        list(range(len(fields))),
        draw(st.sampled_from([0, 2])),
        draw(st.sampled_from([0, 1, 2])),
    )


@st.composite
def _fragments(draw: st.DrawFn) -> tuple[Fragment, ...]:
    return tuple(
        Fragment(draw(_IDS), tuple(draw(st.lists(_data_files(), max_size=2))), draw(_IDS))
        for _ in range(draw(st.integers(0, 3)))
    )


_SCHEMA = LanceSchema.from_arrow(
    pa.schema([pa.field("a", pa.int64(), metadata={"k": "v"}), pa.field("s", pa.string())]),
    first_id=0,
)
_MAPS = st.builds(
    ops.MapUpdate, st.dictionaries(_TEXT, st.none() | _TEXT, max_size=3), st.booleans()
)
_ID_LISTS = st.lists(_IDS, max_size=3).map(tuple)


def _operations() -> st.SearchStrategy[ops.Operation]:
    rewritten = st.builds(
        ops.RewrittenIndex,
        st.uuids(),
        st.uuids(),
        st.none(),
        st.integers(0, 3),
        st.lists(st.builds(IndexFile, _TEXT, st.integers(0, 99)), max_size=2).map(tuple),
    )
    group = st.builds(ops.RewriteGroup, _fragments(), _fragments())
    # New bases get their ids when the commit is folded: none is written.
    base = st.builds(BasePath, st.just(0), _TEXT, st.none() | _TEXT, st.booleans())
    return st.one_of(
        st.builds(ops.Append, _fragments()),
        st.builds(ops.Delete, _fragments(), _ID_LISTS, _TEXT),
        st.builds(ops.Update, _ID_LISTS, _fragments(), _fragments(), _ID_LISTS, _ID_LISTS),
        st.builds(ops.Overwrite, _fragments(), st.just(_SCHEMA), st.dictionaries(_TEXT, _TEXT)),
        st.builds(ops.Merge, _fragments(), st.just(_SCHEMA)),
        st.builds(ops.Project, st.just(LanceSchema(_SCHEMA.fields))),
        st.builds(ops.Restore, _IDS),
        st.builds(ops.ReserveFragments, _IDS),
        st.builds(
            ops.Rewrite,
            st.lists(group, max_size=2).map(tuple),
            st.lists(rewritten, max_size=2).map(tuple),
        ),
        st.builds(ops.CreateIndex, st.just(()), st.just(())),
        st.builds(
            ops.DataReplacement,
            st.lists(st.tuples(_IDS, _data_files()), max_size=2).map(tuple),
        ),
        st.builds(
            ops.UpdateConfig,
            st.dictionaries(_TEXT, _TEXT, max_size=2),
            st.just(()),
            st.none() | _MAPS,
            st.dictionaries(st.integers(0, 5), _MAPS, max_size=2),
            st.none() | _MAPS,
        ),
        st.builds(ops.UpdateBases, st.lists(base, max_size=2).map(tuple)),
    )


@given(_operations(), _IDS, st.dictionaries(_TEXT, _TEXT, max_size=2))
def test_each_kind_reads_back_what_it_writes(
    op: ops.Operation, read_version: int, properties: dict[str, str]
) -> None:
    txn = ops.Transaction(read_version, op, str(uuid.uuid4()), "", properties)
    data = registry.encode_transaction(txn)
    pb = transaction_pb2.Transaction.FromString(data)
    assert pb.WhichOneof("operation") == registry.kind_of(op)
    back = registry.decode_transaction(data, "txn")
    if isinstance(op, ops.UpdateConfig):
        # Config changes are written as one map; the deletes come back as None values.
        assert back.operation == ops.UpdateConfig(
            op.upsert_values, (), op.schema_metadata, op.field_metadata, op.table_metadata
        )
    else:
        assert back == txn
    assert registry.describe(back.operation) == registry.describe(op)
