"""DataFusion's scalar SQL functions, as pylance 14 evaluates them in filters and
projections, for :mod:`lancelet.expr.filter`.

:mod:`~lancelet.expr.sql.catalog` lists every scalar function name pylance's
SQL accepts, each either implemented here (or in :mod:`lancelet.expr.filter`) or
refused by name; :mod:`~lancelet.expr.functions.registry` maps the implemented
names to their translations.  The package imports nothing at import time, so that the
filter module can read the catalog while it is itself being imported.
"""
