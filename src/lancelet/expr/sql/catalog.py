"""Every function name pylance 14.0.2's SQL accepts (DataFusion 54.1's functions, Lance's
own and the geometry functions it registers), each implemented by lancelet or refused
by name with a reason.

The names were found by calling each candidate in a pylance filter: a name pylance does
not know fails with "Invalid function"; tests/expr/test_sql_catalog.py checks the list
against pylance.  Names are matched case-insensitively, as pylance matches them.
This module imports nothing from lancelet, so the filter's SQL dialect can read it.
"""

from __future__ import annotations

__all__ = [
    "CLOCK_WORDS",
    "HANDLED_BY_FILTER",
    "IMPLEMENTED",
    "NOT_SCALAR",
    "PLAIN_CALLS",
    "REFUSED",
    "SQLGLOT_CALLS",
    "refusal",
]

# Translated by the filter's own node handlers (lancelet.expr.functions.calls,
# .matching and .membership, for sqlglot's node classes and plain calls): regexp_match/
# like, arrow_cast, the JSON and list-membership functions, current_date and the
# functions the filter has always translated.
HANDLED_BY_FILTER = frozenset(
    {
        "abs",
        "lower",
        "upper",
        "contains",
        "regexp_like",
        "regexp_match",
        "arrow_cast",
        "current_date",
        "array_has",
        "array_contains",
        "list_has",
        "list_contains",
        "array_has_all",
        "list_has_all",
        "array_has_any",
        "list_has_any",
        "arrays_overlap",
        "json_extract",
        "json_exists",
        "json_array_contains",
        "json_array_length",
        "json_get",
        "json_get_string",
        "json_get_int",
        "json_get_float",
        "json_get_bool",
    }
)

# Translated by lancelet.expr.functions.registry.
IMPLEMENTED_HERE = frozenset(
    {
        # conditional
        "coalesce",
        "nullif",
        "nvl",
        "ifnull",
        "nvl2",
        "greatest",
        "least",
        "is_valid",
        # strings
        "concat",
        "concat_ws",
        "starts_with",
        "ends_with",
        "octet_length",
        "bit_length",
        "length",
        "char_length",
        "character_length",
        "left",
        "right",
        "lpad",
        "rpad",
        "ltrim",
        "rtrim",
        "btrim",
        "trim",
        "replace",
        "repeat",
        "reverse",
        "strpos",
        "instr",
        "position",
        "split_part",
        "substr",
        "substring",
        "translate",
        "ascii",
        "chr",
        "to_hex",
        "regexp_replace",
        "regexp_count",
        # numbers
        "round",
        "trunc",
        "floor",
        "ceil",
        "sqrt",
        "power",
        "pow",
        "exp",
        "ln",
        "log",
        "log10",
        "log2",
        "signum",
        "isnan",
        "iszero",
        "nanvl",
        "pi",
        "sin",
        "cos",
        "tan",
        "cot",
        "asin",
        "acos",
        "atan",
        "atan2",
        "asinh",
        "sinh",
        "cosh",
        "tanh",
        "acosh",
        "atanh",
        "degrees",
        "radians",
        "factorial",
        "gcd",
        "lcm",
        # dates and times
        "date_part",
        "datepart",
        "date_trunc",
        "datetrunc",
        "to_date",
        "to_timestamp",
        "to_timestamp_seconds",
        "to_timestamp_millis",
        "to_timestamp_micros",
        "to_timestamp_nanos",
        "from_unixtime",
        "to_unixtime",
        "make_date",
        "now",
        "current_timestamp",
        "current_time",
        "today",
        # structs and lists
        "struct",
        "row",
        "named_struct",
        "get_field",
        "array_length",
        "list_length",
        "cardinality",
        "array_element",
        "array_extract",
        "list_element",
        "list_extract",
        "array_slice",
        "list_slice",
        "array_empty",
        "list_empty",
        "empty",
        "arrow_typeof",
        "make_array",
        "make_list",
        # vectors
        "_cast_list_f16",
    }
)

IMPLEMENTED = HANDLED_BY_FILTER | IMPLEMENTED_HERE


def _words(text: str) -> list[str]:
    return text.split()


