"""Computing named Arrow expressions over the rows of a table, as a projection, an
update, a new column or a SQL query's select list computes them."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds

from lancelet.errors import FilterError

__all__ = ["evaluate"]


def evaluate(table: pa.Table, expressions: Mapping[str, pc.Expression], where: str) -> pa.Table:
    """One column per expression, computed over ``table``'s rows."""
    try:
        return pds.dataset(table).to_table(columns=dict(expressions))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise FilterError(f"{where}: cannot compute {list(expressions)}: {exc}") from exc
