"""DataFusion's scalar SQL functions, as pylance 14 evaluates them in filters and
projections, for :mod:`lancelet.expr.filter`.

:mod:`~lancelet.expr.sql.catalog` lists every scalar function name pylance's
SQL accepts, each either implemented here or refused by name.
:mod:`~lancelet.expr.functions.calls` sends each call to its translation:
:mod:`~lancelet.expr.functions.registry` maps the scalar functions' names to theirs
(one module per domain: conditional, strings, numeric, dates, nested);
:mod:`~.matching`, :mod:`~.membership` and :mod:`~.json_functions` translate the
pattern, list-membership and JSON functions.  Everything here builds on the SQL
language of :mod:`lancelet.expr.sql`, never the other way round.
"""
