"""Schema evolution with Java Paimon 0.9, both ways: Java renames, drops, re-adds, moves and
widens columns between writes and lakeops reads, appends and compacts (Java reads the result);
lakeops alters and Java reads, before and after compaction by either side. Expected rows come
from a plain model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import (
    AddColumn,
    DropColumn,
    Position,
    RenameColumn,
    UpdateColumnType,
)
from lakeops.format.types import DataType
from tests.interop.java_oracle import json_rows, normalize, run_ops

pytestmark = pytest.mark.interop


#: Java reads the table, compacts it fully, and reads it again
READ_COMPACT_READ = [
    {"op": "read", "table": "db.t"},
    {"op": "compact", "table": "db.t"},
    {"op": "read", "table": "db.t"},
]


def _model_rows(rows: dict[int, dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    return [{c: rows[k].get(c) for c in columns} for k in sorted(rows)]


def test_lakeops_reads_appends_and_compacts_a_table_java_evolved(
    warehouse: Path, java_classpath: str
) -> None:
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.t",
                "fields": [
                    {"name": "k", "type": "BIGINT NOT NULL"},
                    {"name": "v", "type": "INT"},
                    {"name": "s", "type": "STRING"},
                    {"name": "f", "type": "FLOAT"},
                ],
                "primary_keys": ["k"],
                "partition_keys": [],
                "options": {"bucket": "2"},
            },
            {
                "op": "write",
                "table": "db.t",
                "rows": [{"k": k, "v": 10 * k, "s": f"s{k}", "f": k / 2} for k in range(1, 7)],
            },
            {
                "op": "alter",
                "table": "db.t",
                "changes": [
                    {"change": "renameColumn", "name": "v", "new_name": "value"},
                    {"change": "updateColumnType", "name": "value", "type": "BIGINT"},
                    {"change": "updateColumnType", "name": "f", "type": "DOUBLE"},
                    {"change": "dropColumn", "name": "s"},
                ],
            },
            {"op": "write", "table": "db.t", "rows": [{"k": 2, "value": 2**40, "f": 0.25}]},
            {
                "op": "alter",
                "table": "db.t",
                "changes": [
                    {"change": "addColumn", "name": "s", "type": "INT", "position": "first"},
                    {
                        "change": "updateColumnPosition",
                        "name": "f",
                        "position": "after",
                        "reference": "s",
                    },
                ],
            },
            {"op": "write", "table": "db.t", "rows": [{"k": 3, "value": 3, "s": 33, "f": 1.0}]},
        ],
    )
    model = {k: {"k": k, "value": 10 * k, "f": k / 2} for k in range(1, 7)}
    model[2] = {"k": 2, "value": 2**40, "f": 0.25}
    model[3] = {"k": 3, "value": 3, "s": 33, "f": 1.0}
    columns = ["s", "f", "k", "value"]
    table = Catalog(str(warehouse)).get_table("db.t")
    assert table.arrow_schema.names == columns
    expected = _model_rows(model, columns)
    assert normalize(json_rows(table.read()), ["k"]) == expected

    table.write(
        pa.table({"s": [5], "f": [5.5], "k": [5], "value": [-5]}, schema=table.arrow_schema)
    )
    model[5] = {"k": 5, "value": -5, "s": 5, "f": 5.5}
    table.compact(full=True)
    expected = _model_rows(model, columns)
    results = run_ops(java_classpath, warehouse, READ_COMPACT_READ)
    assert normalize(results[0]["rows"], ["k"]) == expected
    assert normalize(results[2]["rows"], ["k"]) == expected
    assert normalize(json_rows(Catalog(str(warehouse)).get_table("db.t").read()), ["k"]) == expected


def test_java_reads_a_table_lakeops_evolved(warehouse: Path, java_classpath: str) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int32()), ("s", pa.string())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["k"], options={"bucket": "2"})
    table.write(pa.table({"k": [1, 2, 3], "v": [1, 2, 3], "s": ["a", "b", "c"]}, schema=schema))
    table.alter(
        [
            RenameColumn("v", "value"),
            UpdateColumnType("value", DataType.parse("BIGINT")),
            DropColumn("s"),
            AddColumn("s", DataType.parse("DECIMAL(12, 2)"), position=Position.after("k")),
        ]
    )
    model = {k: {"k": k, "value": k} for k in (1, 2, 3)}
    columns = ["k", "s", "value"]
    results = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.t"}])
    assert normalize(results[0]["rows"], ["k"]) == _model_rows(model, columns)

    from decimal import Decimal

    table.write(
        pa.table({"k": [2], "s": [Decimal("1.50")], "value": [2**40]}, schema=table.arrow_schema)
    )
    model[2] = {"k": 2, "s": "1.50", "value": 2**40}
    expected = _model_rows(model, columns)
    results = run_ops(java_classpath, warehouse, READ_COMPACT_READ)
    assert normalize(results[0]["rows"], ["k"]) == expected
    assert normalize(results[2]["rows"], ["k"]) == expected
    table = Catalog(str(warehouse)).get_table("db.t")
    assert normalize(json_rows(table.read()), ["k"]) == expected
    table.compact(full=True)
    results = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.t"}])
    assert normalize(results[0]["rows"], ["k"]) == expected
