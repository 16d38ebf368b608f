"""What changed between versions, on ``LanceDataset``: pylance's ``delta()`` and
lancelet's change feed ``changes()`` (engine: ``dataset/changefeed/``)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lancelet.dataset.changefeed.delta import DatasetDelta, dataset_delta
from lancelet.dataset.changefeed.feed import change_feed
from lancelet.dataset.core.snapshot import DatasetHandle


class ChangeMethods(DatasetHandle):
    """Mixed into ``LanceDataset``."""

    def delta(
        self,
        compared_against: int | None = None,
        *,
        begin_version: int | None = None,
        end_version: int | None = None,
    ) -> DatasetDelta:
        """The changes between two versions as pylance's ``DatasetDelta``: this
        version against ``compared_against`` (the older of the two begins), or both
        ``begin_version`` (exclusive) and ``end_version`` (inclusive); giving both
        forms, or a begin newer than the end, raises ``ArgumentError``.

        Inserted and updated rows are the end version's rows, told apart by their
        lineage, so they need a dataset created with ``enable_stable_row_ids=True``
        (``ChangeFeedError`` otherwise, where pylance answers no rows); deleted
        row ids need stable row ids at both versions, as in pylance."""
        return dataset_delta(
            self.snapshot,
            compared_against,
            begin_version=begin_version,
            end_version=end_version,
        )

    def changes(
        self,
        start_version: int,
        end_version: int | None = None,
        *,
        columns: Sequence[str] | None = None,
        filter: str | None = None,
        with_row_id: bool = False,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """Every row change committed by versions ``start_version`` through
        ``end_version`` (both inclusive; this dataset's version by default), as
        Delta's change data feed shows them: the rows with ``_change_type``
        (``insert``, ``update_preimage``, ``update_postimage``, ``delete``),
        ``_commit_version`` and ``_commit_timestamp``.

        Needs stable row ids (``enable_stable_row_ids=True`` when the dataset was
        created); raises where the versions' metadata cannot say what changed
        (versions cleaned up, rows without lineage, column data replaced in place)."""
        return change_feed(
            self.snapshot,
            start_version,
            end_version,
            columns=columns,
            filter=filter,
            with_row_id=with_row_id,
            batch_size=batch_size,
        )
