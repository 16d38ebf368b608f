"""The names pylance's native module ``lance.lance`` gives that callers import from it
directly."""

from lancelet.dataset.compaction import Compaction
from lancelet.dataset.versions.migration import manifest_needs_migration

__all__ = ["Compaction", "manifest_needs_migration"]
