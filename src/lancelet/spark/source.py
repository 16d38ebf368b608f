"""``LanceDataSource``: the ``lance`` format of ``spark.read``, ``df.write`` and
``df.writeStream``."""

from __future__ import annotations

from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.spark.options import read_options, write_options
from lancelet.spark.reader import (
    LanceFilteringReader,
    LanceReader,
    dataset_schema,
    open_dataset,
)
from lancelet.spark.stream import LanceStreamWriter
from lancelet.spark.writer import LanceWriter

FORMAT = "lance"


class LanceDataSource(sds.DataSource):
    """Reads a dataset version as a DataFrame; writes a DataFrame or a stream into one.

    Read options: ``version`` (a number or a tag), ``tag``, ``columns`` (comma-separated
    or a JSON list), ``with_row_id``, ``with_row_address``, ``rows_per_partition``,
    ``batch_size``, ``pushdown`` (evaluate Spark's filters in lancelet; off by default,
    see :class:`~lancelet.spark.reader.LanceFilteringReader`).

    Write options: ``max_rows_per_file``, ``data_storage_version`` and, with Spark's
    append mode, ``write_mode`` (``create``/``errorifexists`` or ``ignore``).
    Streaming: ``checkpointLocation`` (or ``stream_id``).
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> st.StructType:
        options = read_options(self.options)
        return dataset_schema(open_dataset(options), options)

    def reader(self, schema: st.StructType) -> LanceReader:
        options = read_options(self.options)
        kind = LanceFilteringReader if options.pushdown else LanceReader
        return kind(schema, options)

    def writer(self, schema: st.StructType, overwrite: bool) -> LanceWriter:
        return LanceWriter.create(schema, write_options(self.options), overwrite)

    def streamWriter(self, schema: st.StructType, overwrite: bool) -> LanceStreamWriter:
        return LanceStreamWriter(schema, write_options(self.options, streaming=True), overwrite)
