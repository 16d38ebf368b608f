"""The user-facing dataset API, with pylance's names and signatures."""

from lancelet.dataset.api import dataset, write_dataset
from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.fragment import FragmentMetadata, LanceFragment, write_fragments
from lancelet.dataset.index_operation import Index, IndexFile
from lancelet.dataset.operation import LanceOperation
from lancelet.dataset.ordering import ColumnOrdering
from lancelet.dataset.scanner import LanceScanner
from lancelet.dataset.transactions import (
    LANCE_COMMIT_MESSAGE_KEY,
    AutoCleanupConfig,
    Transaction,
)

__all__ = [
    "ColumnOrdering",
    "LANCE_COMMIT_MESSAGE_KEY",
    "AutoCleanupConfig",
    "FragmentMetadata",
    "Index",
    "IndexFile",
    "LanceDataset",
    "LanceFragment",
    "LanceOperation",
    "LanceScanner",
    "Transaction",
    "dataset",
    "write_dataset",
    "write_fragments",
]
