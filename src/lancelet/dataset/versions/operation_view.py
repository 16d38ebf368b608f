"""Committed operations as ``read_transaction`` shows them: the ``LanceOperation`` class
pylance 14 returns for each kind, with the same field values.

Kinds pylance's API has no class for (``update_bases``, ``update_mem_wal_state``, and
any a newer writer adds) show as an opaque ``BaseOperation``, as in pylance.
"""

from __future__ import annotations

from lancelet.dataset.versions.bases import DatasetBasePath
from lancelet.dataset.versions.index_operation import public_index
from lancelet.dataset.versions.operation import LanceOperation
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.transaction import operations as ops


def public_operation(op: ops.Operation) -> LanceOperation.BaseOperation:
    """The ``LanceOperation`` a committed operation is, as ``read_transaction`` shows it."""
    if isinstance(op, ops.Append):
        return LanceOperation.Append(list(op.fragments))
    if isinstance(op, ops.Overwrite):
        return _overwrite(op)
    if isinstance(op, ops.Delete):
        return LanceOperation.Delete(
            list(op.updated_fragments), list(op.deleted_fragment_ids), op.predicate
        )
    if isinstance(op, ops.Update):
        return _update(op)
    if isinstance(op, ops.Restore):
        return LanceOperation.Restore(op.version)
    if isinstance(op, ops.Merge):
        return LanceOperation.Merge(
            list(op.fragments), PublicLanceSchema(op.schema), op.preserves_nullability
        )
    if isinstance(op, ops.Project):
        return LanceOperation.Project(PublicLanceSchema(op.schema), op.preserves_nullability)
    if isinstance(op, ops.Rewrite):
        return _rewrite(op)
    if isinstance(op, ops.ReserveFragments):
        # lancelet's own class (pylance shows this kind opaquely): still a BaseOperation.
        return LanceOperation.ReserveFragments(op.num_fragments)
    if isinstance(op, ops.DataReplacement):
        return LanceOperation.DataReplacement(
            [LanceOperation.DataReplacementGroup(i, f) for i, f in op.replacements]
        )
    if isinstance(op, ops.UpdateConfig):
        return _update_config(op)
    if isinstance(op, ops.CreateIndex):
        return LanceOperation.CreateIndex(
            [public_index(i) for i in op.new_indices],
            [public_index(i) for i in op.removed_indices],
        )
    if isinstance(op, ops.Foreign) and op.clone is not None:
        c = op.clone
        return LanceOperation.Clone(
            c.is_shallow, c.ref_name, c.ref_version, c.ref_path, c.branch_name
        )
    # As pylance shows a kind it has no class for: an opaque operation, which cannot
    # be committed again.
    return LanceOperation.BaseOperation()


def _overwrite(op: ops.Overwrite) -> LanceOperation.Overwrite:
    # pylance shows no bases as None, not as an empty list.
    bases = [DatasetBasePath._of(b) for b in op.initial_bases] or None
    return LanceOperation.Overwrite(
        PublicLanceSchema(op.schema),
        list(op.fragments),
        bases,
        config_upsert_values=dict(op.config_upsert_values),
    )


def _update(op: ops.Update) -> LanceOperation.Update:
    return LanceOperation.Update(
        list(op.removed_fragment_ids),
        list(op.updated_fragments),
        list(op.new_fragments),
        list(op.fields_modified),
        list(op.fields_for_preserving_frag_bitmap),
        op.update_mode,
        # The transaction file has no offsets: pylance reads them back as None too.
        None,
        _inserted_keys=op.inserted_keys,
    )


def _rewrite(op: ops.Rewrite) -> LanceOperation.Rewrite:
    return LanceOperation.Rewrite(
        [
            LanceOperation.RewriteGroup(list(g.old_fragments), list(g.new_fragments))
            for g in op.groups
        ],
        [_rewritten_index(r) for r in op.rewritten_indices],
    )


def _rewritten_index(index: ops.RewrittenIndex) -> LanceOperation.RewrittenIndex:
    """pylance 14 fails to build this (it passes only the two ids), so its fields are
    those its class declares, filled from the transaction; no details read as empty."""
    details = index.details
    return LanceOperation.RewrittenIndex(
        str(index.old_id),
        str(index.new_id),
        "" if details is None else details.type_url,
        b"" if details is None else details.value,
        index.index_version,
    )


def _public_map(update: ops.MapUpdate | None) -> LanceOperation.UpdateMap | None:
    return (
        None if update is None else LanceOperation.UpdateMap(dict(update.entries), update.replace)
    )


def _update_config(op: ops.UpdateConfig) -> LanceOperation.UpdateConfig:
    config: dict[str, str | None] = {**op.upsert_values, **dict.fromkeys(op.delete_keys)}
    return LanceOperation.UpdateConfig(
        LanceOperation.UpdateMap(config) if config else None,
        _public_map(op.table_metadata),
        _public_map(op.schema_metadata),
        {
            k: LanceOperation.UpdateMap(dict(v.entries), v.replace)
            for k, v in op.field_metadata.items()
        }
        or None,
    )
