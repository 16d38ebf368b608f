"""pylance's ``lance.fragment`` names: fragment metadata and distributed writes."""

from lancelet.dataset.core.progress import FragmentWriteProgress, NoopFragmentWriteProgress
from lancelet.dataset.fragment import FragmentMetadata, LanceFragment, write_fragments
from lancelet.dataset.fragment_session import FragmentSession
from lancelet.dataset.mutate.udf import BatchUDF
from lancelet.table.fragment import DataFile, DeletionFile

__all__ = [
    "BatchUDF",
    "DataFile",
    "DeletionFile",
    "FragmentMetadata",
    "FragmentSession",
    "FragmentWriteProgress",
    "LanceFragment",
    "NoopFragmentWriteProgress",
    "write_fragments",
]
