"""DataFusion's string functions, as pylance evaluates them.

Characters are Unicode code points (not grapheme clusters), as in pylance.  The
arguments other than the string itself (a length, a pattern, a padding) must be
literals: pyarrow's kernels take them as options.  Where pylance returns Arrow's
``string_view`` type (``left``, ``right``, ``substr``, ``concat`` of mixed string
types), so does a projection whose whole expression is the call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.expr.functions import regexps, text_kernels
from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_integer,
    is_null,
    is_string,
    null,
    vectorized,
)
from lancelet.expr.sql import kernels

__all__ = ["FUNCTIONS", "text"]

# lpad/rpad with a padding of several characters build every prefix of the padding up
# to the width; a wider pad is refused rather than built.
_MAX_MULTI_CHARACTER_PAD = 4096
_LARGE_EMPTY = const(pa.scalar("", pa.large_string()))


def text(call: Call, index: int, what: str = "string") -> Value:
    """Argument ``index``, a string (or NULL)."""
    value = call.value(index)
    if not (is_string(value.type) or is_null(value.type)):
        raise call.error(f"the {what} must be a string, not {value.type}")
    return value


def _null_of(subject: Value) -> Value:
    return null(subject.type if is_string(subject.type) else pa.string())


def _keep(call: Call, value: Value) -> Value:
    """The result of a function that keeps its string's type: string_view in pylance
    when the string is, or is a NULL literal."""
    return call.text_result(value, call.arg_is_view(0) or is_null(call.value(0).type))


def _subject(call: Call) -> Value | None:
    """The string argument, or None when it is a NULL literal."""
    subject = text(call, 0)
    return None if is_null(subject.type) else subject


# --- concatenation -----------------------------------------------------------------


def _as_text(call: Call, value: Value) -> Value:
    """An argument of concat as the text pylance makes of it (NULL stays NULL)."""
    dtype = value.type
    if is_string(dtype) or is_null(dtype):
        return value
    if is_integer(dtype) or pa.types.is_boolean(dtype) or pa.types.is_date32(dtype):
        return cast(value, pa.string(), call.node)
    if pa.types.is_decimal128(dtype) and dtype.scale >= 0:
        return cast(value, pa.string(), call.node)
    raise call.error(f"lancelet does not convert {dtype} values to text as pylance does")


def _concat_type(values: list[Value]) -> pa.DataType:
    """pylance's type for concat/concat_ws: the arguments' string type if they share
    one (integers and the like count as ``string``), else string_view."""
    kinds = {
        "null" if is_null(v.type) else ("large" if pa.types.is_large_string(v.type) else "utf8")
        for v in values
    }
    if kinds == {"utf8"}:
        return pa.string()
    if kinds == {"large"}:
        return pa.large_string()
    return pa.string_view()


def _finish(call: Call, joined: Value, dtype: pa.DataType) -> Value:
    if pa.types.is_string_view(dtype) or call.arg_is_view(*range(len(call.args))):
        return call.as_view(cast(joined, pa.string(), call.node))
    return cast(joined, dtype, call.node)


def _wide(call: Call, value: Value) -> Value:
    return cast(value, pa.large_string(), call.node)


def concat(call: Call) -> Value:
    """``concat(a, ...)``: the arguments' text joined, NULLs read as ''."""
    call.arity(1, 1 << 16)
    values = [_as_text(call, v) for v in call.values()]
    parts = [
        apply(pc.coalesce, [_wide(call, v), _LARGE_EMPTY], call.node)
        for v in values
        if not is_null(v.type)
    ]
    if len(parts) > 1:
        joined = apply(pc.binary_join_element_wise, [*parts, _LARGE_EMPTY], call.node)
    else:
        joined = parts[0] if parts else _LARGE_EMPTY
    return _finish(call, joined, _concat_type(values))


