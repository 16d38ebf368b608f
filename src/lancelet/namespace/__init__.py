"""pylance's ``lance.namespace``: Lance namespaces (catalogs of tables) for lancelet.

Needs the ``lance-namespace`` package (``pip install lancelet[namespace]``);
``import lancelet`` does not import this module.
"""

from lancelet.namespace.directory import DirectoryNamespace
from lancelet.namespace.rest_client import RestNamespace
from lancelet.namespace.rest_server import RestAdapter

__all__ = ["DirectoryNamespace", "RestAdapter", "RestNamespace"]
