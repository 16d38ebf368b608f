"""Small Python data sources that show what Spark does with a source's read, for the
tests: which filters it pushes, and which read plan a later query runs.

Spark pickles these classes by reference, so its Python workers import this module.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator

from pyspark.sql import datasource as sds
from pyspark.sql import types as st


class FilterRecorder(sds.DataSource):
    """Takes the read schema it is given (``.schema(...)``) and yields no rows; its
    reader writes the filters Spark pushes to the file named by option ``out`` and
    leaves every one of them to Spark."""

    @classmethod
    def name(cls) -> str:
        return "lancelet_filter_recorder"

    def reader(self, schema: st.StructType) -> sds.DataSourceReader:
        return _Recording(self.options["out"])


class _Recording(sds.DataSourceReader):
    def __init__(self, out: str) -> None:
        self.out = out

    def pushFilters(self, filters: list[sds.Filter]) -> Iterable[sds.Filter]:
        with open(self.out, "wb") as file:
            pickle.dump(list(filters), file)
        return filters

    def partitions(self) -> list[sds.InputPartition]:
        return []

    def read(self, partition: sds.InputPartition) -> Iterator[tuple[int, ...]]:
        return iter(())


class PushdownProbe(sds.DataSource):
    """Rows ``x`` = 0..9; its reader evaluates pushed ``x > value`` filters itself."""

    @classmethod
    def name(cls) -> str:
        return "lancelet_pushdown_probe"

    def schema(self) -> str:
        return "x int"

    def reader(self, schema: st.StructType) -> sds.DataSourceReader:
        return _Probing()


class _Probing(sds.DataSourceReader):
    def __init__(self) -> None:
        self.above: list[int] = []

    def pushFilters(self, filters: list[sds.Filter]) -> Iterable[sds.Filter]:
        for spark_filter in filters:
            if isinstance(spark_filter, sds.GreaterThan) and spark_filter.attribute == ("x",):
                self.above.append(int(spark_filter.value))
            else:
                yield spark_filter

    def partitions(self) -> list[sds.InputPartition]:
        return [sds.InputPartition(0)]

    def read(self, partition: sds.InputPartition) -> Iterator[tuple[int]]:
        low = max(self.above, default=-1)
        return ((x,) for x in range(10) if x > low)
