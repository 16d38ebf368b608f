"""The SQL language beneath the filter translator (:mod:`lancelet.expr.filter`): the
dialect and its parser, the catalogue of function names, the typed values a translation
builds, how literals meet columns and numbers meet numbers, timestamps, casts, and the
Arrow kernels SQL needs that Arrow lacks.

Nothing here knows a function's translation (:mod:`lancelet.expr.functions`) or the
node-class dispatch that joins them (:mod:`lancelet.expr.filter`)."""
