"""Tables that pypaimon 2.1 wrote and *altered*: lakeops reads them by field id, appends to
and compacts them, and pypaimon reads back every row. The expected rows come from a plain
dict model, never from lakeops."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.oracle import oracle_alter, oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

BASE = pa.schema([("k", pa.int64()), ("v", pa.int32()), ("s", pa.string())])


def _rows(table: pa.Table) -> list[dict]:
    return table.sort_by("k").to_pylist()


def _model(columns: list[str], rows: dict[int, dict]) -> list[dict]:
    return [{c: rows[k].get(c) for c in columns} for k in sorted(rows)]


def _setup(warehouse, options: dict[str, str] | None = None) -> dict[int, dict]:
    oracle_create(warehouse, "db.t", BASE, ["k"], options=options or {"bucket": "2"})
    data = pa.table(
        {"k": list(range(40)), "v": list(range(100, 140)), "s": [f"x{i}" for i in range(40)]},
        schema=BASE,
    )
    oracle_write(warehouse, "db.t", data)
    return {k: {"k": k, "v": 100 + k, "s": f"x{k}"} for k in range(40)}


def test_renamed_column_keeps_its_values_through_lakeops_write_and_compaction(warehouse) -> None:
    model = _setup(warehouse)
    oracle_alter(warehouse, "db.t", [{"op": "rename", "field": "v", "new_name": "value"}])
    for row in model.values():
        row["value"] = row.pop("v")
    table = Catalog(str(warehouse)).get_table("db.t")
    assert table.schema.field_names == ["k", "value", "s"]
    assert _rows(table.read()) == _model(["k", "value", "s"], model)

    update = pa.table({"k": [3, 50], "value": [7, 8], "s": ["new3", "new50"]})
    table.write(update)
    model[3] = {"k": 3, "value": 7, "s": "new3"}
    model[50] = {"k": 50, "value": 8, "s": "new50"}
    table.compact(full=True)
    expected = _model(["k", "value", "s"], model)
    assert _rows(Catalog(str(warehouse)).get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected


def test_dropped_and_re_added_column_is_a_new_field(warehouse) -> None:
    model = _setup(warehouse)
    oracle_alter(warehouse, "db.t", [{"op": "drop", "field": "s"}])
    oracle_alter(warehouse, "db.t", [{"op": "add", "field": "s", "type": "INT"}])
    for row in model.values():
        row["s"] = None  # the old text values belong to a dropped field
    table = Catalog(str(warehouse)).get_table("db.t")
    assert _rows(table.read()) == _model(["k", "v", "s"], model)
    table.write(pa.table({"k": [1], "v": [1], "s": [11]}))
    model[1] = {"k": 1, "v": 1, "s": 11}
    table.compact(full=True)
    expected = _model(["k", "v", "s"], model)
    assert _rows(Catalog(str(warehouse)).get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected


def test_added_columns_with_positions_and_widened_type(warehouse) -> None:
    model = _setup(warehouse)
    oracle_alter(
        warehouse,
        "db.t",
        [
            {"op": "add", "field": "first_col", "type": "STRING", "first": True},
            {"op": "add", "field": "mid", "type": "DOUBLE", "after": "k"},
            {"op": "type", "field": "v", "type": "BIGINT"},
        ],
    )
    columns = ["first_col", "k", "mid", "v", "s"]
    table = Catalog(str(warehouse)).get_table("db.t")
    assert table.schema.field_names == columns
    assert table.arrow_schema.field("v").type == pa.int64()
    got = table.read()
    assert got.schema.field("v").type == pa.int64()
    assert _rows(got) == _model(columns, model)
    table.write(
        pa.table(
            {"first_col": ["a"], "k": [2], "mid": [0.5], "v": [2**40], "s": ["big"]},
            schema=table.arrow_schema,
        )
    )
    model[2] = {"first_col": "a", "k": 2, "mid": 0.5, "v": 2**40, "s": "big"}
    table.compact(full=True)
    expected = _model(columns, model)
    assert _rows(Catalog(str(warehouse)).get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected


def test_lookup_and_filtered_read_see_the_renamed_field(warehouse) -> None:
    model = _setup(warehouse)
    oracle_alter(warehouse, "db.t", [{"op": "rename", "field": "s", "new_name": "label"}])
    table = Catalog(str(warehouse)).get_table("db.t")
    got = table.lookup(pa.table({"k": pa.array([5, 6, 99], pa.int64())}), columns=["k", "label"])
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [
        {"k": 5, "label": model[5]["s"]},
        {"k": 6, "label": model[6]["s"]},
    ]
    filtered = table.read(filter=[("k", "<", 3)])
    assert _rows(filtered) == [{"k": k, "v": 100 + k, "label": f"x{k}"} for k in range(3)]


def test_an_inexact_type_change_is_refused_not_guessed(warehouse) -> None:
    _setup(warehouse)
    oracle_alter(warehouse, "db.t", [{"op": "type", "field": "s", "type": "INT"}])
    table = Catalog(str(warehouse)).get_table("db.t")
    with pytest.raises(UnsupportedFeatureError, match="'s' was"):
        table.read()


def test_pypaimon_reads_a_table_lakeops_altered(warehouse) -> None:
    from lakeops.format.schema_change import (
        AddColumn,
        DropColumn,
        Position,
        RenameColumn,
        UpdateColumnType,
    )
    from lakeops.format.types import DataType

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=BASE, primary_keys=["k"], options={"bucket": "2"})
    table.write(pa.table({"k": [1, 2, 3], "v": [10, 20, 30], "s": ["a", "b", "c"]}, schema=BASE))
    table.alter(
        [
            RenameColumn("v", "value"),
            UpdateColumnType("value", DataType.parse("BIGINT")),
            DropColumn("s"),
            AddColumn("s", DataType.parse("DOUBLE"), position=Position.FIRST),
        ]
    )
    expected = [{"s": None, "k": k, "value": 10 * k} for k in (1, 2, 3)]
    assert _rows(oracle_read(warehouse, "db.t")) == expected
    table.write(pa.table({"s": [0.5], "k": [2], "value": [2**40]}, schema=table.arrow_schema))
    expected[1] = {"s": 0.5, "k": 2, "value": 2**40}
    assert _rows(oracle_read(warehouse, "db.t")) == expected
    table.compact(full=True)
    assert _rows(oracle_read(warehouse, "db.t")) == expected
    assert _rows(catalog.get_table("db.t").read()) == expected
