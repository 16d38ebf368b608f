"""A fragment's files against what the manifest says of them: data files (present,
with a sound footer, the rows and fields the fragment lists), the deletion file
(present, decoding, deleting the recorded number of existing rows), and the per-row
sequences of stable row ids and row lineage.  Each check is keyed by what its verdict
depends on (see :mod:`.batch`), so a file is read once whatever uses it."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import partial

from lancelet import io
from lancelet._proto import rowids_pb2
from lancelet.dataset.doctor.batch import CheckBatch
from lancelet.dataset.doctor.lance_files import open_lance_file
from lancelet.dataset.doctor.problems import Problem, Problems
from lancelet.errors import CorruptDatasetError
from lancelet.file import LanceFileReader
from lancelet.table import deletion, naming, row_ids
from lancelet.table.fragment import DataFile, Fragment, Sequence
from lancelet.table.manifest import Manifest
from lancelet.table.schema import column_field_ids
from lancelet.table.validate import check_file_fields
from lancelet.transaction.store import DatasetStore

_LINEAGE = (
    ("created_at_version_meta", "created-at versions"),
    ("last_updated_at_version_meta", "last-updated-at versions"),
)


def relative_path(store: DatasetStore, path: str) -> str:
    """``path`` relative to the dataset root when it is below it, else as it is."""
    root = store.root.rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else path


def _reason(exc: BaseException, path: str) -> str:
    text = str(exc) or type(exc).__name__
    return text.removeprefix(f"{path}: ")


@dataclass
class FragmentChecks:
    """Asks for the checks of each version's fragments in a batch."""

    store: DatasetStore
    problems: Problems
    batch: CheckBatch
    # The newest version each lineage sequence names (or why it does not decode), by
    # sequence and row count: every version holding the fragment compares with it.
    _lineage_seen: dict[tuple[Sequence, int], int | str] = field(default_factory=dict)
    # Likewise the highest row id each row id sequence lists.
    _row_ids_seen: dict[tuple[Sequence, int], int | str] = field(default_factory=dict)

    def check(self, manifest: Manifest) -> None:
        schema_ids = frozenset(column_field_ids(manifest.schema))
        for fragment in manifest.fragments:
            held = frozenset(i for f in fragment.files for i in f.fields)
            for data_file in fragment.files:
                self._check_data_file(manifest, fragment, data_file, schema_ids - held)
            self._check_row_files(fragment, manifest.version, manifest.next_row_id)

    def _check_row_files(self, fragment: Fragment, version: int, next_row_id: int) -> None:
        """The deletion file, and the row id and lineage sequences."""
        rows = fragment.physical_rows
        if fragment.deletion_file is not None:
            key: Hashable = ("deletion", fragment.id, fragment.deletion_file, rows)
            self.batch.add(key, version, partial(self._deletions, fragment))
        if fragment.row_id_meta is not None:
            key = ("row ids", fragment.row_id_meta, rows, next_row_id)
            self.batch.add(key, version, partial(self._row_ids, fragment, next_row_id))
        for attribute, label in _LINEAGE:
            sequence: Sequence | None = getattr(fragment, attribute)
            if sequence is not None:
                key = ("lineage", sequence, rows, version)
                check = partial(self._lineage, sequence, fragment, label, version)
                self.batch.add(key, version, check)

    def _check_data_file(
        self, manifest: Manifest, fragment: Fragment, data_file: DataFile, not_held: frozenset[int]
    ) -> None:
        path = self._data_path(manifest, data_file)
        if path is None:
            return
        rows = fragment.physical_rows
        key = ("data", path, rows, tuple(data_file.fields), not_held)
        check = partial(self._data_file, path, data_file, rows, not_held)
        self.batch.add(key, manifest.version, check)

    def _data_path(self, manifest: Manifest, data_file: DataFile) -> str | None:
        if data_file.base_id is None:
            return self.store.path(naming.DATA_DIR, data_file.path)
        base = next((b for b in manifest.base_paths if b.id == data_file.base_id), None)
        if base is None:  # the manifest's own checks refuse this; kept for safety
            self.problems.note(
                f"version {manifest.version}: data file {data_file.path} names base path "
                f"{data_file.base_id}, which the manifest does not list; it was not checked"
            )
            return None
        return io.join(base.data_dir(), data_file.path)

    # -- data files ---------------------------------------------------------------------

    def _data_file(
        self, path: str, data_file: DataFile, physical_rows: int, not_held: frozenset[int]
    ) -> list[Problem]:
        shown = relative_path(self.store, path)
        found = self.store.io.head(path)
        if found is None:
            return [
                Problem(
                    "missing-data-file",
                    shown,
                    f"The data file is not there; the fragment's {physical_rows} rows "
                    "cannot be read.",
                )
            ]
        recorded = (data_file.file_major_version, data_file.file_minor_version)
        opened = open_lance_file(self.store.io, path, recorded)
        if opened.undecided is not None:
            self.problems.note(
                f"{shown}: lancelet cannot read this file, so it was not checked: "
                f"{opened.undecided}"
            )
        if opened.damage is not None:
            return [
                Problem(
                    "unreadable-data-file",
                    shown,
                    f"The data file is damaged (its footer or metadata does not decode; "
                    f"a truncated or overwritten file): {opened.damage}",
                )
            ]
        if opened.reader is None:
            return []  # no verdict: noted above
        return self._data_file_agrees(
            opened.reader, shown, data_file, physical_rows, not_held, found.size
        )

    def _data_file_agrees(
        self,
        reader: LanceFileReader,
        shown: str,
        data_file: DataFile,
        physical_rows: int,
        not_held: frozenset[int],
        size: int,
    ) -> list[Problem]:
        disagreements = []
        if reader.num_rows() != physical_rows:
            disagreements.append(
                f"it holds {reader.num_rows()} rows, the fragment says {physical_rows}"
            )
        recorded = data_file.file_size_bytes
        if recorded is not None and recorded != size:
            disagreements.append(f"it is {size} bytes, the manifest records {recorded}")
        try:
            check_file_fields(data_file.fields, list(reader.field_ids), not_held, shown)
        except CorruptDatasetError as exc:
            disagreements.append(_reason(exc, shown))
        return [
            Problem(
                "data-file-mismatch",
                shown,
                f"The data file does not match the manifest: {text}; it was replaced or "
                "belongs to another fragment.",
            )
            for text in disagreements
        ]

    # -- deletion files -----------------------------------------------------------------

    def _deletions(self, fragment: Fragment) -> list[Problem]:
        file = fragment.deletion_file
        assert file is not None
        path = self.store.deletion_path(fragment.id, file)
        shown = relative_path(self.store, path)
        try:
            data = self.store.io.read_bytes(path)
        except FileNotFoundError:
            return [
                Problem(
                    "missing-deletion-file",
                    shown,
                    f"Fragment {fragment.id}'s deletion file is not there: which of its "
                    f"rows are deleted ({file.num_deleted_rows} of them) is lost, so no "
                    "reader opens the fragment.",
                )
            ]
        try:
            rows = deletion.decode(data, file.kind, fragment.physical_rows, path)
        except CorruptDatasetError as exc:
            return [
                Problem(
                    "unreadable-deletion-file",
                    shown,
                    f"Fragment {fragment.id}'s deletion file is damaged: {_reason(exc, path)}.",
                )
            ]
        if len(rows) != file.num_deleted_rows:
            return [
                Problem(
                    "deletion-count-mismatch",
                    shown,
                    f"Fragment {fragment.id}'s deletion file deletes {len(rows)} rows, the "
                    f"manifest records {file.num_deleted_rows}: row counts would be wrong.",
                )
            ]
        return []

    # -- row ids and lineage ------------------------------------------------------------

    def _row_ids(self, fragment: Fragment, next_row_id: int) -> list[Problem]:
        meta = fragment.row_id_meta
        assert meta is not None
        path = None if meta.external is None else meta.external.path
        key = (meta, fragment.physical_rows)
        if key not in self._row_ids_seen:
            try:
                ids = self.store.read_row_ids(fragment)
                self._row_ids_seen[key] = -1 if ids is None or not len(ids) else int(ids.max())
            except CorruptDatasetError as exc:
                self._row_ids_seen[key] = _reason(exc, self.store.root)
        highest = self._row_ids_seen[key]
        if isinstance(highest, str):
            return [
                Problem(
                    "bad-row-ids",
                    path,
                    f"Fragment {fragment.id}'s stable row ids cannot be read: {highest}.",
                )
            ]
        if highest < next_row_id:
            return []
        return [
            Problem(
                "row-id-counter-behind",
                None,
                # Worded for the version, not the fragment: one finding however
                # many fragments hold ids past the counter.
                f"The version's next row id, {next_row_id}, is not past the stable row "
                "ids its fragments hold: rows written next would take ids already in "
                "use, and two rows would share one.",
            )
        ]

    def _lineage(
        self, sequence: Sequence, fragment: Fragment, label: str, version: int
    ) -> list[Problem]:
        path = None if sequence.external is None else sequence.external.path
        key = (sequence, fragment.physical_rows)
        if key not in self._lineage_seen:
            try:
                self._lineage_seen[key] = self._lineage_latest(sequence, fragment)
            except CorruptDatasetError as exc:
                self._lineage_seen[key] = _reason(exc, self.store.root)
        latest = self._lineage_seen[key]
        if isinstance(latest, str):
            problem = latest
        elif latest <= version:
            return []
        else:
            problem = f"it names version {latest}, after this version {version}"
        return [
            Problem(
                "bad-row-versions",
                path,
                f"Fragment {fragment.id}'s row lineage ({label}) is damaged: {problem}.",
            )
        ]

    def _lineage_latest(self, sequence: Sequence, fragment: Fragment) -> int:
        """The newest version a lineage sequence names, after checking it covers every
        row: its runs' spans are row id segments, so the row id decoder counts them."""
        where = f"fragment {fragment.id}"
        data = self._sequence_bytes(sequence, where)
        parsed = rowids_pb2.RowDatasetVersionSequence()
        try:
            parsed.ParseFromString(data)
        except Exception as exc:  # protobuf raises DecodeError or RuntimeError
            raise CorruptDatasetError(f"{where}: the sequence does not decode: {exc}") from exc
        spans = rowids_pb2.RowIdSequence(segments=[run.span for run in parsed.runs])
        row_ids.decode(spans.SerializeToString(), fragment.physical_rows, where)
        return max((run.version for run in parsed.runs), default=0)

    def _sequence_bytes(self, sequence: Sequence, where: str) -> bytes:
        external = sequence.external
        if external is None:
            return sequence.inline or b""
        try:
            data = self.store.io.read_bytes(self.store.path(external.path))
        except FileNotFoundError as exc:
            raise CorruptDatasetError(f"{where}: the file {external.path} is not there") from exc
        chunk = data[external.offset : external.offset + external.size]
        if len(chunk) != external.size:
            raise CorruptDatasetError(f"{where}: {external.path} ends before the sequence does")
        return chunk
