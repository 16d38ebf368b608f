"""pylance's ``lance.udf`` names: functions that compute new columns."""

from lancelet.dataset.mutate.udf import BatchUDF, batch_udf

__all__ = ["BatchUDF", "batch_udf"]
