"""Interoperability with pypaimon 2.1.0 (the oracle, run in its own virtualenv), both ways."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop


def _sorted(table: pa.Table, keys: list[str]) -> list[dict]:
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("score", pa.float64()),
        ("op", pa.string()),
    ]
)


def _batch(dt_: str, ids: list[int], op: str = "+I", tag: str = "") -> pa.Table:
    return pa.table(
        {
            "dt": [dt_] * len(ids),
            "id": ids,
            "name": [f"name-{i}-{tag}-{'long' * (i % 3)}" for i in ids],
            "score": [i / 3 for i in ids],
            "op": [op] * len(ids),
        },
        schema=SCHEMA,
    )


def test_lakeops_table_reads_identically_in_pypaimon(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.orders",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op"},
    )
    table.write(
        pa.concat_tables(
            [_batch("2024-01-01", list(range(300))), _batch("2024-01-02", list(range(200)))]
        )
    )
    table.write(_batch("2024-01-01", list(range(0, 300, 7)), "+U", "u1"))
    table.write(
        pa.concat_tables(
            [
                _batch("2024-01-01", list(range(1, 300, 11)), "-D"),
                _batch("2024-01-02", list(range(150, 260)), "+I", "u2"),
            ]
        )
    )
    # +I and -D of one key in the same commit: the delete must win (pypaimon itself gets
    # this wrong when it writes, but reads a merged -D correctly)
    table.write(pa.concat_tables([_batch("2024-01-03", [5, 6]), _batch("2024-01-03", [5], "-D")]))
    ours = table.read()
    assert ours.num_rows == 300 - len(range(1, 300, 11)) + 260 + 1
    theirs = oracle_read(warehouse, "db.orders")
    assert _sorted(theirs, ["dt", "id"]) == _sorted(ours, ["dt", "id"])
    for snapshot in (1, 2):
        assert _sorted(
            oracle_read(warehouse, "db.orders", snapshot_id=snapshot), ["dt", "id"]
        ) == _sorted(table.read(snapshot_id=snapshot), ["dt", "id"])


def test_pypaimon_table_is_read_appended_and_still_readable(warehouse) -> None:
    oracle_create(
        warehouse,
        "db.events",
        SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op"},
    )
    oracle_write(warehouse, "db.events", _batch("2024-02-01", list(range(100))))
    oracle_write(warehouse, "db.events", _batch("2024-02-01", list(range(50)), "+U", "p2"))
    table = Catalog(str(warehouse)).get_table("db.events")
    assert _sorted(table.read(), ["id"]) == _sorted(oracle_read(warehouse, "db.events"), ["id"])
    table.write(
        pa.concat_tables(
            [
                _batch("2024-02-01", list(range(40, 60)), "+U", "lk"),
                _batch("2024-02-01", [0, 99], "-D"),
                _batch("2024-02-02", [1, 2, 3]),
            ]
        )
    )
    ours = table.read()
    assert ours.num_rows == 98 + 3
    assert _sorted(oracle_read(warehouse, "db.events"), ["dt", "id"]) == _sorted(ours, ["dt", "id"])
    oracle_write(warehouse, "db.events", _batch("2024-02-02", [3, 4], "+U", "again"))
    assert _sorted(Catalog(str(warehouse)).get_table("db.events").read(), ["dt", "id"]) == _sorted(
        oracle_read(warehouse, "db.events"), ["dt", "id"]
    )


def test_sequence_field_table(warehouse) -> None:
    schema = pa.schema([("id", pa.int32()), ("v", pa.string()), ("ts", pa.int64())])
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.seq",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "2", "sequence.field": "ts"},
    )
    table.write(
        pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "ts": [10, 10, None]}, schema=schema)
    )
    # older sequence values arrive later: they must lose; null loses to any value
    table.write(
        pa.table(
            {"id": [1, 2, 3, 3], "v": ["old", "new", "x", "y"], "ts": [5, 11, None, 0]},
            schema=schema,
        )
    )
    expected = [
        {"id": 1, "v": "a", "ts": 10},
        {"id": 2, "v": "new", "ts": 11},
        {"id": 3, "v": "y", "ts": 0},
    ]
    assert _sorted(table.read(), ["id"]) == expected
    assert _sorted(oracle_read(warehouse, "db.seq"), ["id"]) == expected


def test_every_primitive_type_round_trips(warehouse) -> None:
    schema = pa.schema(
        [
            ("k_str", pa.string()),
            ("k_int", pa.int32()),
            ("b", pa.bool_()),
            ("i8", pa.int8()),
            ("i16", pa.int16()),
            ("i64", pa.int64()),
            ("f32", pa.float32()),
            ("f64", pa.float64()),
            ("dec", pa.decimal128(12, 3)),
            ("bigdec", pa.decimal128(30, 4)),
            ("bin", pa.binary()),
            ("d", pa.date32()),
            ("ts3", pa.timestamp("ms")),
            ("ts6", pa.timestamp("us")),
        ]
    )
    rows = [
        {
            "k_str": f"key-{i}" * (1 + i % 3),
            "k_int": i - 3,
            "b": i % 2 == 0,
            "i8": i - 100,
            "i16": i * 300,
            "i64": i * 10**12,
            "f32": i / 4,
            "f64": i / 3,
            "dec": Decimal(i) / 8,
            "bigdec": Decimal(i) * Decimal("12345678901234567.8901"),
            "bin": bytes([i]) * i,
            "d": dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "ts3": dt.datetime(2024, 1, 1, 0, 0, i, 1000 * i),
            "ts6": dt.datetime(2024, 1, 1, 0, 0, i, 7 * i),
        }
        for i in range(1, 9)
    ]
    data = pa.Table.from_pylist(rows, schema=schema).cast(schema)
    data = data.set_column(
        8,
        "dec",
        pa.array([r["dec"].quantize(Decimal("0.001")) for r in rows], pa.decimal128(12, 3)),
    )
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.types", schema=schema, primary_keys=["k_str", "k_int"], options={"bucket": "3"}
    )
    table.write(data)
    ours = table.read()
    theirs = oracle_read(warehouse, "db.types")
    assert _sorted(theirs, ["k_int"]) == _sorted(ours, ["k_int"]) == _sorted(data, ["k_int"])


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_null_sequence_values_lose_in_both_orders(warehouse, order: str) -> None:
    """pypaimon writes two commits where one key's sequence value is NULL in one of them; the
    record with a value wins in both sort orders (Paimon's comparator sorts NULL first)."""
    schema = pa.schema([("id", pa.int64()), ("seq", pa.int64()), ("v", pa.string())])
    opts = {"bucket": "2", "sequence.field": "seq", "sequence.field.sort-order": order}
    oracle_create(warehouse, "db.s", schema, ["id"], options=opts)
    first = pa.table(
        {"id": [1, 2, 3, 4], "seq": [None, 5, None, 9], "v": ["a1", "a2", "a3", "a4"]},
        schema=schema,
    )
    second = pa.table(
        {"id": [1, 2, 3, 4], "seq": [6, None, None, 2], "v": ["b1", "b2", "b3", "b4"]},
        schema=schema,
    )
    oracle_write(warehouse, "db.s", first)
    oracle_write(warehouse, "db.s", second)
    # model: non-null beats null; among values the larger (ascending) or smaller (descending)
    # wins; all-null ties go to the later commit
    expected = {1: "b1", 2: "a2", 3: "b3", 4: "a4" if order == "ascending" else "b4"}
    table = Catalog(str(warehouse)).get_table("db.s")
    got = {r["id"]: r["v"] for r in table.read().to_pylist()}
    assert got == expected
    assert {r["id"]: r["v"] for r in oracle_read(warehouse, "db.s").to_pylist()} == expected
    table.compact(full=True)
    assert {r["id"]: r["v"] for r in oracle_read(warehouse, "db.s").to_pylist()} == expected
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == expected
