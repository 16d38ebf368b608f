"""What the running Spark does with a Python data source's read, where the ``lance``
source depends on it.

Spark plans a Python source's read in a Python worker: it calls ``reader()``,
``pushFilters()`` (when the query has filters Spark can hand over) and
``partitions()``, then keeps the pickled reader and partitions.  Spark 4.x keeps them
on the DataFrame's relation (``PythonDataSourceV2``), not on the query's scan: a query
that pushes no filter runs the read kept there, which is the one the last query with
pushable filters planned, so a filter one query pushed drops rows from later ones.
Spark 5 keeps a read planned with pushed filters on that query's scan (SPARK-58551,
the change that added ``DataSourceReader.pushLimit``).
"""

from __future__ import annotations

from pyspark.sql import datasource as sds

# Whether a read planned with pushed filters serves only the query that pushed them.
PUSHED_READ_PER_QUERY: bool = hasattr(sds.DataSourceReader, "pushLimit")
