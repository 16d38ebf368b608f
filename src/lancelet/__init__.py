"""lancelet: a Python implementation of the Lance columnar format.

``import lancelet as lance`` gives pylance's names for the calls lancelet
supports: ``write_dataset``, ``dataset``, ``LanceDataset``, ``LanceOperation``,
``LanceFragment`` and ``lancelet.fragment.write_fragments``.
"""

from lancelet import arrow, commit, errors, file, fragment, indices, log, optimize, util
from lancelet._version import __version__
from lancelet.dataset import (
    FragmentMetadata,
    LanceDataset,
    LanceFragment,
    LanceOperation,
    LanceScanner,
    write_dataset,
    write_fragments,
)
from lancelet.dataset import dataset as _open_dataset
from lancelet.dataset.doctor import DoctorReport, Finding, diagnose
from lancelet.dataset.mutate.merge_insert import MergeInsertBuilder
from lancelet.dataset.mutate.udf import batch_udf
from lancelet.dataset.read.blob import BlobColumn, BlobFile
from lancelet.dataset.read.scan_stats import ScanStatistics
from lancelet.dataset.stats import DataStatistics, FieldStatistics
from lancelet.dataset.versions.bases import DatasetBasePath
from lancelet.dataset.versions.cleanup import CleanupStats
from lancelet.dataset.versions.index_operation import Index, IndexFile
from lancelet.dataset.versions.transactions import Transaction
from lancelet.io.counters import bytes_read_counter, iops_counter
from lancelet.log import set_logger
from lancelet.schema import json_to_schema, schema_to_json
from lancelet.transaction.session import Session

# ``lancelet.dataset`` is a subpackage and, as in pylance, also the function that
# opens a dataset; the function wins the attribute, the subpackage stays importable.
dataset = _open_dataset

__all__ = [
    "BlobColumn",
    "BlobFile",
    "CleanupStats",
    "DataStatistics",
    "DatasetBasePath",
    "DoctorReport",
    "FieldStatistics",
    "Finding",
    "FragmentMetadata",
    "Index",
    "IndexFile",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "LanceScanner",
    "MergeInsertBuilder",
    "ScanStatistics",
    "Session",
    "Transaction",
    "__version__",
    "batch_udf",
    "arrow",
    "bytes_read_counter",
    "commit",
    "dataset",
    "diagnose",
    "errors",
    "file",
    "fragment",
    "indices",
    "iops_counter",
    "json_to_schema",
    "log",
    "optimize",
    "schema_to_json",
    "set_logger",
    "util",
    "write_dataset",
    "write_fragments",
]
