"""The user-facing dataset API, with pylance's names and signatures."""

from lancelet.dataset.api import dataset, write_dataset
from lancelet.dataset.bases import DatasetBasePath
from lancelet.dataset.blob import DEFAULT_BLOB_BUFFER_SIZE, BlobFile
from lancelet.dataset.cleanup import CleanupStats
from lancelet.dataset.compaction import Compaction, CompactionMetrics
from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.fragment import FragmentMetadata, LanceFragment, write_fragments
from lancelet.dataset.index_config import IndexConfig
from lancelet.dataset.index_operation import Index, IndexFile
from lancelet.dataset.merge_insert import MergeInsertBuilder
from lancelet.dataset.operation import LanceOperation
from lancelet.dataset.optimizer import DatasetOptimizer
from lancelet.dataset.ordering import ColumnOrdering
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
from lancelet.dataset.scan_stats import ScanStatistics
from lancelet.dataset.scanner import LanceScanner
from lancelet.dataset.stats import DatasetStats, DataStatistics, FieldStatistics, LanceStats
from lancelet.dataset.tags import Tags
from lancelet.dataset.transactions import (
    LANCE_COMMIT_MESSAGE_KEY,
    AutoCleanupConfig,
    Transaction,
)
from lancelet.dataset.udf import BatchUDF, batch_udf
from lancelet.schema import LanceSchema
from lancelet.table.fragment import DataFile
from lancelet.transaction.session import Session

__all__ = [
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
