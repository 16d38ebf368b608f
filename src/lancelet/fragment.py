"""pylance's ``lance.fragment`` names: fragment metadata and distributed writes."""

from lancelet.dataset.fragment import FragmentMetadata, LanceFragment, write_fragments
from lancelet.table.fragment import DataFile, DeletionFile

__all__ = ["DataFile", "DeletionFile", "FragmentMetadata", "LanceFragment", "write_fragments"]
