"""Spark's static registration of the ``lance`` data source.

Spark (4.0 and later) imports every installed module whose name starts with
``pyspark_`` when a session first needs a Python data source, and registers the
``DefaultSource`` it finds.  So ``spark.read.format("lance")`` works in any session,
on the driver and in threads, without calling ``lancelet.spark.session()``.
"""

from lancelet.spark.source import LanceDataSource as DefaultSource

__all__ = ["DefaultSource"]
