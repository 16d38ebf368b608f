"""Debug texts of a dataset's metadata, with pylance's names (``lance.debug``)."""

from lancelet.dataset.debug import (
    format_fragment,
    format_manifest,
    format_schema,
    list_transactions,
)

__all__ = ["format_fragment", "format_manifest", "format_schema", "list_transactions"]
