"""Every Paimon type through Spark: a DataFrame written with ``df.write.format("lakeops")`` into
tables Java Paimon 0.9 created, then read back by Spark, pypaimon 2.1 and Java Paimon, which
must all return the DataFrame's values. Timestamps of every precision with and without local
time zone, decimals of every storage width, binary, nested types — in primary-key tables and in
append tables. Precisions 0..6 and 7..9 live
in two tables (Paimon stores them as INT64 and INT96, and a lakeops file holds one of the two).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.conftest import java_classpath  # noqa: F401  (the session fixture)
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_script

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.interop]

UTC = dt.UTC
LOW = dt.datetime(1969, 12, 31, 23, 59, 59, 987654)
HIGH = dt.datetime(2024, 2, 29, 13, 14, 15, 123456)
NANO_LOW = dt.datetime(1677, 9, 21, 0, 12, 43, 145225)  # just inside the ns range
NANO_HIGH = dt.datetime(2262, 4, 11, 23, 47, 16, 854775)
ROW = {
    "type": "ROW",
    "fields": [
        {"id": 100, "name": "x", "type": "INT"},
        {"id": 101, "name": "t", "type": "TIMESTAMP(3)"},
        {"id": 102, "name": "dd", "type": "DECIMAL(20, 2)"},
    ],
}


def _timestamps(precisions: range) -> list[tuple[str, Any, str]]:
    return [(f"ts{p}", f"TIMESTAMP({p})", "timestamp_ntz") for p in precisions] + [
        (f"ltz{p}", f"TIMESTAMP({p}) WITH LOCAL TIME ZONE", "timestamp") for p in precisions
    ]


# (column, Paimon type as Java creates it, Spark type of the DataFrame written into it)
MICRO: list[tuple[str, Any, str]] = [
    ("id", "BIGINT NOT NULL", "bigint"),
    *_timestamps(range(7)),
    ("b", "BOOLEAN", "boolean"),
    ("ti", "TINYINT", "tinyint"),
    ("si", "SMALLINT", "smallint"),
    ("i", "INT", "int"),
    ("f", "FLOAT", "float"),
    ("d", "DOUBLE", "double"),
    ("d1", "DECIMAL(1, 0)", "decimal(1,0)"),
    ("d9", "DECIMAL(9, 3)", "decimal(9,3)"),
    ("d18", "DECIMAL(18, 6)", "decimal(18,6)"),
    ("d19", "DECIMAL(19, 2)", "decimal(19,2)"),
    ("d38", "DECIMAL(38, 10)", "decimal(38,10)"),
    ("s", "STRING", "string"),
    ("vc", "VARCHAR(20)", "string"),
    ("bn", "BINARY(4)", "binary"),
    ("by", "BYTES", "binary"),
    ("dt", "DATE", "date"),
    ("arr", {"type": "ARRAY", "element": "INT"}, "array<int>"),
    ("m", {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}, "map<string,bigint>"),
    ("r", ROW, "struct<x:int,t:timestamp_ntz,dd:decimal(20,2)>"),
]
NANO: list[tuple[str, Any, str]] = [
    ("id", "BIGINT NOT NULL", "bigint"),
    *_timestamps(range(7, 10)),
    ("arr9", {"type": "ARRAY", "element": "TIMESTAMP(9)"}, "array<timestamp_ntz>"),
]


#: (table, columns, primary key): each column set in a primary-key table and in an append
#: table (no primary key, unaware bucket)
TABLES: list[tuple[str, list[tuple[str, Any, str]], list[str]]] = [
    ("micro", MICRO, ["id"]),
    ("nano", NANO, ["id"]),
    ("append_micro", MICRO, []),
    ("append_nano", NANO, []),
]


def _at(precision: int, value: dt.datetime) -> dt.datetime:
    """``value`` with only the fractional digits a TIMESTAMP(precision) holds."""
    step = 10 ** (6 - min(precision, 6))
    return value.replace(microsecond=value.microsecond // step * step)


def _micro_rows() -> list[dict[str, Any]]:
    low: dict[str, Any] = {
        "b": False,
        "ti": -128,
        "si": -32768,
        "i": -(2**31),
        "f": -1.5,
        "d": -2.25e300,
        "d1": Decimal("-9"),
        "d9": Decimal("-123456.789"),
        "d18": Decimal("-123456789012.345678"),
        "d19": Decimal("-12345678901234567.89"),
        "d38": Decimal("-9999999999999999999999999999.9999999999"),
        "s": "héllo wörld",
        "vc": "",
        "bn": b"\x00\x01\x02\x03",
        "by": b"",
        "dt": dt.date(1969, 12, 31),
        "arr": [1, None, -3],
        "m": {"a": None},
        "r": {"x": -1, "t": dt.datetime(2000, 2, 29, 1, 2, 3, 4000), "dd": Decimal("-1.50")},
    }
    high: dict[str, Any] = {
        "b": True,
        "ti": 127,
        "si": 32767,
        "i": 2**31 - 1,
        "f": 2.5,
        "d": 1.7976931348623157e308,
        "d1": Decimal("9"),
        "d9": Decimal("999999.999"),
        "d18": Decimal("999999999999.999999"),
        "d19": Decimal("99999999999999999.99"),
        "d38": Decimal("9999999999999999999999999999.9999999999"),
        "s": "𝄞" * 3,
        "vc": "twenty chars exactly",
        "bn": b"\xff\xfe\xfd\xfc",
        "by": bytes(range(256)),
        "dt": dt.date(9999, 12, 31),
        "arr": [],
        "m": {"k": 2**63 - 1},
        "r": {"x": None, "t": None, "dd": Decimal("123456789012345678.99")},
    }
    for p in range(7):
        low[f"ts{p}"], high[f"ts{p}"] = _at(p, LOW), _at(p, HIGH)
        low[f"ltz{p}"] = _at(p, LOW).replace(tzinfo=UTC)
        high[f"ltz{p}"] = _at(p, HIGH).replace(tzinfo=UTC)
    return [{"id": 1, **low}, {"id": 2, **high}, {"id": 3}]


def _nano_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i, value in enumerate((NANO_LOW, NANO_HIGH, LOW, HIGH), start=1):
        row: dict[str, Any] = {"id": i, "arr9": [value, None]}
        for p in range(7, 10):
            row[f"ts{p}"] = value
            row[f"ltz{p}"] = value.replace(tzinfo=UTC)
        rows.append(row)
    return [*rows, {"id": 9}]


def _naive_us(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp as microseconds without zone (UTC values kept)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_naive_us(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(t.key_type, _naive_us(t.item_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _naive_us(f.type)) for f in t])
    return t


def _plain(table: pa.Table) -> list[dict[str, Any]]:
    """Rows sorted by id, timestamps as naive UTC datetimes (so zones and units compare)."""
    columns = {n: table.column(n) for n in table.column_names}
    cast = pa.table({n: c.cast(_naive_us(c.type)) for n, c in columns.items()})
    return sorted(cast.to_pylist(), key=lambda r: r["id"])


def _ddl(columns: list[tuple[str, Any, str]]) -> str:
    return ", ".join(f"{n} {s}" for n, _, s in columns)


def test_every_type_through_spark_pypaimon_and_java(
    spark: Any,
    warehouse: Path,
    java_classpath: str,  # noqa: F811
) -> None:
    Catalog(str(warehouse)).create_database("db")
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": f"db.{name}",
                "fields": [{"name": n, "type": p} for n, p, _ in columns],
                "primary_keys": keys,
                "options": {"bucket": "2"} if keys else {},
            }
            for name, columns, keys in TABLES
        ],
    )
    expected: dict[str, pa.Table] = {}
    for name, columns, _ in TABLES:
        rows = _micro_rows() if columns is MICRO else _nano_rows()
        df = spark.createDataFrame(rows, _ddl(columns))
        df.write.format("lakeops").mode("append").save(str(warehouse / "db.db" / name))
        expected[name] = df.toArrow()
        # Spark reads back exactly the DataFrame it wrote
        back = spark.read.format("lakeops").load(str(warehouse / "db.db" / name))
        assert [f.dataType.simpleString() for f in back.schema.fields] == [
            f.dataType.simpleString() for f in df.schema.fields
        ]
        assert _plain(back.toArrow()) == _plain(expected[name])
    # pypaimon reads the values Spark wrote (one oracle process for both tables) ...
    names = [name for name, _, _ in TABLES]
    theirs = oracle_script(warehouse, [{"op": "read", "table": f"db.{n}"} for n in names])
    for table, name in zip(theirs, names, strict=True):
        assert _plain(table) == _plain(expected[name])
    # ... and so does Java Paimon
    results = run_ops(
        java_classpath, warehouse, [{"op": "read", "table": f"db.{n}"} for n in names]
    )
    for result, name in zip(results, names, strict=True):
        assert normalize(result["rows"], ["id"]) == normalize(json_rows(expected[name]), ["id"])


def test_sub_microsecond_values_are_refused_naming_the_column(spark: Any, catalog: Catalog) -> None:
    """Spark timestamps have microseconds: a TIMESTAMP(9) value with nanoseconds is refused,
    never truncated; whole microseconds read exactly."""
    schema = pa.schema([("id", pa.int64()), ("t9", pa.timestamp("ns"))])
    table = catalog.create_table("db.ns", schema=schema, primary_keys=["id"])
    nanos = [1_700_000_000_123_456_000, -1_000]
    table.write(
        pa.table(
            {"id": [1, 2], "t9": pa.array(nanos, pa.int64()).cast(pa.timestamp("ns"))},
            schema=schema,
        )
    )
    df = spark.read.format("lakeops").load(table.root)
    assert sorted(df.toArrow().column("t9").cast(pa.int64()).to_pylist()) == sorted(
        n // 1000 for n in nanos
    )
    table.write(
        pa.table(
            {"id": [3], "t9": pa.array([1_001], pa.int64()).cast(pa.timestamp("ns"))}, schema=schema
        )
    )
    with pytest.raises(Exception, match=r"column 't9'.*without changing values"):
        spark.read.format("lakeops").load(table.root).collect()


def test_time_columns_through_spark(spark: Any, catalog: Catalog) -> None:
    """TIME: Spark reads a lakeops TIME(3) column as its ``TimeType`` with exactly the stored
    milliseconds, and a DataFrame of Spark times written into the table reads back in lakeops
    as the same times (whole milliseconds: what Paimon stores)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("t", pa.time32("ms"))])
    table = catalog.create_table("db.tm", schema=schema, primary_keys=["id"])
    times = [dt.time(0, 0), dt.time(1, 2, 3, 4000), None]
    table.write(pa.table({"id": [1, 2, 3], "t": pa.array(times, pa.time32("ms"))}, schema=schema))
    df = spark.read.format("lakeops").load(table.root)
    assert df.schema["t"].dataType.simpleString().startswith("time")
    assert sorted(df.collect(), key=lambda r: r.id) == [
        (1, times[0]),
        (2, times[1]),
        (3, None),
    ]
    more = spark.createDataFrame([(4, dt.time(23, 59, 59, 999000))], df.schema)
    more.write.format("lakeops").mode("append").save(table.root)
    assert table.read().sort_by("id").column("t").to_pylist() == [
        *times,
        dt.time(23, 59, 59, 999000),
    ]
