"""pylance's ``lance.progress`` names: callbacks on the fragments a write produces."""

from lancelet.dataset.core.progress import (
    FileSystemFragmentWriteProgress,
    FragmentWriteProgress,
    IndexProgress,
    NoopFragmentWriteProgress,
)

__all__ = [
    "FileSystemFragmentWriteProgress",
    "FragmentWriteProgress",
    "IndexProgress",
    "NoopFragmentWriteProgress",
]