_RANDOM = "it returns a new random value on each row (volatile), which lancelet does not reproduce"
_HASH = "pyarrow has no kernel for it, and hashing value by value in Python is not vectorized"
_BYTES = "pyarrow has no base64/hex codec kernel, and encoding value by value is not vectorized"
_NO_KERNEL = "pyarrow has no kernel for it, and lancelet evaluates SQL vectorized"
_FORMAT = "it formats with chrono's format strings, which lancelet does not reproduce"
_LIST = "lancelet does not implement this list function"
_MAP = "lancelet does not support the Arrow map type in SQL"
_META = "it reads or writes Arrow field metadata or casts by type name, which lancelet does not do"
_UNION = "lancelet does not support Arrow union types"
_GEO = "lancelet does not implement Lance's geometry (GeoArrow) functions"
_LANCE = "lancelet does not implement this Lance function"

REFUSED: dict[str, str] = {
    "random": _RANDOM,
    "rand": _RANDOM,
    "uuid": _RANDOM,
    "md5": _HASH,
    "sha224": _HASH,
    "sha256": _HASH,
    "sha384": _HASH,
    "sha512": _HASH,
    "digest": _HASH,
    "encode": _BYTES,
    "decode": _BYTES,
    "cbrt": "pyarrow has no cube root kernel, and numpy's may differ from pylance's libm in "
    "the last bit",
    "levenshtein": _NO_KERNEL,
    "find_in_set": _NO_KERNEL,
    "substr_index": _NO_KERNEL,
    "substring_index": _NO_KERNEL,
    "overlay": _NO_KERNEL,
    "regexp_instr": _NO_KERNEL,
    "initcap": "its word boundaries and case mapping differ from pyarrow's title case",
    "to_char": _FORMAT,
    "date_format": _FORMAT,
    "date_bin": "lancelet does not implement date_bin's interval arithmetic",
    "to_local_time": "lancelet does not implement to_local_time's time-zone conversion",
    "to_time": "lancelet does not implement the time types' parsing",
    "make_time": "lancelet does not implement the time types' construction",
    "version": "it reports DataFusion's version, which lancelet does not have",
    "array_any_value": _LIST,
    "list_any_value": _LIST,
    "array_append": _LIST,
    "list_append": _LIST,
    "array_push_back": _LIST,
    "list_push_back": _LIST,
    "array_prepend": _LIST,
    "list_prepend": _LIST,
    "array_push_front": _LIST,
    "list_push_front": _LIST,
    "array_cat": _LIST,
    "array_concat": _LIST,
    "list_cat": _LIST,
    "list_concat": _LIST,
    "array_compact": _LIST,
    "list_compact": _LIST,
    "array_dims": _LIST,
    "list_dims": _LIST,
    "array_ndims": _LIST,
    "list_ndims": _LIST,
    "array_distance": _LIST,
    "list_distance": _LIST,
    "cosine_distance": _LIST,
    "inner_product": _LIST,
    "dot_product": _LIST,
    "array_normalize": _LIST,
    "list_normalize": _LIST,
    "array_distinct": _LIST,
    "list_distinct": _LIST,
    "array_except": _LIST,
    "list_except": _LIST,
    "array_intersect": _LIST,
    "list_intersect": _LIST,
    "array_union": _LIST,
    "list_union": _LIST,
    "array_filter": _LIST,
    "list_filter": _LIST,
    "array_transform": _LIST,
    "list_transform": _LIST,
    "array_any_match": _LIST,
    "list_any_match": _LIST,
    "any_match": _LIST,
    "array_max": _LIST,
    "list_max": _LIST,
    "array_min": _LIST,
    "array_pop_back": _LIST,
    "list_pop_back": _LIST,
    "array_pop_front": _LIST,
    "list_pop_front": _LIST,
    "array_position": _LIST,
    "list_position": _LIST,
    "array_indexof": _LIST,
    "list_indexof": _LIST,
    "array_positions": _LIST,
    "list_positions": _LIST,
    "array_remove": _LIST,
    "list_remove": _LIST,
    "array_remove_all": _LIST,
    "list_remove_all": _LIST,
    "array_remove_n": _LIST,
    "list_remove_n": _LIST,
    "array_repeat": _LIST,
    "list_repeat": _LIST,
    "array_replace": _LIST,
    "list_replace": _LIST,
    "array_replace_all": _LIST,
    "list_replace_all": _LIST,
    "array_replace_n": _LIST,
    "list_replace_n": _LIST,
    "array_resize": _LIST,
    "list_resize": _LIST,
    "array_reverse": _LIST,
    "list_reverse": _LIST,
    "array_sort": _LIST,
    "list_sort": _LIST,
    "array_to_string": _LIST,
    "array_join": _LIST,
    "list_to_string": _LIST,
    "list_join": _LIST,
    "arrays_zip": _LIST,
    "list_zip": _LIST,
    "flatten": _LIST,
    "range": _LIST,
    "generate_series": _LIST,
    "string_to_array": _LIST,
    "string_to_list": _LIST,
    "unnest": "it makes rows, not values",
    "element_at": _MAP,
    "map": _MAP,
    "make_map": _MAP,
    "map_entries": _MAP,
    "map_extract": _MAP,
    "map_keys": _MAP,
    "map_values": _MAP,
    "arrow_field": _META,
    "arrow_metadata": _META,
    "with_metadata": _META,
    "arrow_try_cast": _META,
    "cast_to_type": _META,
    "try_cast_to_type": _META,
    "union_extract": _UNION,
    "union_tag": _UNION,
    "contains_tokens": _LANCE,
    "json_extract_with_type": _LANCE,
    "box2d": _GEO,
    "box3d": _GEO,
    "geometrytype": _GEO,
    **{
        f"st_{name}": _GEO
        for name in _words(
            "3dmakebox area asbinary astext box2dfromgeohash centroid contains convexhull "
            "coorddim coveredby covers crosses disjoint distance dump endpoint equals geohash "
            "geometryfromtext geometrytype geomfromtext geomfromwkb intersects isclosed "
            "isempty isvalid isvalidreason length m makebox2d makepoint makepointm ndims "
            "npoints numinteriorring numinteriorrings orientedenvelope overlaps point "
            "pointfromgeohash pointm pointonsurface pointz pointzm simplify "
            "simplifypreservetopology simplifyvw startpoint touches within x xmax xmin y "
            "ymax ymin z zmax zmin"
        )
    },
}

