"""lancelet: a Python implementation of the Lance columnar format."""

from lancelet import errors, file

__version__ = "0.1.0"

__all__ = ["errors", "file", "__version__"]
