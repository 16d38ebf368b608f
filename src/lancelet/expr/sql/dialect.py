"""The SQL dialect of filters and computed values, and its parser.

Generic SQL as sqlglot reads it, with the differences pylance (DataFusion) has: backticks
and double quotes both delimit identifiers, ``X'..'`` is a binary literal, a typed
literal may quote its text with double quotes (``TIMESTAMP "2021-01-02"``), and the
function names of :mod:`lancelet.expr.sql.catalog` are plain calls of the name, so that
each is translated or refused by name.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from lancelet.errors import FilterError
from lancelet.expr.sql import catalog

__all__ = ["FilterDialect", "parse", "sql_text"]


_TYPED_LITERAL_TOKENS = frozenset({TokenType.TIMESTAMP, TokenType.DATE, TokenType.DATETIME})


class FilterDialect(Dialect):
    """Generic SQL in which backticks and double quotes both delimit identifiers."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ['"', "`"]
        # Binary literals, X'0A0B'.
        HEX_STRINGS: ClassVar[list[str | tuple[str, str]]] = [("X'", "'"), ("x'", "'")]

        def tokenize(self, sql: str) -> list[Token]:
            found = super().tokenize(sql)
            # DataFusion reads TIMESTAMP "2021-01-02 00:00:00" (and DATE "...") as the
            # typed literal it reads with single quotes.
            for before, token in itertools.pairwise(found):
                typed = before.token_type in _TYPED_LITERAL_TOKENS
                if typed and token.token_type == TokenType.IDENTIFIER:
                    token.token_type = TokenType.STRING
            return found

    class Parser(parser.Parser):
        # sqlglot reads these names as the functions DataFusion spells array_has_all,
        # array_has_any and make_array; DataFusion does not know them, so they stay
        # unknown functions here too.
        # Other names (pylance's functions, and those it does not know) are plain calls
        # of the name, translated or refused by name
        # (lancelet.expr.functions.calls).
        FUNCTIONS: ClassVar[dict[str, Any]] = {
            name: build
            for name, build in parser.Parser.FUNCTIONS.items()
            if name not in ("ARRAY", "ARRAY_CONTAINS_ALL", "ARRAY_OVERLAPS")
            and name.lower() in catalog.SQLGLOT_CALLS
        }
        # DataFusion's functions that sqlglot reads its own way are plain calls of the name.
        FUNCTION_PARSERS: ClassVar[dict[str, Callable[..., Any]]] = {
            name: parse
            for name, parse in parser.Parser.FUNCTION_PARSERS.items()
            if name not in catalog.PLAIN_CALLS
        }

    class Generator(generator.Generator):
        # Spellings that parse back to the same tree (sqlglot's defaults, ARRAY(1) and
        # l @> ARRAY(1), do not).
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **generator.Generator.TRANSFORMS,
            exp.Array: lambda self, e: f"[{self.expressions(e, flat=True)}]",
            exp.ArrayContains: lambda self, e: self.func("ARRAY_HAS", e.this, e.expression),
            exp.ArrayContainsAll: lambda self, e: self.func("ARRAY_HAS_ALL", e.this, e.expression),
        }


def parse(sql: str) -> exp.Expression:
    if not sql.strip():
        raise FilterError("the filter is empty")
    try:
        tree = sqlglot.parse_one(sql, read=FilterDialect, into=exp.Condition)
    except ParseError as e:
        raise FilterError(f"cannot parse filter {sql!r}: {_describe(e)}") from None
    except TokenError as e:
        raise FilterError(f"cannot parse filter {sql!r}: {e}") from None
    if not isinstance(tree, exp.Expression) or tree.key == "block":
        raise FilterError(f"cannot parse filter {sql!r}: expected a single boolean expression")
    return tree


def _describe(error: ParseError) -> str:
    if not error.errors:
        return str(error)
    first = error.errors[0]
    return f"{first['description']} at column {first['col']} (near {first['highlight']!r})"


def sql_text(node: exp.Expression) -> str:
    return node.sql(dialect=FilterDialect)
