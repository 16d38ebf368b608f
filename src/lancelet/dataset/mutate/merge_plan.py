"""Readable plans of a merge_insert (``explain_plan``) and, after running it without
committing, what it did (``analyze_plan``).

The plan describes lancelet's merge (see :mod:`lancelet.dataset.mutate.merge_insert`): the
target's key columns and row addresses are read, joined to the source by a hash join,
each row classified, updated and inserted rows written as new fragments, replaced
and deleted target rows marked in deletion vectors, all committed as one Update.
The :class:`MergeSpec` the builder fills in is declared here, beneath both its
readers: the plans describe it and ``merge_insert`` runs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from lancelet.dataset.mutate.update import RowRewrite, discard_rewrite
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import Update
from lancelet.transaction.store import DatasetStore

Matched = Literal["keep", "update", "delete", "fail"]


@dataclass(frozen=True)
class MergeSpec:
    """What to do with each category of rows."""

    on: tuple[str, ...]
    matched: Matched = "keep"
    update_condition: str | None = None
    insert: bool = False
    delete_unmatched: bool = False
    delete_condition: str | None = None
    # Join through a scalar index on the key when pylance would (see merge_index).
    use_index: bool = True


def _when(spec: MergeSpec) -> str:
    matched = {"keep": "do_nothing", "update": "update_all", "delete": "delete", "fail": "fail"}
    parts = [
        f"on=[{', '.join(spec.on)}]",
        f"when_matched={matched[spec.matched]}",
        f"when_not_matched={'insert_all' if spec.insert else 'do_nothing'}",
        f"when_not_matched_by_source={'delete' if spec.delete_unmatched else 'keep'}",
    ]
    if spec.update_condition is not None:
        parts.append(f"update_condition={spec.update_condition}")
    if spec.delete_condition is not None:
        parts.append(f"delete_condition={spec.delete_condition}")
    return ", ".join(parts)


def _lines(
    store: DatasetStore, manifest: Manifest, spec: MergeSpec, source: pa.Schema, verbose: bool
) -> list[str]:
    keys = ", ".join(spec.on)
    lines = [
        f"MergeInsert: {_when(spec)}, commit=Update",
        "  Write: updated and inserted rows as new fragments, replaced and deleted target "
        "rows in deletion vectors",
        f"    HashJoin: inner, source [{keys}] = target [{keys}], null keys match nothing",
        f"      Source: columns=[{', '.join(source.names)}]",
        f"      LanceRead: uri={store.root}, projection=[{keys}], "
        f"num_fragments={len(manifest.fragments)}, row_addr=true, filter=--",
    ]
    if verbose:
        omitted = [n for n in manifest.schema.to_arrow().names if n not in source.names]
        lines.insert(
            2,
            f"    ColumnsFromTarget: columns=[{', '.join(omitted)}] (kept in updated rows, "
            "null in inserted ones)",
        )
    return lines


def explain_merge(
    store: DatasetStore, manifest: Manifest, spec: MergeSpec, source: pa.Schema, verbose: bool
) -> str:
    return "\n".join(_lines(store, manifest, spec, source, verbose)) + "\n"


def analyze_merge(
    store: DatasetStore,
    manifest: Manifest,
    spec: MergeSpec,
    source: pa.Table,
    plan: Callable[[DatasetStore, Manifest, pa.Table, MergeSpec], RowRewrite[Update]],
) -> str:
    """Run the merge (``plan``, which writes its files) on ``manifest`` without
    committing it (its files are removed) and give its plan with what it did."""
    started = time.perf_counter()
    planned = plan(store, manifest, source, spec)
    elapsed = time.perf_counter() - started
    operation = planned.operation
    try:
        files = [f for fragment in operation.new_fragments for f in fragment.files]
        deletions = sum(f.deletion_file is not None for f in operation.updated_fragments)
    finally:
        discard_rewrite(store, manifest, operation)
    counts = ", ".join(f"{k}={v}" for k, v in planned.counts.items())
    metrics = (
        f"metrics=[{counts}, bytes_written={sum(f.file_size_bytes or 0 for f in files)}, "
        f"num_files_written={len(files)}, num_deletion_files_written={deletions}, "
        f"elapsed={elapsed * 1000:.3f}ms]"
    )
    lines = _lines(store, manifest, spec, source.schema, verbose=True)
    lines[0] += f", {metrics}"
    header = "AnalyzeExec: not committed (the files written were removed)"
    return "\n".join([header, *("  " + line for line in lines)]) + "\n"