def concat_ws(call: Call) -> Value:
    """``concat_ws(sep, a, ...)``: the arguments that are not NULL joined by ``sep``;
    NULL where ``sep`` is."""
    call.arity(2, 1 << 16)
    values = [_as_text(call, v) for v in call.values()]
    dtype = _concat_type(values)
    separator, parts = values[0], [v for v in values[1:] if not is_null(v.type)]
    if is_null(separator.type):
        return null(pa.string() if pa.types.is_string_view(dtype) else dtype)
    sep = _wide(call, separator)
    # pyarrow's binary_join_element_wise with null_handling="skip" loses rows; the
    # parts present are joined one by one instead.
    joined, started = _LARGE_EMPTY, const(pa.scalar(False))
    for part in (_wide(call, v) for v in parts):
        present = apply(pc.is_valid, [part], call.node)
        appended = apply(pc.binary_join_element_wise, [joined, part, sep], call.node)
        longer = apply(pc.if_else, [started, appended, part], call.node)
        joined = apply(pc.if_else, [present, longer, joined], call.node)
        started = apply(pc.or_kleene, [started, present], call.node)
    with_separator = apply(pc.is_valid, [sep], call.node)
    joined = apply(pc.if_else, [with_separator, joined, null(pa.large_string())], call.node)
    return _finish(call, joined, dtype)


# --- tests and lengths -------------------------------------------------------------


def _affix_test(kernel: Callable[..., pc.Expression]) -> Callable[[Call], Value]:
    def test(call: Call) -> Value:
        """``starts_with(s, prefix)`` / ``ends_with(s, suffix)``."""
        call.arity(2)
        subject, affix = _subject(call), call.str_literal(1, "prefix or suffix")
        if subject is None or affix is None:
            return null(pa.bool_())
        return apply(kernel, [subject], call.node, pattern=affix)

    return test


def _length(kernel: Callable[..., pc.Expression], factor: int = 1) -> Callable[[Call], Value]:
    def length(call: Call) -> Value:
        call.arity(1)
        subject = _subject(call)
        if subject is None:
            return null(pa.int32())
        counted = apply(kernel, [subject], call.node)
        if factor == 1:
            return counted
        return apply(
            pc.multiply_checked, [counted, const(pa.scalar(factor, counted.type))], call.node
        )

    return length


# --- slicing -------------------------------------------------------------------------


def _slice(call: Call, subject: Value, start: int, stop: int | None) -> Value:
    if stop is not None and stop <= start and start >= 0 and stop >= 0:
        empty = const(pa.scalar("", subject.type))
        return apply(
            pc.if_else, [apply(pc.is_valid, [subject], call.node), empty, subject], call.node
        )
    return apply(pc.utf8_slice_codeunits, [subject], call.node, start=start, stop=stop)


def left(call: Call) -> Value:
    """``left(s, n)``: the first ``n`` characters; all but the last ``-n`` when ``n`` < 0."""
    call.arity(2)
    subject, count = _subject(call), call.int_literal(1, "length")
    if subject is None or count is None:
        return call.as_view(_null_of(text(call, 0)))
    return call.as_view(_slice(call, subject, 0, count))


def right(call: Call) -> Value:
    """``right(s, n)``: the last ``n`` characters; all but the first ``-n`` when ``n`` < 0."""
    call.arity(2)
    subject, count = _subject(call), call.int_literal(1, "length")
    if subject is None or count is None:
        return call.as_view(_null_of(text(call, 0)))
    if count == 0:
        return call.as_view(_slice(call, subject, 0, 0))
    return call.as_view(_slice(call, subject, -count, None))


def substr(call: Call) -> Value:
    """``substr(s, start[, length])``: characters from the 1-based ``start``; a start
    before 1 counts against ``length``, as in pylance."""
    call.arity(2, 3)
    subject = _subject(call)
    start = call.int_literal(1, "start position")
    length = call.int_literal(2, "length") if len(call.args) == 3 else -1
    if subject is None or start is None or length is None:
        return call.as_view(_null_of(text(call, 0)))
    if len(call.args) == 3 and length < 0:
        raise call.error(f"negative count not allowed: {length}")
    begin = max(start, 1) - 1
    stop = None if len(call.args) == 2 else max(start + length - 1, begin)
    return call.as_view(_slice(call, subject, begin, stop))


