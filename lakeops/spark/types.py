"""Paimon columns as Spark sees them, and the checked conversion of read results into them.

Spark timestamps have microseconds: ``TIMESTAMP(p)`` becomes ``TimestampNTZType`` and
``TIMESTAMP(p) WITH LOCAL TIME ZONE`` ``TimestampType`` for every precision ``p``. Precisions 0
to 6 convert exactly (seconds and milliseconds widen to microseconds). Precisions 7 to 9 convert
exactly when the values have no digits below the microsecond; a value that has them is refused
(:class:`~lakeops.errors.DataValidationError` naming the column) rather than truncated.
Decimals of every precision, binary, strings and nested ARRAY / MAP / MULTISET / ROW columns
keep their values; CHAR / VARCHAR become Spark strings. ``TIME(p)`` (milliseconds of the day)
becomes Spark's ``TimeType(6)`` exactly; a Spark time written into a TIME column must have no
digits below the millisecond (Paimon stores none), else the write is refused naming the column.
``VARIANT`` is the struct of its ``value`` and ``metadata`` binaries, as lakeops reads it.
"""

from __future__ import annotations

import pyarrow as pa
import pyspark
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from lakeops.errors import ConfigurationError, DataValidationError, UnsupportedFeatureError

__all__ = [
    "as_nullable",
    "check_projection",
    "spark_arrow_schema",
    "spark_schema",
    "to_spark_arrow",
]


def spark_schema(arrow_schema: pa.Schema, row_kind: str | None = None) -> StructType:
    """The Spark schema of a table's Arrow schema; with ``row_kind`` a non-null string column
    of that name first (incremental reads)."""
    spark_side = pa.schema([f.with_type(_spark_arrow_type(f.type)) for f in arrow_schema])
    times = [f.name for f in arrow_schema if _spark_arrow_type(f.type) != f.type]
    try:
        schema = from_arrow_schema(spark_side, prefer_timestamp_ntz=True)
    except (TypeError, ValueError) as exc:  # PySparkTypeError is a TypeError
        if not times:
            raise
        raise UnsupportedFeatureError(
            f"column(s) {times} are (or hold) Paimon TIME, for which this Spark "
            f"({pyspark.__version__}) has no type ({exc}); Spark 4.1+ reads them as its "
            "TimeType, or read the table with lakeops' Table.read"
        ) from exc
    if row_kind is None:
        return schema
    if row_kind in arrow_schema.names:
        raise ConfigurationError(
            f"the table has a column named {row_kind!r}, the row-kind column of incremental "
            "reads; read the changes with Table.read_changes instead"
        )
    return StructType([StructField(row_kind, StringType(), False), *schema.fields])


def _spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every ``time32`` (Paimon's TIME) as ``time64('us')``, the Arrow type Spark
    maps to its ``TimeType`` (milliseconds widen exactly)."""
    if pa.types.is_time32(t):
        return pa.time64("us")
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_spark_arrow_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_spark_arrow_type(t.key_type)),
            t.item_field.with_type(_spark_arrow_type(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_spark_arrow_type(f.type)) for f in t])
    return t


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects a Python data source to return for ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def _nullable_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _nullable_type(t.value_type), True))
    if pa.types.is_map(t):  # a map key is never null
        return pa.map_(t.key_type, pa.field(t.item_field.name, _nullable_type(t.item_type), True))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _nullable_type(f.type), True) for f in t])
    return t


def as_nullable(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable, nested ones included (map keys aside), as Spark
    creates a table from a query's schema: a column that happens to hold no null in the first
    DataFrame does not become NOT NULL (primary-key columns become NOT NULL on creation)."""
    return pa.schema([pa.field(f.name, _nullable_type(f.type), True) for f in schema])


def to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` converted into ``target`` column by column with Arrow's safe cast: exact, or a
    :class:`DataValidationError` naming the column whose values Spark cannot hold."""
    columns = []
    for field in target:
        column = table.column(field.name)
        if column.type != field.type:
            try:
                column = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise DataValidationError(
                    f"column {field.name!r} ({column.type}) cannot be handed to Spark as "
                    f"{field.type} without changing values: {exc}. Spark timestamps have "
                    "microseconds; read this table with lakeops' Table.read, which keeps "
                    "nanoseconds"
                ) from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)


def check_projection(requested: StructType, table: StructType) -> None:
    """Refuse a read schema naming a column the table lacks, or one at another type than Spark
    reads the table's column as (a :class:`ConfigurationError` naming each)."""
    have = {f.name: f.dataType for f in table.fields}
    wrong = []
    for field in requested.fields:
        if field.name not in have:
            wrong.append(f"{field.name!r} is not a column of the table")
        elif field.dataType.simpleString() != have[field.name].simpleString():
            wrong.append(
                f"{field.name!r} is {have[field.name].simpleString()} in the table, not "
                f"{field.dataType.simpleString()}"
            )
    if wrong:
        raise ConfigurationError(
            "the read schema does not fit the table: "
            + "; ".join(wrong)
            + f". The table's columns: {table.simpleString()}"
        )
