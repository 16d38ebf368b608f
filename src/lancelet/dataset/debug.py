"""Readable texts of a dataset's metadata, for debugging (pylance's ``lance.debug``).

The text is lancelet's own (see :mod:`lancelet.table.debug_text`), laid out as
pylance's is; its field names follow lancelet's metadata, not pylance's.
"""

from __future__ import annotations

from lancelet.dataset.dataset import LanceDataset
from lancelet.errors import ArgumentError, VersionNotFoundError
from lancelet.table.debug_text import describe_fragment_files, render
from lancelet.table.fragment import Fragment


def format_schema(dataset: LanceDataset) -> str:
    """The dataset's schema with its field ids, types and metadata."""
    return render(dataset.snapshot.manifest.schema)


def format_manifest(dataset: LanceDataset) -> str:
    """The whole manifest of the dataset's version."""
    return render(dataset.snapshot.manifest)


def format_fragment(fragment: Fragment, dataset: LanceDataset) -> str:
    """A fragment's metadata, each data file with the fields it holds."""
    if not isinstance(fragment, Fragment):
        raise TypeError(f"format_fragment takes a FragmentMetadata, not {fragment!r}")
    return render(describe_fragment_files(fragment, dataset.snapshot.manifest.schema))


def list_transactions(dataset: LanceDataset, /, max_transactions: int = 10) -> list[str]:
    """The transactions that made the dataset's version and those before it, newest
    first, at most ``max_transactions`` of them.  The list stops at the first version
    that has been cleaned up or has no transaction file."""
    if max_transactions < 0:
        raise ArgumentError(f"max_transactions must not be negative, got {max_transactions}")
    store = dataset.snapshot.store
    texts: list[str] = []
    manifest = dataset.snapshot.manifest
    while len(texts) < max_transactions and manifest.transaction_file:
        texts.append(render(store.read_transaction(manifest.transaction_file)))
        if manifest.version <= 1:
            break
        try:
            manifest = store.read_manifest(manifest.version - 1)
        except VersionNotFoundError:
            break
    return texts