# Aggregate functions: pylance knows the names but cannot evaluate them in a filter or
# a projection ("Physical plan does not support logical expression AggregateFunction").
NOT_SCALAR: dict[str, str] = {
    name: "an aggregate function, which pylance's filters and projections cannot evaluate"
    for name in _words(
        "approx_distinct approx_median approx_percentile_cont "
        "approx_percentile_cont_with_weight array_agg avg bit_and bit_or bit_xor bool_and "
        "bool_or corr count covar covar_pop covar_samp first_value grouping last_value max "
        "mean median min nth_value percentile_cont regr_avgx regr_avgy regr_count "
        "regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy st_extent stddev "
        "stddev_pop stddev_samp string_agg sum var var_pop var_population var_samp var_sample"
    )
}

# sqlglot reads many function names into its own node classes, whose argument lists
# differ from DataFusion's, and knows names pylance does not (ucase, len, date_add).
# lancelet's dialect keeps sqlglot's classes only for the pylance functions the filter
# module translates from them (SQLGLOT_CALLS), and sqlglot's special syntaxes
# EXTRACT(.. FROM ..), SUBSTRING(.. FROM .. FOR ..), TRIM(BOTH .. FROM ..) and
# OVERLAY(.. PLACING ..); every other name is a plain call of the name.  Function
# parsers of pylance's names are dropped too (PLAIN_CALLS), except for those syntaxes.
# (POSITION(.. IN ..) reads as a plain call of position whose argument is an IN
# without parentheses.)
SQLGLOT_CALLS = frozenset(
    {
        "abs",
        "lower",
        "upper",
        "contains",
        "regexp_like",
        "array_has",
        "array_contains",
        "array_has_all",
        "json_extract",
        "json_array_contains",
        "current_date",
        "current_time",
        "current_timestamp",
    }
)
_SPECIAL_SYNTAX = frozenset({"substring", "trim", "overlay"})
PLAIN_CALLS = frozenset(
    name.upper()
    for name in (IMPLEMENTED | set(REFUSED) | set(NOT_SCALAR)) - SQLGLOT_CALLS - _SPECIAL_SYNTAX
)


# Words whose presence in a filter means it may read the clock, so that its translation
# must not be cached: current_date, current_time, current_timestamp, now(), today().
CLOCK_WORDS = ("current_date", "current_time", "now", "today")


def refusal(name: str) -> str | None:
    """Why lancelet refuses the function ``name`` (lower case); None if it does not."""
    return REFUSED.get(name) or NOT_SCALAR.get(name)
