"""DataFusion's scalar SQL functions, as pylance 14 evaluates them in filters and
projections, for :mod:`lancelet.dataset.filter`.

:mod:`~lancelet.dataset.sql_scalar.catalog` lists every scalar function name pylance's
SQL accepts, each either implemented here (or in :mod:`lancelet.dataset.filter`) or
refused by name; :mod:`~lancelet.dataset.sql_scalar.registry` maps the implemented
names to their translations.  The package imports nothing at import time, so that the
filter module can read the catalog while it is itself being imported.
"""
