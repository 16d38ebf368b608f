"""SQL queries (``LanceDataset.sql``) as DataFusion runs them: single-table ``SELECT``
statements parsed and checked (:mod:`.statement`), their names bound to the table's
columns (:mod:`.binding`), the result columns named and typed (:mod:`.naming`),
grouped and aggregated (:mod:`.aggregate`), ordered (:mod:`.ordering`) and run over a
:class:`~lancelet.expr.query.execute.QuerySource` (:mod:`.execute`), which the
dataset's query builder provides."""
