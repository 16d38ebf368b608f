"""The user-facing dataset API, with pylance's names and signatures."""

from lancelet.dataset.api import dataset, write_dataset
from lancelet.dataset.changefeed.delta import DatasetDelta
from lancelet.dataset.compaction import Compaction, CompactionMetrics
from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.fragment import FragmentMetadata, LanceFragment, write_fragments
from lancelet.dataset.indices.config import IndexConfig
from lancelet.dataset.mutate.merge_insert import MergeInsertBuilder
from lancelet.dataset.mutate.udf import BatchUDF, batch_udf
from lancelet.dataset.optimizer import DatasetOptimizer
from lancelet.dataset.read.blob import DEFAULT_BLOB_BUFFER_SIZE, BlobFile
from lancelet.dataset.read.ordering import ColumnOrdering
from lancelet.dataset.read.scan_stats import ScanStatistics
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.dataset.result_types import (
    AlterColumn,
    BulkCommitResult,
    DeleteResult,
    ExecuteResult,
    IndexInformation,
    Tag,
    UpdateResult,
    Version,
    VersionRef,
)
from lancelet.dataset.stats import DatasetStats, DataStatistics, FieldStatistics, LanceStats
from lancelet.dataset.vector_index_reader import VectorIndexReader
from lancelet.dataset.versions.auto_cleanup import AutoCleanupConfig
from lancelet.dataset.versions.bases import DatasetBasePath
from lancelet.dataset.versions.cleanup import CleanupStats
from lancelet.dataset.versions.index_operation import Index, IndexFile
from lancelet.dataset.versions.operation import LanceOperation
from lancelet.dataset.versions.tags import Tags
from lancelet.dataset.versions.transactions import (
    LANCE_COMMIT_MESSAGE_KEY,
    Transaction,
)
from lancelet.schema import LanceSchema
from lancelet.table.fragment import DataFile
from lancelet.transaction.session import Session

__all__ = [
    "VectorIndexReader",
    "DEFAULT_BLOB_BUFFER_SIZE",
    "LANCE_COMMIT_MESSAGE_KEY",
    "AlterColumn",
    "AutoCleanupConfig",
    "BatchUDF",
    "BlobFile",
    "BulkCommitResult",
    "CleanupStats",
    "Compaction",
    "CompactionMetrics",
    "ColumnOrdering",
    "DataFile",
    "DataStatistics",
    "DatasetBasePath",
    "DatasetDelta",
    "DatasetOptimizer",
    "DatasetStats",
    "DeleteResult",
    "ExecuteResult",
    "FieldStatistics",
    "FragmentMetadata",
    "Index",
    "IndexConfig",
    "IndexFile",
    "IndexInformation",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "LanceSchema",
    "LanceScanner",
    "LanceStats",
    "MergeInsertBuilder",
    "ScanStatistics",
    "Session",
    "Tag",
    "Tags",
    "Transaction",
    "UpdateResult",
    "Version",
    "VersionRef",
    "batch_udf",
    "dataset",
    "write_dataset",
    "write_fragments",
]
