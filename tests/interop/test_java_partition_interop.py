"""Typed partitions with Java Paimon 0.9, both ways: DATE, TIMESTAMP, DECIMAL, BOOLEAN, INT
and STRING partition values; each side finds the other's files and compacts them. Paimon 0.9 has no
``partition.legacy-name`` option (it came in 1.0): it always writes the legacy names
(``pd=19723``), which is what lakeops writes by default; the other setting is checked against
pypaimon 2.1."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import json_rows, normalize, run_ops

pytestmark = pytest.mark.interop

FIELDS = [
    {"name": "pd", "type": "DATE"},
    {"name": "pt", "type": "TIMESTAMP(3)"},
    {"name": "pdec", "type": "DECIMAL(10, 2)"},
    {"name": "pb", "type": "BOOLEAN"},
    {"name": "pi", "type": "INT"},
    {"name": "ps", "type": "STRING"},
    {"name": "k", "type": "BIGINT NOT NULL"},
    {"name": "v", "type": "STRING"},
]
PARTS = ["pd", "pt", "pdec", "pb", "pi", "ps"]


def _rows(tag: str) -> list[dict]:
    return [
        {
            "pd": "2024-01-01",
            "pt": "2024-01-01T12:30:00.123000000",
            "pdec": "12.50",
            "pb": True,
            "pi": -3,
            "ps": "a b/c",
            "k": 1,
            "v": f"x{tag}",
        },
        {
            "pd": "1969-12-31",
            "pt": "1970-01-01T00:00:00.000000000",
            "pdec": "-0.01",
            "pb": False,
            "pi": 0,
            "ps": "",
            "k": 2,
            "v": f"y{tag}",
        },
        {
            "pd": "2024-01-01",
            "pt": "2024-01-01T12:30:00.123000000",
            "pdec": "12.50",
            "pb": True,
            "pi": -3,
            "ps": "a b/c",
            "k": 3,
            "v": f"z{tag}",
        },
    ]


def test_typed_partitions_both_ways(warehouse: Path, java_classpath: str) -> None:
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.p",
                "fields": FIELDS,
                "primary_keys": [*PARTS, "k"],
                "partition_keys": PARTS,
                "options": {"bucket": "1"},
            },
            {"op": "write", "table": "db.p", "rows": _rows("1")},
        ],
    )
    java_dirs = sorted(p.relative_to(warehouse) for p in warehouse.rglob("bucket-0"))
    table = Catalog(str(warehouse)).get_table("db.p")
    expected = normalize(_rows("1"), ["k"])
    assert normalize(json_rows(table.read()), ["k"]) == expected

    current = table.read().sort_by("k")
    table.write(current.set_column(7, "v", pa.array(["a", "b", "c"])))
    expected = [{**r, "v": v} for r, v in zip(expected, ["a", "b", "c"], strict=True)]
    # lakeops wrote into the very directories Java made: no new partition directory
    assert sorted(p.relative_to(warehouse) for p in warehouse.rglob("bucket-0")) == java_dirs
    table.compact(full=True)
    results = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.p"},
            {"op": "compact", "table": "db.p"},
            {"op": "read", "table": "db.p"},
        ],
    )
    assert normalize(results[0]["rows"], ["k"]) == expected
    assert normalize(results[2]["rows"], ["k"]) == expected
    assert normalize(json_rows(Catalog(str(warehouse)).get_table("db.p").read()), ["k"]) == expected
