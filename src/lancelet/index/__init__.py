"""Scalar indices and the system indices, on the layouts the specification gives."""

from lancelet.index import external_sort
from lancelet.index.base import ScalarIndex, SearchResult
from lancelet.index.bitmap import BitmapIndex, write_bitmap
from lancelet.index.btree import BTreeIndex, write_btree
from lancelet.index.remapping import DELETED, AddressMapping

__all__ = [
    "DELETED",
    "AddressMapping",
    "BTreeIndex",
    "BitmapIndex",
    "external_sort",
    "ScalarIndex",
    "SearchResult",
    "write_bitmap",
    "write_btree",
]
