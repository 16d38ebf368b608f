"""A script of namespace operations, run on pylance's and lancelet's namespaces alike.

Each step's outcome is recorded comparably: a response as a dict (the root and the
random hex prefix of a table directory replaced by placeholders) or an error as
its lance-namespace error code.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import lance_namespace as ln
import pyarrow as pa
from lance_namespace.errors import LanceNamespaceError

DATA = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})


def ipc_bytes(table: pa.Table = DATA) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.RecordBatchStreamWriter(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


Step = Callable[[Any], Any]

STEPS: list[tuple[str, Step]] = [
    ("ns a", lambda ns: ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))),
    (
        "ns a/b with properties",
        lambda ns: ns.create_namespace(
            ln.CreateNamespaceRequest(id=["a", "b"], properties={"owner": "me"})
        ),
    ),
    ("ns a again", lambda ns: ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))),
    ("ns under missing", lambda ns: ns.create_namespace(ln.CreateNamespaceRequest(id=["q", "r"]))),
    ("root table", lambda ns: ns.create_table(ln.CreateTableRequest(id=["top"]), ipc_bytes())),
    ("table a/t", lambda ns: ns.create_table(ln.CreateTableRequest(id=["a", "t"]), ipc_bytes())),
    (
        "table a/b/u",
        lambda ns: ns.create_table(ln.CreateTableRequest(id=["a", "b", "u"]), ipc_bytes()),
    ),
    (
        "table a/t again",
        lambda ns: ns.create_table(ln.CreateTableRequest(id=["a", "t"]), ipc_bytes()),
    ),
    ("table no data", lambda ns: ns.create_table(ln.CreateTableRequest(id=["a", "x"]), b"")),
    ("table empty id", lambda ns: ns.create_table(ln.CreateTableRequest(id=[]), ipc_bytes())),
    ("declare a/d", lambda ns: ns.declare_table(ln.DeclareTableRequest(id=["a", "d"]))),
    ("list root ns", lambda ns: ns.list_namespaces(ln.ListNamespacesRequest(id=[]))),
    ("list a ns", lambda ns: ns.list_namespaces(ln.ListNamespacesRequest(id=["a"]))),
    ("list missing ns", lambda ns: ns.list_namespaces(ln.ListNamespacesRequest(id=["q"]))),
    ("list root tables", lambda ns: ns.list_tables(ln.ListTablesRequest(id=[]))),
    ("list a tables", lambda ns: ns.list_tables(ln.ListTablesRequest(id=["a"]))),
    (
        "list a tables, no declared",
        lambda ns: ns.list_tables(ln.ListTablesRequest(id=["a"], include_declared=False)),
    ),
    ("list a tables, page 1", lambda ns: ns.list_tables(ln.ListTablesRequest(id=["a"], limit=1))),
    (
        "list a tables, page 2",
        lambda ns: ns.list_tables(ln.ListTablesRequest(id=["a"], limit=1, page_token="d")),
    ),
    ("describe ns root", lambda ns: ns.describe_namespace(ln.DescribeNamespaceRequest(id=[]))),
    ("describe ns a", lambda ns: ns.describe_namespace(ln.DescribeNamespaceRequest(id=["a"]))),
    (
        "describe ns a/b",
        lambda ns: ns.describe_namespace(ln.DescribeNamespaceRequest(id=["a", "b"])),
    ),
    (
        "describe ns missing",
        lambda ns: ns.describe_namespace(ln.DescribeNamespaceRequest(id=["q"])),
    ),
    ("ns a exists", lambda ns: ns.namespace_exists(ln.NamespaceExistsRequest(id=["a"]))),
    ("ns q exists", lambda ns: ns.namespace_exists(ln.NamespaceExistsRequest(id=["q"]))),
    ("describe top", lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["top"]))),
    ("describe a/t", lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["a", "t"]))),
    (
        "describe a/d declared",
        lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["a", "d"], check_declared=True)),
    ),
    (
        "describe a/t declared",
        lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["a", "t"], check_declared=True)),
    ),
    ("describe missing", lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["a", "zz"]))),
    ("a/t exists", lambda ns: ns.table_exists(ln.TableExistsRequest(id=["a", "t"]))),
    ("a/zz exists", lambda ns: ns.table_exists(ln.TableExistsRequest(id=["a", "zz"]))),
    (
        "register absolute uri",
        lambda ns: ns.register_table(
            ln.RegisterTableRequest(id=["a", "r"], location="s3://b/t.lance")
        ),
    ),
    (
        "register absolute path",
        lambda ns: ns.register_table(ln.RegisterTableRequest(id=["a", "r"], location="/t.lance")),
    ),
    (
        "register traversal",
        lambda ns: ns.register_table(ln.RegisterTableRequest(id=["a", "r"], location="../t.lance")),
    ),
    (
        "register a/r",
        lambda ns: ns.register_table(ln.RegisterTableRequest(id=["a", "r"], location="top.lance")),
    ),
    (
        "register a/r again",
        lambda ns: ns.register_table(ln.RegisterTableRequest(id=["a", "r"], location="top.lance")),
    ),
    ("describe a/r", lambda ns: ns.describe_table(ln.DescribeTableRequest(id=["a", "r"]))),
    ("deregister a/r", lambda ns: ns.deregister_table(ln.DeregisterTableRequest(id=["a", "r"]))),
    (
        "deregister a/r again",
        lambda ns: ns.deregister_table(ln.DeregisterTableRequest(id=["a", "r"])),
    ),
    ("drop ns a (not empty)", lambda ns: ns.drop_namespace(ln.DropNamespaceRequest(id=["a"]))),
    ("drop ns root", lambda ns: ns.drop_namespace(ln.DropNamespaceRequest(id=[]))),
    ("drop a/b/u", lambda ns: ns.drop_table(ln.DropTableRequest(id=["a", "b", "u"]))),
    ("drop a/b/u again", lambda ns: ns.drop_table(ln.DropTableRequest(id=["a", "b", "u"]))),
    ("drop ns a/b", lambda ns: ns.drop_namespace(ln.DropNamespaceRequest(id=["a", "b"]))),
    ("drop ns a/b again", lambda ns: ns.drop_namespace(ln.DropNamespaceRequest(id=["a", "b"]))),
    ("drop top", lambda ns: ns.drop_table(ln.DropTableRequest(id=["top"]))),
    ("list root tables at end", lambda ns: ns.list_tables(ln.ListTablesRequest(id=[]))),
    ("list a tables at end", lambda ns: ns.list_tables(ln.ListTablesRequest(id=["a"]))),
]


def outcome(namespace: Any, step: Step, root: str) -> Any:
    """What ``step`` gives on ``namespace``, comparable across libraries."""
    try:
        response = step(namespace)
    except LanceNamespaceError as exc:
        return ("error", int(exc.code))
    if response is None:
        return None
    answer = response.model_dump(exclude_none=True, exclude={"context"})
    return _normalized(answer, root)


def _normalized(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {k: _normalized(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalized(v, root) for v in value]
    if isinstance(value, str):
        text = value.replace(root.rstrip("/"), "<root>")
        return re.sub(r"/[0-9a-f]{8}_", "/<hex>_", text)
    return value


def run(namespace: Any, root: str) -> dict[str, Any]:
    return {name: outcome(namespace, step, root) for name, step in STEPS}
