"""The Parquet physical layout Paimon 0.9's writer gives each type, as pyarrow writer settings.

Paimon (``ParquetSchemaConverter`` / ``ParquetRowDataWriter``) writes:

* DECIMAL with precision <= 9 as INT32, <= 18 as INT64, else FIXED_LEN_BYTE_ARRAY (all with the
  DECIMAL annotation); its reader only accepts INT32/INT64 or FLBA for p <= 18;
* TIMESTAMP / TIMESTAMP_LTZ with precision <= 3 as INT64 millis, <= 6 as INT64 micros and > 6 as
  INT96 (its reader refuses anything but INT96 for p > 6 and anything but INT64 for p <= 6);
* TINYINT / SMALLINT as INT32 annotated INT(8) / INT(16); CHAR / VARCHAR as UTF8 BINARY;
  BINARY / VARBINARY as plain BINARY; DATE as INT32 DATE;
* TIME as INT32 ``TIME(MILLIS, isAdjustedToUTC=true)`` (milliseconds of the day, whatever the
  precision), which pyarrow writes for ``time32('ms')``;
* ARRAY as the 3-level ``list`` / ``element`` group, MAP as ``key_value`` with a required key,
  MULTISET<T> as that map from T to a required INT32 count, ROW as a plain group;
* VARIANT as a plain group of two required binaries, ``value`` then ``metadata`` (the
  unshredded variant encoding; Paimon leaves the Parquet VARIANT annotation off), which is
  what pyarrow writes for lakeops' ``struct<value, metadata>`` column;
* dictionary encoding enabled for every column (parquet-mr's default); parquet-mr drops the
  dictionary of a column whose values it does not compress (unique sorted keys and sequence
  numbers end up PLAIN), which is why the writer leaves those columns plain.

pyarrow produces the same with ``store_decimal_as_integer`` (DECIMAL), its default nested layout
and its default timestamp units (seconds coerced to millis), except that INT96 can only be
switched on for a whole file. A file whose timestamps (including nested ones) mix precisions
above and at most 6 therefore cannot be written as Paimon does, and :func:`writer_options`
refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType

__all__ = ["check_writable", "writer_options"]

_INT96_MIN_PRECISION = 7


def _timestamps(name: str, t: DataType) -> Iterator[tuple[str, int]]:
    """(path, precision) of every TIMESTAMP / TIMESTAMP_LTZ inside ``t``."""
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        yield name, t.precision if t.precision is not None else 6
    elif t.root == "ARRAY" and t.element is not None:
        yield from _timestamps(f"{name}[]", t.element)
    elif t.root in ("MAP", "MULTISET") and t.key is not None and t.value is not None:
        yield from _timestamps(f"{name}.key", t.key)
        yield from _timestamps(f"{name}.value", t.value)
    elif t.root == "ROW":
        for _, child, child_type in t.fields:
            yield from _timestamps(f"{name}.{child}", child_type)


def _uses_int96(schema: TableSchema, what: str) -> bool:
    """Whether the data files of ``schema`` hold INT96 timestamps; raise if they must mix."""
    found = [ts for f in schema.fields for ts in _timestamps(f.name, f.type)]
    int96 = [n for n, p in found if p >= _INT96_MIN_PRECISION]
    int64 = [n for n, p in found if p < _INT96_MIN_PRECISION]
    if int96 and int64:
        raise UnsupportedFeatureError(
            f"cannot {what}: Paimon writes TIMESTAMP columns of precision 7..9 as Parquet INT96 "
            f"({', '.join(int96)}) and those of precision 0..6 as INT64 ({', '.join(int64)}), "
            "and lakeops' Parquet writer can only use INT96 for every timestamp of a file or "
            "for none; use one side of precision 6 for all timestamp columns of the table"
        )
    return bool(int96)


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when lakeops cannot write data files of
    ``schema`` with exactly Paimon's Parquet layout (``what`` names the refused action)."""
    _uses_int96(schema, what)


def writer_options(schema: TableSchema) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.parquet.ParquetWriter`` that give a data file of
    ``schema`` Paimon's physical types and encodings (raises as :func:`check_writable`)."""
    return {
        "store_decimal_as_integer": True,
        "use_deprecated_int96_timestamps": _uses_int96(schema, "write this table"),
        "use_compliant_nested_type": True,
    }
