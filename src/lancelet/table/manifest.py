"""The manifest: an immutable description of one version of a dataset.

:class:`Manifest` is a plain value.  A new version is a new manifest built from
the previous one (``dataclasses.replace``), never an edited copy.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from lancelet._proto import table_pb2
from lancelet._version import __version__
from lancelet.file import version as file_version
from lancelet.table import features
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata
from lancelet.table.schema import LanceSchema

LIBRARY = "lancelet"


@dataclass(frozen=True)
class WriterVersion:
    library: str = LIBRARY
    version: str = __version__


@dataclass(frozen=True)
class Manifest:
    schema: LanceSchema
    fragments: tuple[Fragment, ...]
    version: int
    timestamp_ns: int = field(default_factory=time.time_ns)
    writer_version: WriterVersion = field(default_factory=WriterVersion)
    tag: str = ""
    reader_feature_flags: int = 0
    writer_feature_flags: int = 0
    # The largest fragment id ever handed out in this lineage (None: never any).
    max_fragment_id: int | None = None
    transaction_file: str = ""
    next_row_id: int = 0
    data_format: tuple[str, str] = ("lance", "2.0")
    config: Mapping[str, str] = field(default_factory=dict)
    table_metadata: Mapping[str, str] = field(default_factory=dict)
    version_aux_data: int = 0
    branch: str | None = None
    # Index metadata travels with the manifest in its index section.
    indices: tuple[IndexMetadata, ...] = ()
    base_paths: tuple[BasePath, ...] = ()

    @property
    def num_rows(self) -> int:
        return sum(f.num_rows for f in self.fragments)

    @property
    def stable_row_ids(self) -> bool:
        """Whether rows keep an id of their own (else a row's id is its address)."""
        return bool(self.reader_feature_flags & features.STABLE_ROW_IDS)

    @property
    def data_storage_version(self) -> str:
        return self.data_format[1]

    def next_fragment_id(self) -> int:
        if self.max_fragment_id is not None:
            return self.max_fragment_id + 1
        # Manifests written before the field existed leave it out: their fragments
        # say which ids are taken.
        return max((f.id for f in self.fragments), default=-1) + 1

    def fragment(self, fragment_id: int) -> Fragment | None:
        return next((f for f in self.fragments if f.id == fragment_id), None)

    def to_proto(self, *, with_fragments: bool = True) -> table_pb2.Manifest:
        """The protobuf form; ``with_fragments=False`` leaves the fragments out, for a
        writer that appends their encoded bytes itself."""
        pb = table_pb2.Manifest(
            fields=self.schema.proto_fields(),
            schema_metadata=dict(self.schema.metadata),
            fragments=[f.to_proto() for f in self.fragments] if with_fragments else [],
            version=self.version,
            version_aux_data=self.version_aux_data,
            writer_version=table_pb2.Manifest.WriterVersion(
                library=self.writer_version.library, version=self.writer_version.version
            ),
            tag=self.tag,
            reader_feature_flags=self.reader_feature_flags,
            writer_feature_flags=self.writer_feature_flags,
            transaction_file=self.transaction_file,
            next_row_id=self.next_row_id,
            data_format=table_pb2.Manifest.DataStorageFormat(
                file_format=self.data_format[0], version=self.data_format[1]
            ),
            config=dict(self.config),
            table_metadata=dict(self.table_metadata),
            base_paths=[b.to_proto() for b in self.base_paths],
        )
        pb.timestamp.seconds, pb.timestamp.nanos = divmod(self.timestamp_ns, 1_000_000_000)
        if self.max_fragment_id is not None:
            pb.max_fragment_id = self.max_fragment_id
        if self.branch is not None:
            pb.branch = self.branch
        return pb

    @classmethod
    def from_proto(
        cls,
        pb: table_pb2.Manifest,
        indices: tuple[IndexMetadata, ...] = (),
        fragments: tuple[Fragment, ...] | None = None,
    ) -> Manifest:
        """``fragments``: those of ``pb`` decoded already (see table/fragment_check.py)."""
        if fragments is None:
            fragments = tuple(Fragment.from_proto(f) for f in pb.fragments)
        return cls(
            schema=LanceSchema.from_proto(pb.fields, pb.schema_metadata),
            fragments=fragments,
            version=pb.version,
            timestamp_ns=pb.timestamp.seconds * 1_000_000_000 + pb.timestamp.nanos,
            writer_version=WriterVersion(pb.writer_version.library, pb.writer_version.version),
            tag=pb.tag,
            reader_feature_flags=pb.reader_feature_flags,
            writer_feature_flags=pb.writer_feature_flags,
            max_fragment_id=pb.max_fragment_id if pb.HasField("max_fragment_id") else None,
            transaction_file=pb.transaction_file,
            next_row_id=pb.next_row_id,
            data_format=_data_format(pb),
            config=dict(pb.config),
            table_metadata=dict(pb.table_metadata),
            version_aux_data=pb.version_aux_data,
            branch=pb.branch if pb.HasField("branch") else None,
            indices=indices,
            base_paths=tuple(BasePath.from_proto(b) for b in pb.base_paths),
        )


# Data file versions (major, minor) of the legacy format; 2.0 files say (0, 3) or (2, 0).


def data_file_format(major: int, minor: int) -> str | None:
    """The format name ("0.1", "2.0", "2.1", ...) of a data file's recorded version;
    None when the pair names no format."""
    known = file_version.from_manifest(major, minor)
    if known is not None:
        return known.name
    return f"{major}.{minor}" if major >= 2 else None


def _data_format(pb: table_pb2.Manifest) -> tuple[str, str]:
    """The data file format of a manifest.  Writers before the field existed left it out:
    their data files tell the version; with no files the writer flag that once marked
    v2 datasets makes it the stable version (as pylance 14 reads such a manifest: its
    next files are of that version), and without the flag it is legacy (0.1)."""
    if pb.HasField("data_format"):
        return pb.data_format.file_format or "lance", pb.data_format.version
    for fragment in pb.fragments:
        for data_file in fragment.files:
            found = data_file_format(data_file.file_major_version, data_file.file_minor_version)
            return "lance", found or "0.1"
    if pb.writer_feature_flags & features.USE_V2_FORMAT_DEPRECATED:
        return "lance", file_version.stable_version()
    return "lance", "0.1"
