"""lancelet's DirectoryNamespace against pylance's: same answers, same files on disk."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import lance
import lance.namespace as pylance_ns
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace import errors as spec

import lancelet
import lancelet.namespace as lancelet_ns
from lancelet.errors import ArgumentError, UnsupportedOptionError
from tests.namespace import scenario
from tests.s3server import S3Server

LOCAL = "pylance's DirectoryNamespace reads and writes the root's files itself"

# Where lancelet answers differently on purpose: pylance lists a namespace that does
# not exist as empty; lancelet reports it missing (NamespaceNotFoundError), as the
# LanceNamespace interface documents.
DEVIATIONS = {"list missing ns": ("error", int(spec.ErrorCode.NAMESPACE_NOT_FOUND))}


def _outcomes(namespace: Any, root: Path) -> dict[str, Any]:
    found = scenario.run(namespace, f"file://{root}")
    # pylance gives a root table's location as a path when the root is one.
    return {k: _as_uri(v, root) for k, v in found.items()}


def _as_uri(value: Any, root: Path) -> Any:
    if isinstance(value, dict):
        return {k: _as_uri(v, root) for k, v in value.items()}
    if isinstance(value, str):
        return value.replace(str(root), "<root>")
    return value


@pytest.mark.local_files(LOCAL)
def test_same_answers_as_pylance(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "lancelet", tmp_path / "pylance"
    ours.mkdir()
    theirs.mkdir()
    expected = _outcomes(pylance_ns.DirectoryNamespace(root=str(theirs)), theirs)
    expected.update(DEVIATIONS)
    assert _outcomes(lancelet_ns.DirectoryNamespace(root=str(ours)), ours) == expected


def _manifest_rows(root: Path) -> list[dict[str, Any]]:
    rows = lance.dataset(str(root / "__manifest")).to_table().to_pylist()
    for row in rows:
        if row["location"] and "$" in row["location"]:
            row["location"] = "<hex>" + row["location"][8:]
    return sorted(rows, key=lambda r: str(r["object_id"]))


@pytest.mark.local_files(LOCAL)
def test_same_files_as_pylance(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "lancelet", tmp_path / "pylance"
    ours.mkdir()
    theirs.mkdir()
    scenario.run(pylance_ns.DirectoryNamespace(root=str(theirs)), str(theirs))
    scenario.run(lancelet_ns.DirectoryNamespace(root=str(ours)), str(ours))
    assert _manifest_rows(ours) == _manifest_rows(theirs)
    ours_schema = lance.dataset(str(ours / "__manifest")).schema
    assert ours_schema.equals(lance.dataset(str(theirs / "__manifest")).schema, True)

    def entries(root: Path) -> list[str]:
        return sorted(p.name[9:] if "$" in p.name else p.name for p in root.iterdir())

    assert entries(ours) == entries(theirs)
    # A declared table is its directory with the marker file pylance leaves.
    declared = [p for p in ours.iterdir() if p.name.endswith("_a$d")]
    assert [p.name for p in declared[0].iterdir()] == [".lance-reserved"]


def _populate(namespace: Any) -> None:
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"], properties={"k": "v"}))
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["a", "b"]))
    namespace.create_table(ln.CreateTableRequest(id=["top"]), scenario.ipc_bytes())
    namespace.create_table(ln.CreateTableRequest(id=["a", "t"]), scenario.ipc_bytes())
    namespace.declare_table(ln.DeclareTableRequest(id=["a", "d"]))


def _check_populated(namespace: Any, read: Any) -> None:
    """``namespace`` sees what :func:`_populate` made; ``read`` opens a dataset."""
    assert namespace.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert namespace.list_namespaces(ln.ListNamespacesRequest(id=["a"])).namespaces == ["b"]
    assert namespace.list_tables(ln.ListTablesRequest(id=[])).tables == ["top"]
    assert namespace.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["d", "t"]
    described = namespace.describe_namespace(ln.DescribeNamespaceRequest(id=["a"]))
    assert described.properties == {"k": "v"}
    for ident in (["top"], ["a", "t"]):
        location = namespace.describe_table(ln.DescribeTableRequest(id=ident)).location
        if read is not None:
            assert read(location).to_table().equals(scenario.DATA)
    declared = namespace.describe_table(ln.DescribeTableRequest(id=["a", "d"], check_declared=True))
    assert declared.is_only_declared is True


@pytest.mark.local_files(LOCAL)
def test_pylance_opens_a_root_lancelet_wrote(tmp_path: Path) -> None:
    _populate(lancelet_ns.DirectoryNamespace(root=str(tmp_path)))
    theirs = pylance_ns.DirectoryNamespace(root=str(tmp_path))
    _check_populated(theirs, lance.dataset)
    # pylance records more in lancelet's manifest, and lancelet sees it.
    theirs.create_table(ln.CreateTableRequest(id=["a", "b", "u"]), scenario.ipc_bytes())
    theirs.drop_table(ln.DropTableRequest(id=["a", "t"]))
    ours = lancelet_ns.DirectoryNamespace(root=str(tmp_path))
    assert ours.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["d"]
    assert ours.list_tables(ln.ListTablesRequest(id=["a", "b"])).tables == ["u"]


@pytest.mark.local_files(LOCAL)
def test_lancelet_opens_a_root_pylance_wrote(tmp_path: Path) -> None:
    _populate(pylance_ns.DirectoryNamespace(root=f"file://{tmp_path}"))
    ours = lancelet_ns.DirectoryNamespace(root=f"file://{tmp_path}")
    _check_populated(ours, lancelet.dataset)
    ours.drop_table(ln.DropTableRequest(id=["a", "t"]))
    ours.drop_table(ln.DropTableRequest(id=["a", "d"]))
    ours.drop_namespace(ln.DropNamespaceRequest(id=["a", "b"]))
    ours.drop_namespace(ln.DropNamespaceRequest(id=["a"]))
    theirs = pylance_ns.DirectoryNamespace(root=f"file://{tmp_path}")
    assert theirs.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__manifest", "top.lance"]


@pytest.mark.local_files(LOCAL)
def test_tables_without_a_manifest_match_pylance(tmp_path: Path) -> None:
    def script(namespace: Any) -> list[Any]:
        steps = [
            lambda: namespace.create_table(ln.CreateTableRequest(id=["t"]), scenario.ipc_bytes()),
            lambda: namespace.declare_table(ln.DeclareTableRequest(id=["d"])),
            lambda: namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"])),
            lambda: namespace.create_table(
                ln.CreateTableRequest(id=["a", "t"]), scenario.ipc_bytes()
            ),
            lambda: namespace.list_tables(ln.ListTablesRequest(id=[])).tables,
            lambda: namespace.table_exists(ln.TableExistsRequest(id=["d"])) and None,
            lambda: namespace.drop_table(ln.DropTableRequest(id=["t"])).id,
            lambda: namespace.list_tables(ln.ListTablesRequest(id=[])).tables,
        ]
        return [_code_or_value(step) for step in steps]

    def make(module: Any, name: str) -> Any:
        (tmp_path / name).mkdir()
        return module.DirectoryNamespace(root=str(tmp_path / name), manifest_enabled="false")

    expected = script(make(pylance_ns, "pylance"))
    assert script(make(lancelet_ns, "lancelet")) == expected
    assert sorted(p.name for p in (tmp_path / "lancelet").iterdir()) == ["d.lance"]


def _code_or_value(step: Any) -> Any:
    try:
        value = step()
    except spec.LanceNamespaceError as exc:
        return ("error", int(exc.code))
    return value if isinstance(value, (list, type(None))) else "ok"


def test_memory_root_holds_nested_tables() -> None:
    root = f"memory://ns-{uuid.uuid4().hex}"
    namespace = ln.connect("dir", {"root": root})  # lance_namespace resolves "dir"...
    assert not isinstance(namespace, lancelet_ns.DirectoryNamespace)  # ...to pylance's
    namespace = lancelet_ns.DirectoryNamespace(root=root)
    _populate(namespace)
    # A memory:// root's tables live in the namespace's own store (as in pylance, every
    # open of a memory:// URI is a new, empty store): they are not opened by URI.
    _check_populated(namespace, None)
    assert namespace.namespace_id() == f'DirectoryNamespace {{ root: "{root}" }}'


def test_refuses_what_it_does_not_implement() -> None:
    root = f"memory://ns-{uuid.uuid4().hex}"
    with pytest.raises(UnsupportedOptionError, match="credential_vendor.enabled"):
        lancelet_ns.DirectoryNamespace(root=root, **{"credential_vendor.enabled": "true"})
    with pytest.raises(UnsupportedOptionError, match="session"):
        lancelet_ns.DirectoryNamespace(session=object(), root=root)
    with pytest.raises(ArgumentError, match="root"):
        lancelet_ns.DirectoryNamespace()
    with pytest.raises(ArgumentError, match="manifest_enabled"):
        lancelet_ns.DirectoryNamespace(root=root, manifest_enabled="maybe")
    namespace = lancelet_ns.DirectoryNamespace(root=root)
    refused = [
        lambda: namespace.create_table(
            ln.CreateTableRequest(id=["t"], mode="overwrite"), scenario.ipc_bytes()
        ),
        lambda: namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"], mode="exist_ok")),
        lambda: namespace.describe_table(ln.DescribeTableRequest(id=["t"], version=1)),
        lambda: namespace.drop_namespace(ln.DropNamespaceRequest(id=["a"], behavior="Cascade")),
        lambda: namespace.rename_table(ln.RenameTableRequest(id=["t"], new_table_name="u")),
        lambda: namespace.count_table_rows(ln.CountTableRowsRequest(id=["t"])),
    ]
    for call in refused:
        with pytest.raises(spec.UnsupportedOperationError):
            call()
    # Nothing was written by the refused calls.
    assert namespace.list_tables(ln.ListTablesRequest(id=[])).tables == []
    assert namespace.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []


def test_errors_are_lancelets_and_lance_namespaces() -> None:
    namespace = lancelet_ns.DirectoryNamespace(root=f"memory://ns-{uuid.uuid4().hex}")
    with pytest.raises(spec.TableNotFoundError, match="not found") as caught:
        namespace.describe_table(ln.DescribeTableRequest(id=["nope"]))
    assert isinstance(caught.value, lancelet.errors.LanceletError)
    with pytest.raises(spec.InvalidInputError, match="Arrow IPC"):
        namespace.create_table(ln.CreateTableRequest(id=["t"]), b"not arrow")


def test_create_empty_table_declares() -> None:
    namespace = lancelet_ns.DirectoryNamespace(root=f"memory://ns-{uuid.uuid4().hex}")
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    created = namespace.create_empty_table(ln.CreateEmptyTableRequest(id=["a", "e"]))
    described = namespace.describe_table(
        ln.DescribeTableRequest(id=["a", "e"], check_declared=True)
    )
    assert described.location == created.location
    assert described.is_only_declared is True
    table = pa.table({"id": [1]})
    # The name is taken until the declared table is dropped.
    with pytest.raises(spec.TableAlreadyExistsError):
        namespace.create_table(ln.CreateTableRequest(id=["a", "e"]), scenario.ipc_bytes(table))


def test_object_store_root_shared_with_pylance(s3_server: S3Server, s3_bucket: str) -> None:
    root = f"s3://{s3_bucket}/catalog"
    storage = {f"storage.{k}": v for k, v in s3_server.storage_options.items()}
    _populate(lancelet_ns.DirectoryNamespace(root=root, **storage))

    def read_pylance(location: str) -> Any:
        return lance.dataset(location, storage_options=s3_server.storage_options)

    _check_populated(pylance_ns.DirectoryNamespace(root=root, **storage), read_pylance)
    assert "catalog/__manifest/_versions/latest_version_hint.json" in s3_server.keys(s3_bucket)
