"""``DirectoryNamespace``: Lance tables and nested namespaces under one root.

The layout is pylance 14's, so either library can open a root the other wrote:

* a table at the root lives in ``<root>/<name>.lance``; found by listing the root
  (``dir_listing_enabled``) and, with the manifest, recorded in it too;
* nested namespaces and the tables in them are rows of ``<root>/__manifest``
  (:mod:`lancelet.namespace.manifest`); such a table lives in
  ``<root>/<8 hex digits>_<ns>$...$<name>``;
* a declared table (a reserved name, no data yet) is its directory holding an empty
  ``.lance-reserved`` file.

Operations this class does not define raise ``UnsupportedOperationError`` (the
``LanceNamespace`` base class's behaviour); request fields it does not implement are
refused with the same error.
"""

from __future__ import annotations

import uuid
from typing import Any

from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)

from lancelet import io
from lancelet.dataset import engine
from lancelet.errors import DatasetAlreadyExistsError, UnsupportedOptionError
from lancelet.namespace import requests as rq
from lancelet.namespace.config import DirectoryConfig, parse_properties
from lancelet.namespace.errors import (
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lancelet.namespace.manifest import (
    DELIMITER,
    MANIFEST_NAME,
    NAMESPACE,
    TABLE,
    Entry,
    ManifestTable,
    namespace_entry,
)

TABLE_SUFFIX = ".lance"
RESERVED_MARKER = ".lance-reserved"


class DirectoryNamespace(LanceNamespace):
    """A directory (local path, file://, memory://, s3://, ...) of Lance tables and
    nested namespaces, laid out as pylance's DirectoryNamespace lays it out.

    Properties: ``root`` (required), ``manifest_enabled`` and ``dir_listing_enabled``
    ("true"/"false", both true by default) and ``storage.<option>`` (a storage option
    for the root's object store).  Others are refused."""

    def __init__(
        self, session: Any = None, context_provider: Any = None, **properties: Any
    ) -> None:
        if session is not None or context_provider is not None:
            raise UnsupportedOptionError(
                "DirectoryNamespace: lancelet supports neither session nor context_provider"
            )
        self._config: DirectoryConfig = parse_properties(properties)
        self._built_io: io.FileIO | None = None

    def namespace_id(self) -> str:
        return f'DirectoryNamespace {{ root: "{self._config.root}" }}'

    def __repr__(self) -> str:
        return f"DirectoryNamespace({self.namespace_id()})"

    def retrieve_ops_metrics(self) -> dict[str, int]:
        """Calls per operation: none are counted, as in pylance without the
        ``ops_metrics_enabled`` property (which lancelet does not take)."""
        return {}

    def reset_ops_metrics(self) -> None:
        """Nothing to reset (see ``retrieve_ops_metrics``)."""

    # -- namespaces ------------------------------------------------------------------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        rq.refuse_fields(request, "create_namespace", mode=rq.CREATE_MODES, properties=None)
        ident = rq.namespace_id(request.id)
        if not ident:
            raise NamespaceAlreadyExistsError("Namespace already exists: root namespace")
        self._need_manifest("Child namespaces")
        self._prepare()
        self._require_namespace(ident[:-1], "parent namespace ")
        if not self._manifest.insert(namespace_entry(_object_id(ident), request.properties)):
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {_object_id(ident)}")
        return CreateNamespaceResponse(properties=request.properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        rq.refuse_fields(request, "list_namespaces", page_token=None, limit=None)
        ident = rq.required_namespace_id(request.id)
        self._prepare()
        self._require_namespace(ident)
        names = _names(self._manifest.children(_object_id(ident), NAMESPACE))
        page, token = rq.page(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        rq.refuse_fields(request, "describe_namespace")
        ident = rq.namespace_id(request.id)
        self._prepare()
        entry = self._require_namespace(ident)
        # pylance answers {} for the root, None for a namespace created without any.
        properties = entry.properties or None if entry is not None else {}
        return DescribeNamespaceResponse(properties=properties)

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        rq.refuse_fields(request, "drop_namespace", mode=rq.DROP_MODES, behavior=("restrict",))
        ident = rq.namespace_id(request.id)
        if not ident:
            raise InvalidInputError("Invalid input: Root namespace cannot be dropped")
        self._prepare()
        self._require_namespace(ident)
        object_id = _object_id(ident)
        inside = self._manifest.count_below(object_id)
        if inside:
            raise NamespaceNotEmptyError(
                f"Namespace not empty: '{object_id}' (contains {inside} child objects)"
            )
        if not self._manifest.remove(object_id):
            raise NamespaceNotFoundError(f"Namespace not found: {object_id}")
        return DropNamespaceResponse()

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        rq.refuse_fields(request, "namespace_exists")
        self._prepare()
        self._require_namespace(rq.namespace_id(request.id))
        return NamespaceExistsResponse()

    # -- tables ----------------------------------------------------------------------

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        rq.refuse_fields(request, "list_tables", page_token=None, limit=None, include_declared=None)
        ident = rq.required_namespace_id(request.id)
        self._prepare()
        self._require_namespace(ident)
        found = {e.object_id.rsplit(DELIMITER, 1)[-1]: e.location for e in self._tables_in(ident)}
        if not ident and self._config.dir_listing_enabled:
            for name in self._listed_root_tables():
                found.setdefault(name, name + TABLE_SUFFIX)
        names = sorted(found)
        if request.include_declared is False:
            names = [n for n in names if not self._only_declared(str(found[n]))]
        page, token = rq.page(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        rq.refuse_fields(
            request,
            "describe_table",
            with_table_uri=None,
            load_detailed_metadata=(False,),
            check_declared=None,
            vend_credentials=(False,),
        )
        ident = rq.table_id(request.id)
        self._prepare()
        location = self._locate(ident)
        uri = self._table_uri(location)
        declared = self._only_declared(location) if request.check_declared else None
        return DescribeTableResponse(
            table=ident[-1],
            namespace=ident[:-1],
            location=uri,
            table_uri=uri,
            is_only_declared=declared,
        )

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        rq.refuse_fields(request, "table_exists")
        self._prepare()
        self._locate(rq.table_id(request.id))
        return TableExistsResponse()

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        rq.refuse_fields(request, "create_table", mode=rq.CREATE_MODES)
        ident = rq.table_id(request.id)
        if not request_data:
            raise InvalidInputError(
                "Invalid input: Request data (Arrow IPC stream) is required for create_table"
            )
        data = rq.read_ipc_stream(request_data)
        self._prepare()
        location = self._new_table_location(ident)
        uri = self._table_uri(location)
        try:
            created = engine.create_with_storage(uri, self._io, data)
        except DatasetAlreadyExistsError as exc:
            raise TableAlreadyExistsError(f"Table already exists: {ident[-1]}") from exc
        try:
            self._record_table(ident, location)
        except BaseException:
            self._io.remove_tree(uri)
            raise
        return CreateTableResponse(location=uri, version=created.version)

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        rq.refuse_fields(request, "declare_table", vend_credentials=(False,))
        ident = rq.table_id(request.id)
        self._prepare()
        location = self._new_table_location(ident)
        uri = self._table_uri(location)
        if not self._io.put_if_not_exists(f"{uri}/{RESERVED_MARKER}", b""):
            raise TableAlreadyExistsError(f"Table already exists: {ident[-1]}")
        try:
            self._record_table(ident, location)
        except BaseException:
            self._io.remove_tree(uri)
            raise
        return DeclareTableResponse(location=uri)

    def create_empty_table(self, request: CreateTableRequest) -> CreateTableResponse:
        """lance-namespace's deprecated ``create_empty_table``: declares the table (its
        schema is not part of the request model)."""
        rq.refuse_fields(request, "create_empty_table", mode=rq.CREATE_MODES)
        declared = self.declare_table(DeclareTableRequest(id=request.id))
        return CreateTableResponse(location=declared.location)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        rq.refuse_fields(request, "register_table", mode=("create",), location=None)
        ident = rq.table_id(request.id)
        self._need_manifest("register_table")
        location = rq.relative_location(request.location)
        self._prepare()
        self._require_namespace(ident[:-1])
        if not self._manifest.insert(Entry(_object_id(ident), TABLE, location)):
            raise TableAlreadyExistsError(f"Table already exists: {_object_id(ident)}")
        return RegisterTableResponse(location=location)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        rq.refuse_fields(request, "deregister_table")
        ident = rq.table_id(request.id)
        self._prepare()
        entry = self._recorded_table(ident)
        if entry is None or not self._manifest.remove(entry.object_id):
            raise TableNotFoundError(f"Table not found: table id '{_object_id(ident)}'")
        return DeregisterTableResponse(id=ident, location=self._table_uri(str(entry.location)))

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        rq.refuse_fields(request, "drop_table")
        ident = rq.table_id(request.id)
        self._prepare()
        location = self._locate(ident)
        entry = self._recorded_table(ident)
        # Forget the table before deleting its files, so no reader is sent to a half
        # deleted directory.
        if entry is not None and not self._manifest.remove(entry.object_id):
            raise TableNotFoundError(f"Table not found: {ident[-1]}")
        uri = self._table_uri(location)
        self._io.remove_tree(uri)
        return DropTableResponse(id=ident, location=uri)

    # -- helpers ---------------------------------------------------------------------

    def _prepare(self) -> None:
        # Storage options reach the store when the namespace first touches it, as in
        # pylance (constructing a namespace does no I/O).
        if self._built_io is None:
            self._built_io = io.FileIO.for_uri(self._config.root_uri, self._config.storage_options)

    @property
    def _io(self) -> io.FileIO:
        """The namespace's storage, through which its tables are written and listed (a
        ``memory://`` root's tables live in its store alone)."""
        self._prepare()
        assert self._built_io is not None
        return self._built_io

    @property
    def _manifest(self) -> ManifestTable:
        return ManifestTable(self._config.root_uri, self._io)

    def _need_manifest(self, what: str) -> None:
        if not self._config.manifest_enabled:
            raise UnsupportedOperationError(
                f"Unsupported: {what} are only supported when manifest mode is enabled"
                if what[0].isupper()
                else f"Unsupported: {what} is only supported when manifest mode is enabled"
            )

    def _require_namespace(self, ident: list[str], what: str = "") -> Entry | None:
        """The namespace's entry (None for the root); NamespaceNotFoundError if absent."""
        if not ident:
            return None
        entry = self._manifest.get(_object_id(ident)) if self._config.manifest_enabled else None
        if entry is None or entry.object_type != NAMESPACE:
            raise NamespaceNotFoundError(f"Namespace not found: {what}'{_object_id(ident)}'")
        return entry

    def _tables_in(self, ident: list[str]) -> list[Entry]:
        if not self._config.manifest_enabled:
            return []
        return self._manifest.children(_object_id(ident), TABLE)

    def _recorded_table(self, ident: list[str]) -> Entry | None:
        if not self._config.manifest_enabled:
            return None
        entry = self._manifest.get(_object_id(ident))
        return entry if entry is not None and entry.object_type == TABLE else None

    def _listed_root_tables(self) -> list[str]:
        names = self._io.list_dir(self._config.root_uri)
        return [
            n[: -len(TABLE_SUFFIX)]
            for n in names
            if n.endswith(TABLE_SUFFIX) and len(n) > len(TABLE_SUFFIX) and n != MANIFEST_NAME
        ]

    def _locate(self, ident: list[str]) -> str:
        """The table's location relative to the root; TableNotFoundError if none."""
        entry = self._recorded_table(ident)
        if entry is not None and entry.location:
            return entry.location
        if len(ident) == 1 and self._config.dir_listing_enabled:
            location = ident[0] + TABLE_SUFFIX
            if self._io.is_dir(self._table_uri(location)):
                return location
        raise TableNotFoundError(f"Table not found: table id '{_object_id(ident)}'")

    def _new_table_location(self, ident: list[str]) -> str:
        if len(ident) == 1:
            location = ident[0] + TABLE_SUFFIX
        else:
            self._need_manifest("Multi-level table IDs")
            location = f"{uuid.uuid4().hex[:8]}_{_object_id(ident)}"
        self._require_namespace(ident[:-1])
        if self._recorded_table(ident) is not None or self._io.is_dir(self._table_uri(location)):
            raise TableAlreadyExistsError(f"Table already exists: {ident[-1]}")
        return location

    def _record_table(self, ident: list[str], location: str) -> None:
        if self._config.manifest_enabled and not self._manifest.insert(
            Entry(_object_id(ident), TABLE, location)
        ):
            raise TableAlreadyExistsError(f"Table already exists: {ident[-1]}")

    def _table_uri(self, location: str) -> str:
        return f"{self._config.root_uri}/{location}"

    def _only_declared(self, location: str) -> bool:
        return not self._io.is_dir(f"{self._table_uri(location)}/_versions")


def _object_id(ident: list[str]) -> str:
    return DELIMITER.join(ident)


def _names(entries: list[Entry]) -> list[str]:
    return sorted(e.object_id.rsplit(DELIMITER, 1)[-1] for e in entries)
