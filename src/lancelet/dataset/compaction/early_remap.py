"""A compaction's index remap, begun while its data files are still being written.

Where rows move follows from the old fragments' deletions and the new fragments'
ids and sizes alone (see :mod:`.moves`), and both are known before any row is
rewritten: a task writes ``max(1, rows // target)`` files of set sizes, and the
ids the commit reserves are the next free ones unless another writer takes them
first.  So a compaction run in one process remaps its index segments on a
thread of their own, for the fragments it expects to write, while the rewrite
(mostly compiled decoding and encoding) goes on.  At commit the expectation is
checked against what was written and reserved: when they differ (a file cut by
``max_bytes_per_file``, ids taken meanwhile) the segments written early are
removed and the remap is done again, as before; when they agree, a remap that
failed fails the compaction, as it would have at commit.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Sequence

from lancelet.dataset.compaction.planning import deleted_count
from lancelet.dataset.compaction.remap import discard_indices, remap_indices
from lancelet.dataset.compaction.rewrite import output_sizes
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import RewriteGroup, RewrittenIndex
from lancelet.transaction.store import DatasetStore


def expected_groups(
    store: DatasetStore, manifest: Manifest, bins: Sequence[Sequence[Fragment]], target: int
) -> list[RewriteGroup]:
    """The groups a rewrite of ``bins`` read at ``manifest`` should commit: per bin
    its new fragments' sizes, numbered from the next free id (data files left out:
    the remap needs only ids and sizes)."""
    next_id = manifest.next_fragment_id()
    groups = []
    for old in bins:
        live = sum(f.physical_rows - deleted_count(store, f) for f in old)
        new = []
        for size in output_sizes(live, target):
            new.append(Fragment(next_id, (), size))
            next_id += 1
        groups.append(RewriteGroup(tuple(old), tuple(new)))
    return groups


def _shape(groups: Sequence[RewriteGroup]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """What the moves depend on: the old fragments' ids and the new ones' ids and sizes."""
    return [
        ([f.id for f in g.old_fragments], [(f.id, f.physical_rows) for f in g.new_fragments])
        for g in groups
    ]


class EarlyRemap:
    """The remap of ``groups`` (expected, see :func:`expected_groups`) on a thread."""

    def __init__(
        self, store: DatasetStore, manifest: Manifest, groups: Sequence[RewriteGroup]
    ) -> None:
        self._store = store
        self._expected = _shape(groups)
        self._result: tuple[RewrittenIndex, ...] | None = None
        self._error: BaseException | None = None
        self._handed_over = False
        # The thread writes within the caller's context: its files' syncs are deferred
        # along with the caller's (see lancelet.io.durability).
        run = contextvars.copy_context().run
        self._thread = threading.Thread(
            target=run, args=(self._remap, manifest, groups), name="lancelet-remap", daemon=True
        )
        self._thread.start()

    def _remap(self, manifest: Manifest, groups: Sequence[RewriteGroup]) -> None:
        try:
            self._result = remap_indices(self._store, manifest, groups)
        except BaseException as exc:  # raised at commit, if these groups commit
            self._error = exc

    def take(self, groups: Sequence[RewriteGroup]) -> tuple[RewrittenIndex, ...] | None:
        """The segments remapped early, when ``groups`` (numbered, as committed) are
        those expected (the early remap's failure is raised then); else None, the
        early ones removed."""
        self._thread.join()
        if _shape(groups) != self._expected:
            self.discard()
            return None
        if self._error is not None:
            raise self._error
        self._handed_over = True
        return self._result

    def discard(self) -> None:
        """Remove the segments written early, unless :meth:`take` handed them over."""
        self._thread.join()
        if self._result is not None and not self._handed_over:
            discard_indices(self._store, self._result)
            self._result = None
