"""Nested-field ``alter`` (add / rename / drop / widen a field of a ROW, also inside an ARRAY's
elements), judged both ways by pypaimon 2.1, which alters and reads nested fields as Paimon 1.x
does, and by Java Paimon 0.9 once a full compaction has rewritten every file under the new
schema (Paimon 0.9 itself has no nested schema changes, so it cannot read files written under an
older ROW shape). The expected rows come from a plain dict model, never from lakeops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import (
    AddColumn,
    DropColumn,
    Position,
    RenameColumn,
    SchemaChange,
    UpdateColumnType,
    apply_changes,
)
from lakeops.format.types import DataType
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_alter, oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

ADDR = pa.struct([("city", pa.string()), ("zip", pa.int32())])
ITEMS = pa.list_(pa.struct([("sku", pa.string()), ("n", pa.int32())]))
SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("addr", ADDR), ("items", ITEMS)])

#: the same changes, as lakeops takes them and as the pypaimon oracle does
LAKEOPS_CHANGES: list[SchemaChange] = [
    AddColumn(("addr", "street"), DataType.parse("STRING")),
    RenameColumn(("addr", "zip"), "postcode"),
    UpdateColumnType(("addr", "postcode"), DataType.parse("BIGINT")),
    DropColumn(("addr", "city")),
    AddColumn(("items", "element", "note"), DataType.parse("STRING"), position=Position.FIRST),
    RenameColumn(("items", "element", "n"), "qty"),
]
ORACLE_CHANGES: list[dict[str, Any]] = [
    {"op": "add", "field": ["addr", "street"], "type": "STRING"},
    {"op": "rename", "field": ["addr", "zip"], "new_name": "postcode"},
    {"op": "type", "field": ["addr", "postcode"], "type": "BIGINT"},
    {"op": "drop", "field": ["addr", "city"]},
    {"op": "add", "field": ["items", "element", "note"], "type": "STRING", "first": True},
    {"op": "rename", "field": ["items", "element", "n"], "new_name": "qty"},
]
NEW_TYPE = pa.schema(
    [
        pa.field("k", pa.int64(), False),
        ("addr", pa.struct([("postcode", pa.int64()), ("street", pa.string())])),
        (
            "items",
            pa.list_(pa.struct([("note", pa.string()), ("sku", pa.string()), ("qty", pa.int32())])),
        ),
    ]
)

Model = dict[int, dict[str, Any]]


def _first_rows() -> tuple[pa.Table, Model]:
    """Twenty rows under the first schema (null ROWs, null fields, empty and null lists), and
    the model of them under the altered schema."""
    keys = list(range(20))
    addr = [
        None if k % 7 == 3 else {"city": f"c{k}", "zip": None if k % 5 == 0 else k} for k in keys
    ]
    items = [
        None if k % 6 == 1 else [{"sku": f"s{k}.{j}", "n": j} for j in range(k % 3)] for k in keys
    ]
    data = pa.table({"k": keys, "addr": addr, "items": items}, schema=SCHEMA)
    model: Model = {}
    for k, a, its in zip(keys, addr, items, strict=True):
        model[k] = {
            "k": k,
            "addr": None if a is None else {"postcode": a["zip"], "street": None},
            "items": None
            if its is None
            else [{"note": None, "sku": i["sku"], "qty": i["n"]} for i in its],
        }
    return data, model


def _second_rows(model: Model) -> pa.Table:
    """Rows under the altered schema: updates of keys 2 and 5, and a new key 30."""
    rows = [
        {"k": 2, "addr": {"postcode": 10_000_000_000, "street": "main"}, "items": []},
        {"k": 5, "addr": None, "items": [{"note": "n", "sku": "z", "qty": 9}]},
        {"k": 30, "addr": {"postcode": None, "street": "side"}, "items": None},
    ]
    for r in rows:
        model[r["k"]] = r
    return pa.Table.from_pylist(rows, schema=NEW_TYPE)


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["k"])


def _expected(model: Model) -> list[dict[str, Any]]:
    return [model[k] for k in sorted(model)]


def test_lakeops_reads_writes_and_compacts_what_pypaimon_altered(warehouse: Path) -> None:
    oracle_create(warehouse, "db.t", SCHEMA, ["k"], options={"bucket": "2"})
    first, model = _first_rows()
    oracle_write(warehouse, "db.t", first)
    oracle_alter(warehouse, "db.t", ORACLE_CHANGES)
    # the schema pypaimon wrote is the one lakeops computes for the same changes (field ids,
    # names, types and the highest field id; pypaimon's JSON spells nullability its own way)
    schema_dir = warehouse / "db.db" / "t" / "schema"
    before = TableSchema.from_json((schema_dir / "schema-0").read_text())
    ours = apply_changes(before, LAKEOPS_CHANGES, has_snapshots=True)
    theirs = TableSchema.from_json((schema_dir / "schema-1").read_text())
    assert ours.fields == theirs.fields
    assert ours.highest_field_id == theirs.highest_field_id == 8

    table = Catalog(str(warehouse)).get_table("db.t")
    assert table.arrow_schema == NEW_TYPE
    assert _sorted(table.read().to_pylist()) == _expected(model)
    table.write(_second_rows(model))
    assert _sorted(table.read().to_pylist()) == _expected(model)
    table.compact(full=True)
    assert _sorted(table.read().to_pylist()) == _expected(model)
    assert _sorted(oracle_read(warehouse, "db.t").to_pylist()) == _expected(model)


def test_pypaimon_and_java_read_what_lakeops_altered(warehouse: Path, java_classpath: str) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    first, model = _first_rows()
    table.write(first)
    table.alter(LAKEOPS_CHANGES)
    table.write(_second_rows(model))
    # a nested field dropped and added again under its old name is a new field: no old values
    table.alter(DropColumn(("addr", "street")))
    table.alter(AddColumn(("addr", "street"), DataType.parse("STRING")))
    for row in model.values():
        if row["addr"] is not None:
            row["addr"]["street"] = None
    # files of three schemas now: pypaimon maps each by field id
    assert _sorted(oracle_read(warehouse, "db.t").to_pylist()) == _expected(model)
    assert _sorted(table.read().to_pylist()) == _expected(model)

    table.compact(full=True)
    assert _sorted(oracle_read(warehouse, "db.t").to_pylist()) == _expected(model)
    # every file is now under the latest schema, which Java Paimon 0.9 reads
    java = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.t"}])[0]
    expected = json_rows(pa.Table.from_pylist(_expected(model), schema=table.arrow_schema))
    # Java 0.9's Parquet reader reads a ROW of null fields as NULL (apache/paimon#4785)
    for row in expected:
        if row["addr"] is not None and all(v is None for v in row["addr"].values()):
            row["addr"] = None
    assert normalize(java["rows"], ["k"]) == normalize(expected, ["k"])
