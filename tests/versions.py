"""The data file format the tests write when they name none, in lancelet and pylance alike.

``make test`` runs the whole suite with the default (2.2, what pylance 14 and lancelet
write when asked for nothing) and the dataset tests again with
``LANCELET_TEST_STORAGE_VERSION=2.0``.
"""

from __future__ import annotations

import os

STORAGE_VERSION = os.environ.get("LANCELET_TEST_STORAGE_VERSION", "2.2")
