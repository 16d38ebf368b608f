"""Changing rows and columns of a version: delete, update, merge_insert, merge,
schema evolution (add, drop, alter columns) and the per-fragment column writes
behind them, with the batch UDFs that compute new columns."""
