"""Storage access: byte ranges in, whole files out.

The interface is deliberately small (pyiceberg's FileIO is the model): readers
ask for byte ranges of an immutable file, writers stream bytes into a file that
only becomes visible under its final name when it is complete.
"""

from lancelet.io.local import LocalInputFile, LocalOutputFile, open_input, open_output

__all__ = ["LocalInputFile", "LocalOutputFile", "open_input", "open_output"]