# --- padding and trimming ------------------------------------------------------------


def _pad(left_side: bool) -> Callable[[Call], Value]:
    def pad(call: Call) -> Value:
        """``lpad(s, n[, fill])`` / ``rpad``: ``s`` cut or padded with ``fill`` (a space by
        default) to ``n`` characters."""
        call.arity(2, 3)
        subject, width = _subject(call), call.int_literal(1, "length")
        fill = call.str_literal(2, "padding") if len(call.args) == 3 else " "
        if subject is None or width is None or fill is None:
            return _null_of(text(call, 0))
        cut = _slice(call, subject, 0, max(width, 0))
        if fill == "" or width <= 0:
            return cut
        if len(fill) == 1:
            kernel = pc.utf8_lpad if left_side else pc.utf8_rpad
            return apply(kernel, [cut], call.node, width=width, padding=fill)
        if width > _MAX_MULTI_CHARACTER_PAD:
            raise call.error(
                f"lancelet pads with several characters to at most "
                f"{_MAX_MULTI_CHARACTER_PAD} characters, not {width}"
            )
        kernel = _pad_left if left_side else _pad_right
        params = [pa.scalar(width, pa.int64()), pa.scalar(fill, pa.string())]
        return vectorized(call, kernel, [cut], params, cut.type)

    return pad


