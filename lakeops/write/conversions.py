"""Which input types a write converts to a column's type by itself, and which it refuses.

lakeops converts only where the value cannot change and nothing has to be guessed; Arrow's safe
cast then still refuses any value that does not fit (an overflowing integer, 3.5 into INT, an
integer beyond 2**53 into DOUBLE). Everything else is a :class:`DataValidationError` naming the
column, both types and the explicit cast that makes the intent clear:

========================== ===================================================================
input                      converted into
========================== ===================================================================
integer                    any integer, floating-point or DECIMAL column (value checked)
floating point             a floating-point column at least as wide; integer or DECIMAL
                           columns when the value is exact (3.0, not 3.5)
DECIMAL                    DECIMAL (no rounding) and integer columns (value checked)
string                     STRING / VARCHAR / CHAR and BYTES columns (its UTF-8 bytes)
binary                     BYTES / BINARY columns
boolean, date, time        the same kind (a time or date unit change, value checked)
timestamp without zone     TIMESTAMP (another unit, value checked)
timestamp with a zone      TIMESTAMP WITH LOCAL TIME ZONE (the same instant)
null (no type)             any nullable column
list / map / struct        the same shape, element by element by these rules
========================== ===================================================================

Refused (an explicit cast states the intent; Spark's default ANSI store assignment refuses
text into numbers too): text parsed into numbers, dates or timestamps (``"12"`` into an INT
key), numbers or booleans turned into text, DECIMAL or DOUBLE narrowed to a smaller floating
type (rounding), a date widened to a timestamp, and time-zone changes: a time-zone-aware
timestamp into TIMESTAMP (without time zone) would drop its zone, a time-zone-naive one into
TIMESTAMP WITH LOCAL TIME ZONE would have to guess one.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.types as pat

from lakeops.errors import DataValidationError

__all__ = ["check_conversion"]


def _kind(t: pa.DataType) -> str:
    if pat.is_null(t):
        return "null"
    if pat.is_boolean(t):
        return "boolean"
    if pat.is_integer(t):
        return "integer"
    if pat.is_floating(t):
        return "floating"
    if pat.is_decimal(t):
        return "decimal"
    if pat.is_string(t) or pat.is_large_string(t) or getattr(pat, "is_string_view", _no)(t):
        return "string"
    if (
        pat.is_binary(t)
        or pat.is_large_binary(t)
        or pat.is_fixed_size_binary(t)
        or getattr(pat, "is_binary_view", _no)(t)
    ):
        return "binary"
    if pat.is_date(t):
        return "date"
    if pat.is_time(t):
        return "time"
    if pat.is_timestamp(t):
        return "timestamp"
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t):
        return "list"
    if pat.is_map(t):
        return "map"
    if pat.is_struct(t):
        return "struct"
    return str(t)


def _no(_: pa.DataType) -> bool:
    return False


#: (input kind, column kind) pairs converted without a word (values still checked)
_ALLOWED = {
    ("integer", "integer"),
    ("integer", "floating"),
    ("integer", "decimal"),
    ("floating", "floating"),
    ("floating", "integer"),
    ("floating", "decimal"),
    ("decimal", "decimal"),
    ("decimal", "integer"),
    ("string", "string"),
    ("string", "binary"),
    ("binary", "binary"),
    ("boolean", "boolean"),
    ("date", "date"),
    ("time", "time"),
    ("timestamp", "timestamp"),
    ("list", "list"),
    ("map", "map"),
    ("struct", "struct"),
}


def _refusal(source: pa.DataType, target: pa.DataType) -> str | None:
    """Why ``source`` values are not converted into ``target`` (None: they are)."""
    if pat.is_dictionary(source):
        return _refusal(source.value_type, target)
    if pat.is_dictionary(target):
        return _refusal(source, target.value_type)
    s, t = _kind(source), _kind(target)
    if s == "null" or source == target:
        return None
    if (s, t) not in _ALLOWED:
        if s == "string":
            return "text is not parsed into other types"
        if t == "string":
            return f"{s} values are not turned into text"
        return f"{s} values are not converted into {t} values implicitly"
    if s == "floating" and t == "floating" and target.bit_width < source.bit_width:
        return "a narrower floating-point type would round the values"
    if s == "timestamp":
        if source.tz is not None and target.tz is None:
            return (
                "the time zone would be dropped; to store the UTC wall-clock time cast the "
                f"column to pa.timestamp('{source.unit}'), to store the local time of its zone "
                "use pyarrow.compute.local_timestamp, or declare the column "
                "TIMESTAMP WITH LOCAL TIME ZONE"
            )
        if source.tz is None and target.tz is not None:
            return (
                "a time-zone-naive timestamp has no instant; attach its zone first with "
                "pyarrow.compute.assume_timezone(column, 'UTC') (or the zone it was taken in)"
            )
    if s in ("list", "map", "struct"):
        return _nested_refusal(source, target)
    return None


def _nested_refusal(source: pa.DataType, target: pa.DataType) -> str | None:
    if pat.is_struct(source):
        names = [source.field(i).name for i in range(source.num_fields)]
        for i in range(target.num_fields):
            field = target.field(i)
            if field.name in names:
                why = _refusal(source.field(field.name).type, field.type)
                if why:
                    return f"field {field.name!r}: {why}"
        return None
    if pat.is_map(source):
        return _refusal(source.key_type, target.key_type) or _refusal(
            source.item_type, target.item_type
        )
    why = _refusal(source.value_type, target.value_type)
    return f"element: {why}" if why else None


def check_conversion(column: str, source: pa.DataType, target: pa.DataType, paimon: str) -> None:
    """Raise :class:`DataValidationError` when input of type ``source`` is not converted into
    column ``column`` of Arrow type ``target`` (Paimon type ``paimon``) by the rules above."""
    why = _refusal(source, target)
    if why is not None:
        raise DataValidationError(
            f"column {column!r} has type {source}, which lakeops does not convert into "
            f"{paimon} by itself: {why}. Convert the column explicitly (e.g. "
            f"pyarrow.compute.cast(column, {target!r})) if that is what you mean"
        )
