"""Scalar indices and the system indices, on the layouts the specification gives."""
