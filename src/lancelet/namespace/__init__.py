"""pylance's ``lance.namespace``: Lance namespaces (catalogs of tables) for lancelet.

Needs the ``lance-namespace`` package (``pip install lancelet[namespace]``);
``import lancelet`` does not import this module.
"""

try:
    import lance_namespace  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "lancelet.namespace needs the lance-namespace package: pip install 'lancelet[namespace]'"
    ) from exc

from lancelet.namespace.directory import DirectoryNamespace
from lancelet.namespace.rest_client import RestNamespace
from lancelet.namespace.rest_server import RestAdapter

__all__ = ["DirectoryNamespace", "RestAdapter", "RestNamespace"]
