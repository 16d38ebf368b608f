"""The manifest a commit makes: its operation folded into the latest manifest (by the
fold of its kind, in :mod:`.operations`), then stamped as the next version."""

from __future__ import annotations

import time
from dataclasses import replace

from lancelet.table import features
from lancelet.table.lineage import touched, with_row_ids
from lancelet.table.manifest import Manifest, WriterVersion, data_file_format
from lancelet.transaction import operations as ops
from lancelet.transaction import registry
from lancelet.transaction.operations import foreign
from lancelet.transaction.operations.folding import FoldContext, ManifestLoader

__all__ = ["FoldContext", "ManifestLoader", "build_manifest", "stamp"]


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
        derived = foreign.fold(base, op, ctx)
    else:
        derived = registry.kind(op).fold(base, op, ctx)
    return stamp(derived, base, op, transaction_file)


def stamp(
    derived: Manifest, base: Manifest | None, op: ops.Operation, transaction_file: str
) -> Manifest:
    """The folded manifest as version ``base.version + 1`` (or 1 for a new dataset),
    with row ids for new rows when the dataset keeps them, this writer's name and the
    feature flags its content needs."""
    derived = _corrected_format(derived)
    if (
        base is not None
        and base.schema.dictionaries
        and not isinstance(op, ops.Overwrite | ops.Restore)
    ):
        # A legacy dataset's dictionary values stay with their columns (an overwrite
        # brings its own, a restore the old version's).
        kept = derived.schema.with_dictionaries(base.schema.dictionaries)
        derived = replace(derived, schema=kept)
    stable = _stable_row_ids(base, op)
    if stable:
        version = (base.version if base else 0) + 1
        derived = with_row_ids(
            derived, base.next_row_id if base else 0, version, _moved(base, op, derived)
        )
        if isinstance(op, ops.Merge):
            derived = _merged(base, derived, version)
    reader, writer = features.flags_for(
        any(f.deletion_file is not None for f in derived.fragments),
        derived.config,
        _mixed_versions(derived),
        stable,
        bool(derived.base_paths),
    )
    return replace(
        derived,
        version=(base.version if base else 0) + 1,
        timestamp_ns=time.time_ns(),
        writer_version=WriterVersion(),
        tag="",
        reader_feature_flags=reader,
        writer_feature_flags=writer,
        transaction_file=transaction_file,
    )


def _merged(base: Manifest | None, derived: Manifest, version: int) -> Manifest:
    """A merge's fragments given new data files (columns added or rewritten): pylance
    records all their rows as updated at ``version``, and leaves the others be."""
    before = {f.id: f.files for f in base.fragments} if base else {}
    fragments = tuple(
        touched(f, version) if before.get(f.id, f.files) != f.files else f
        for f in derived.fragments
    )
    return replace(derived, fragments=fragments)


def _moved(base: Manifest | None, op: ops.Operation, derived: Manifest) -> frozenset[int]:
    """Ids of the fragments an update or upsert wrote its moved rows to: its new ones."""
    if not isinstance(op, ops.Update):
        return frozenset()
    old = {f.id for f in base.fragments} if base else set()
    return frozenset(f.id for f in derived.fragments if f.id not in old)


def _mixed_versions(manifest: Manifest) -> bool:
    """Whether a data file's format differs from the dataset's (which then only names
    the format of new files)."""
    own = manifest.data_storage_version
    versions: set[tuple[int, int]] = set().union(*(f.file_versions for f in manifest.fragments))
    return any(data_file_format(major, minor) != own for major, minor in versions)


def _corrected_format(manifest: Manifest) -> Manifest:
    """A dataset marked legacy (0.1) whose data files all share one newer format is
    marked with that format, as pylance corrects the manifests some old writers left
    wrong.  Files of several formats are left as they are."""
    if manifest.data_storage_version != "0.1":
        return manifest
    found = {
        data_file_format(d.file_major_version, d.file_minor_version)
        for f in manifest.fragments
        for d in f.files
    }
    if len(found) != 1:
        return manifest
    (actual,) = found
    if actual is None or actual == "0.1":
        return manifest
    return replace(manifest, data_format=("lance", actual))


def _stable_row_ids(base: Manifest | None, op: ops.Operation) -> bool:
    if isinstance(op, ops.Overwrite) and op.stable_row_ids is not None:
        return op.stable_row_ids
    return base is not None and base.stable_row_ids
