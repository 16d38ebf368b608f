"""A fragment's rows with the row id and row address pylance names ``_rowid`` and
``_rowaddr``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet.dataset.fragment_reader import FragmentReader
from lancelet.dataset.projection import ROW_ADDRESS, ROW_ID
from lancelet.table import row_address


def with_row_columns(reader: FragmentReader, table: pa.Table, offsets: np.ndarray) -> pa.Table:
    """``table``, the given physical rows of a fragment, with their id and address."""
    address = row_address.of_offsets(reader.fragment.id, offsets)
    ids = reader.row_ids
    row_id = address if ids is None else ids[offsets]
    return table.append_column(ROW_ID, pa.array(row_id)).append_column(
        ROW_ADDRESS, pa.array(address)
    )
