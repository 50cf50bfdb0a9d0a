"""Dynamic-bucket and cross-partition tables between lakeops and pypaimon 2.1: each reads what
the other wrote, and appends on top of the other's hash index without duplicating a key."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "40"}


def _rows(ids, v: int, dt: str = "a") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.select(["dt", "id", "v"]).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _no_duplicates(rows: list[dict]) -> None:
    keys = [(r["dt"], r["id"]) for r in rows]
    assert len(keys) == len(set(keys)), "a key is stored twice"


def test_pypaimon_reads_and_appends_to_a_lakeops_dynamic_table(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=OPTIONS
    )
    table.write(pa.concat_tables([_rows(range(100), 1), _rows(range(30), 1, "b")]))
    table.write(_rows(range(90, 130), 2))
    assert len({s.bucket for s in table.splits()}) == 4  # buckets 0..3 in dt=a
    assert _sorted(oracle_read(warehouse, "db.t")) == _sorted(table.read())

    oracle_write(
        warehouse, "db.t", pa.concat_tables([_rows(range(0, 140, 7), 3), _rows([1], 3, "b")])
    )
    ours, theirs = _sorted(table.read()), _sorted(oracle_read(warehouse, "db.t"))
    _no_duplicates(ours)
    assert ours == theirs
    expected_keys = {("a", i) for i in range(130)} | {("b", i) for i in range(30)}
    expected_keys |= {("a", i) for i in range(0, 140, 7)}
    assert {(r["dt"], r["id"]) for r in ours} == expected_keys
    values = {(r["dt"], r["id"]): r["v"] for r in ours}
    assert values[("a", 7)] == 3 and values[("a", 126)] == 3 and values[("b", 1)] == 3


def test_lakeops_appends_to_a_pypaimon_dynamic_table(warehouse) -> None:
    oracle_create(warehouse, "db.p", SCHEMA, ["dt", "id"], ["dt"], OPTIONS)
    oracle_write(warehouse, "db.p", _rows(range(100), 1))
    table = Catalog(str(warehouse)).get_table("db.p")
    buckets_before = {s.bucket for s in table.splits()}
    table.write(pa.concat_tables([_rows(range(50, 120), 2), _rows(range(5), 2, "c")]))
    ours = _sorted(table.read())
    _no_duplicates(ours)
    assert len(ours) == 120 + 5
    assert ours == _sorted(oracle_read(warehouse, "db.p"))
    # pypaimon writes again on top of lakeops' index: still no duplicates
    oracle_write(warehouse, "db.p", _rows(range(110, 125), 3))
    again = _sorted(oracle_read(warehouse, "db.p"))
    _no_duplicates(again)
    assert again == _sorted(table.read()) and len(again) == 125 + 5
    assert buckets_before <= {s.bucket for s in table.splits()}


def test_pypaimon_reads_a_cross_partition_table(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([("user_id", pa.int64()), ("city", pa.string()), ("v", pa.int64())])
    table = catalog.create_table(
        "db.users",
        schema=schema,
        primary_keys=["user_id"],
        partition_keys=["city"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "10"},
    )
    table.write(pa.table({"user_id": list(range(30)), "city": ["x"] * 30, "v": [1] * 30}))
    table.write(pa.table({"user_id": list(range(0, 30, 3)), "city": ["y"] * 10, "v": [2] * 10}))
    ours = sorted(table.read().to_pylist(), key=lambda r: r["user_id"])
    assert len(ours) == 30 and sum(r["city"] == "y" for r in ours) == 10
    theirs = sorted(oracle_read(warehouse, "db.users").to_pylist(), key=lambda r: r["user_id"])
    assert [(r["user_id"], r["city"], r["v"]) for r in theirs] == [
        (r["user_id"], r["city"], r["v"]) for r in ours
    ]
