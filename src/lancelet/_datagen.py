"""pylance's test-data generator, which lancelet does not have.

pylance generates these batches in its native library, and only when that library
was built with its ``datagen`` feature; a build without it reports so and refuses.
lancelet has no such generator, so it answers as such a build does.
"""

from __future__ import annotations

import pyarrow as pa

from lancelet.errors import UnsupportedFunctionError


def is_datagen_supported() -> bool:
    """Whether :func:`rand_batches` can generate data: never, in lancelet."""
    return False


def rand_batches(
    schema: pa.Schema,
    *,
    num_batches: int | None = None,
    batch_size_bytes: int | None = None,
    rows_per_batch: int | None = None,
) -> pa.RecordBatchReader:
    """Random batches of ``schema`` in pylance; refused here (see the module docstring)."""
    raise UnsupportedFunctionError(
        "lancelet was not built with the datagen feature: it has no random data "
        "generator (pylance's is part of its native library)"
    )
