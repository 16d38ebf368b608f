"""The ``lancelet`` command: look at, check and maintain datasets from a shell.

It sits on the public API only (``lancelet.dataset`` and the dataset's methods), so
everything it does a script can do too.  Each command lives in its own module here
and is listed once in :mod:`lancelet.cli.main`.
"""