@functools.lru_cache(maxsize=16)
def _pad_prefixes(fill: str, width: int, dtype: pa.DataType) -> pa.Array:
    pattern = (fill * (width // len(fill) + 1))[:width]
    return pa.array([pattern[:k] for k in range(width + 1)], dtype)


def _padding(strings: pa.Array, width: int, fill: str) -> pa.Array:
    missing = pc.max_element_wise(
        pc.subtract(pa.scalar(width, pa.int64()), pc.utf8_length(strings).cast(pa.int64())),
        pa.scalar(0, pa.int64()),
    )
    return _pad_prefixes(fill, width, strings.type).take(missing)


def _pad_left(strings: pa.Array, width: int, fill: str) -> pa.Array:
    """lpad with a padding of several characters (strings no longer than ``width``)."""
    empty = pa.scalar("", strings.type)
    return pc.binary_join_element_wise(_padding(strings, width, fill), strings, empty)


def _pad_right(strings: pa.Array, width: int, fill: str) -> pa.Array:
    """rpad with a padding of several characters (strings no longer than ``width``)."""
    empty = pa.scalar("", strings.type)
    return pc.binary_join_element_wise(strings, _padding(strings, width, fill), empty)


def _trim(kernel: Callable[..., pc.Expression]) -> Callable[[Call], Value]:
    def trim(call: Call) -> Value:
        """``btrim(s[, chars])`` (ltrim, rtrim): the characters in ``chars`` (a space by
        default) cut from both ends (the start, the end)."""
        call.arity(1, 2)
        subject = _subject(call)
        characters = call.str_literal(1, "characters to trim") if len(call.args) == 2 else " "
        if subject is None or characters is None:
            return _keep(call, _null_of(text(call, 0)))
        if characters == "":
            return _keep(call, subject)
        return _keep(call, apply(kernel, [subject], call.node, characters=characters))

    return trim


# --- replacing ---------------------------------------------------------------------------


def replace(call: Call) -> Value:
    """``replace(s, from, to)``: every ``from`` in ``s`` replaced by ``to`` (an empty
    ``from`` inserts ``to`` between the characters and at both ends)."""
    call.arity(3)
    subject = _subject(call)
    source = call.str_literal(1, "text to replace")
    target = call.str_literal(2, "replacement")
    if subject is None or source is None or target is None:
        return _null_of(text(call, 0))
    if source == "":
        escaped = target.replace("\\", "\\\\")
        return apply(
            pc.replace_substring_regex, [subject], call.node, pattern="", replacement=escaped
        )
    return apply(pc.replace_substring, [subject], call.node, pattern=source, replacement=target)


def repeat(call: Call) -> Value:
    """``repeat(s, n)``: ``s`` ``n`` times ('' for ``n`` <= 0)."""
    call.arity(2)
    subject, times = _subject(call), call.value(1)
    if subject is None or is_null(times.type):
        return _keep(call, _null_of(text(call, 0)))
    if not is_integer(times.type):
        raise call.error(f"the count must be an integer, not {times.type}")
    times = cast(times, pa.int64(), call.node)
    zero = const(pa.scalar(0, pa.int64()))
    count = apply(pc.max_element_wise, [times, zero], call.node)
    return _keep(call, apply(pc.binary_repeat, [subject, count], call.node))


def reverse(call: Call) -> Value:
    call.arity(1)
    subject = _subject(call)
    if subject is None:
        return _keep(call, _null_of(text(call, 0)))
    return _keep(call, apply(pc.utf8_reverse, [subject], call.node))


def translate(call: Call) -> Value:
    """``translate(s, from, to)``: each character of ``from`` replaced by the one at the
    same place in ``to``, or removed where ``to`` is shorter."""
    call.arity(3)
    subject = _subject(call)
    source = call.str_literal(1, "characters to replace")
    target = call.str_literal(2, "replacements")
    if subject is None or source is None or target is None:
        return _keep(call, _null_of(text(call, 0)))
    params = [pa.scalar(source, pa.string()), pa.scalar(target, pa.string())]
    return _keep(call, vectorized(call, _translate, [subject], params, subject.type))


def _translate(strings: pa.Array, source: str, target: str) -> pa.Array:
    """translate's characters replaced or removed."""
    return text_kernels.translate_strings(strings, source, target)


# --- searching -------------------------------------------------------------------------


def strpos(call: Call) -> Value:
    """``strpos(s, sub)`` (``instr``, ``position``): the 1-based character position of
    the first ``sub`` in ``s``, 0 when there is none."""
    call.arity(2)
    return _position(call, _subject(call), call.str_literal(1, "text to look for"))


def position(call: Call) -> Value:
    """``position(s, sub)``, and ``position(sub IN s)``, as ``strpos(s, sub)``."""
    if len(call.args) == 1 and isinstance(call.args[0], exp.In) and call.args[0].args.get("field"):
        within = exp.Paren(this=call.args[0].args["field"])
        call = Call(call.translator, call.node, call.name, [within, call.args[0].this])
    return strpos(call)


def _position(call: Call, subject: Value | None, needle: str | None) -> Value:
    if subject is None or needle is None:
        return null(
            pa.int64()
            if subject is not None and pa.types.is_large_string(subject.type)
            else pa.int32()
        )
    counted = pc.utf8_length(pa.array([], subject.type)).type
    if needle == "":
        one = const(pa.scalar(1, counted))
        return apply(
            pc.if_else, [apply(pc.is_valid, [subject], call.node), one, null(counted)], call.node
        )
    parts = apply(pc.split_pattern, [subject], call.node, pattern=needle, max_splits=1)
    count = apply(pc.list_value_length, [parts], call.node)
    found = apply(pc.equal, [count, const(pa.scalar(2, count.type))], call.node)
    before = _list_item(parts, 1)
    at = apply(
        pc.add,
        [apply(pc.utf8_length, [before], call.node), const(pa.scalar(1, counted))],
        call.node,
    )
    return apply(pc.if_else, [found, at, const(pa.scalar(0, counted))], call.node)


def _list_item(lists: Value, index: int) -> Value:
    """Item ``index`` (1-based, negative from the end) of each list, NULL where none."""
    if lists.const is not None:
        return const(kernels.list_item(pa.array([lists.const.as_py()], lists.type), index)[0])
    return Value(kernels.list_item_expr(lists.expr, lists.type, index), lists.type.value_type)


def split_part(call: Call) -> Value:
    """``split_part(s, delimiter, n)``: the ``n``-th part (from the end when negative) of
    ``s`` split at ``delimiter``, '' when there is none."""
    call.arity(3)
    subject = _subject(call)
    delimiter = call.str_literal(1, "delimiter")
    index = call.int_literal(2, "part number")
    if subject is None or delimiter is None or index is None:
        return _keep(call, _null_of(text(call, 0)))
    if index == 0:
        raise call.error("field position must not be zero")
    if delimiter == "":
        # The whole string is the only part.
        return _keep(call, subject if index in (1, -1) else _slice(call, subject, 0, 0))
    parts = apply(pc.split_pattern, [subject], call.node, pattern=delimiter)
    part = apply(pc.coalesce, [_list_item(parts, index), _slice(call, subject, 0, 0)], call.node)
    return _keep(call, part)


# --- code points and numbers as text -------------------------------------------------


def ascii_code(call: Call) -> Value:
    """``ascii(s)``: the code point of the first character (0 for '')."""
    call.arity(1)
    subject = _subject(call)
    if subject is None:
        return null(pa.int32())
    return vectorized(call, _ascii, [subject], [], pa.int32())


def _ascii(strings: pa.Array) -> pa.Array:
    """The first character's code point."""
    return text_kernels.ascii_codes(strings)


def chr_text(call: Call) -> Value:
    """``chr(n)``: the character whose code point is ``n``."""
    call.arity(1)
    code = call.value(0)
    if is_null(code.type):
        return null(pa.string())
    if not is_integer(code.type):
        raise call.error(f"the code point must be an integer, not {code.type}")
    return vectorized(call, _chr, [cast(code, pa.int64(), call.node)], [], pa.string())


def _chr(codes: pa.Array) -> pa.Array:
    """The character of a code point."""
    return text_kernels.chr_strings(codes)


def to_hex(call: Call) -> Value:
    """``to_hex(n)``: ``n`` in hexadecimal (negative: 64-bit two's complement)."""
    call.arity(1)
    number = call.value(0)
    if is_null(number.type):
        return null(pa.string())
    if not is_integer(number.type):
        raise call.error(f"the number must be an integer, not {number.type}")
    if number.type == pa.uint64():
        raise call.error("lancelet takes to_hex of signed integers and uint8 to uint32 only")
    return vectorized(call, _hex, [cast(number, pa.int64(), call.node)], [], pa.string())


def _hex(numbers: pa.Array) -> pa.Array:
    """An integer in hexadecimal."""
    return text_kernels.hex_strings(numbers)


FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    "concat": concat,
    "concat_ws": concat_ws,
    "starts_with": _affix_test(pc.starts_with),
    "ends_with": _affix_test(pc.ends_with),
    "octet_length": _length(pc.binary_length),
    "bit_length": _length(pc.binary_length, 8),
    "length": _length(pc.utf8_length),
    "char_length": _length(pc.utf8_length),
    "character_length": _length(pc.utf8_length),
    "left": left,
    "right": right,
    "substr": substr,
    "substring": substr,
    "lpad": _pad(left_side=True),
    "rpad": _pad(left_side=False),
    "ltrim": _trim(pc.utf8_ltrim),
    "rtrim": _trim(pc.utf8_rtrim),
    "btrim": _trim(pc.utf8_trim),
    "trim": _trim(pc.utf8_trim),
    "replace": replace,
    "repeat": repeat,
    "reverse": reverse,
    "translate": translate,
    "strpos": strpos,
    "instr": strpos,
    "position": position,
    "split_part": split_part,
    "ascii": ascii_code,
    "chr": chr_text,
    "to_hex": to_hex,
    "regexp_replace": regexps.regexp_replace,
    "regexp_count": regexps.regexp_count,
}
