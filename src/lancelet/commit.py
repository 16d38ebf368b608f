"""``lancelet.commit``: pylance's ``lance.commit`` names.

``CommitConflictError`` is the error every lost commit race raises (an ``OSError``);
a custom ``commit_lock`` raises it to refuse a version.
"""

from lancelet.errors import CommitConflictError
from lancelet.transaction.commit import CommitLock

__all__ = ["CommitConflictError", "CommitLock"]
