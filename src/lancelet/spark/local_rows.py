"""A read's few rows, answered while Spark plans the query.

A selective filter (a key, a narrow range) keeps a handful of rows, and a pushed
aggregate's partitions answer a row per group, yet Spark runs a task per partition
for them, and starting Python tasks costs a tenth of a second whatever they read.
When the JVM bridge asks for it (``lancelet.local`` on the read schema's fields: at
most that many rows), the planning reader reads its partitions itself, through the
very code a task runs, and if the rows stay few it returns them as the read's only
partition, a :class:`LocalRows`; the bridge hands them to Spark as the scan's rows and
no task runs (``LocalRowsScan`` in ``java/``).  Once the rows or their bytes pass the
limit, or when the columns read whole are too large to read on the driver, the plan
is the tasks' as before.  Without the bridge nothing asks for it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator

import pyarrow as pa
from pyspark.sql import datasource as sds

# The Arrow bytes of the rows a plan may carry, and the bytes of the tested columns
# the driver may read to find them (a larger read is the tasks' to share).
LOCAL_BYTES = 8 << 20
TESTED_BYTES = 64 << 20


class LocalRows(sds.InputPartition):
    """A read's rows found while it was planned, as an Arrow IPC stream."""

    def __init__(self, stream: bytes) -> None:
        super().__init__(len(stream))
        self.stream = stream

    def __reduce__(self) -> tuple[type[LocalRows], tuple[bytes]]:
        # The bridge reads the rows from the pickled partition while Spark plans the
        # query (``ReadPlan.localRows``): a call of this class with the stream's bytes.
        return LocalRows, (self.stream,)

    @classmethod
    def of(cls, table: pa.Table) -> LocalRows:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as stream:
            stream.write_table(table)
        return cls(sink.getvalue().to_pybytes())

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows, as a task reads them where the bridge did not take them."""
        return iter(pa.ipc.open_stream(self.stream).read_all().to_batches())


def answered_locally(
    read: Callable[[sds.InputPartition], Iterator[pa.RecordBatch]],
    partitions: Iterable[sds.InputPartition],
    schema: pa.Schema,
    max_rows: int,
    key: Hashable | None,
) -> LocalRows | None:
    """All rows ``read`` gives for ``partitions`` (batches of ``schema``) as one
    :class:`LocalRows`, or None once they pass ``max_rows`` rows or
    :data:`LOCAL_BYTES` bytes (reading stops there).

    ``key`` names the read's rows (dataset version, filters, limits), whatever its
    columns: Spark plans a filtered query twice, first reading every column (to learn
    which filters the reader takes) and then only those the query needs, so the answer
    of the first is kept here, in the planning process, and the second takes its
    columns from it.  None: nothing kept."""
    known = None if key is None else _ANSWERS.get(key)
    if known is _TOO_MANY:
        return None
    if isinstance(known, pa.Table) and _holds(known.schema, schema):
        return LocalRows.of(known.select(schema.names))
    batches: list[pa.RecordBatch] = []
    rows = size = 0
    for partition in partitions:
        for batch in read(partition):
            rows, size = rows + batch.num_rows, size + batch.nbytes
            if rows > max_rows:
                _remember(key, _TOO_MANY)
                return None
            if size > LOCAL_BYTES:
                return None
            batches.append(batch)
    table = pa.Table.from_batches(batches, schema)
    _remember(key, table)
    return LocalRows.of(table)


def _holds(have: pa.Schema, wanted: pa.Schema) -> bool:
    """Every column of ``wanted`` is one of ``have``'s, of the same type."""
    names = have.names
    return len(set(wanted.names)) == len(wanted.names) and all(
        names.count(f.name) == 1 and have.field(f.name).type == f.type for f in wanted
    )


# The last answers of this process: a table, or _TOO_MANY when the rows passed the
# limit (they do whichever columns are read).
_TOO_MANY = object()
_ANSWERS: OrderedDict[Hashable, object] = OrderedDict()
_KEPT = 8


def _remember(key: Hashable | None, answer: object) -> None:
    if key is None:
        return
    _ANSWERS[key] = answer
    _ANSWERS.move_to_end(key)
    while len(_ANSWERS) > _KEPT:
        _ANSWERS.popitem(last=False)
