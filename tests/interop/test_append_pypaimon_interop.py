"""Append tables both ways with pypaimon 2.1: unaware and fixed bucket, partitioned and not.

pypaimon (or lakeops) creates each table and writes two commits of awkward data (nulls, NaN,
-0.0, empty and non-ASCII strings); lakeops reads them, appends and compacts fully; pypaimon
reads the result, appends again; lakeops reads and compacts again; pypaimon reads last. Every
read must equal a plain model: the multiset of every row written (an append table keeps every
row). All pypaimon work of one round runs in one oracle process for every table at once.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.table.append import AppendTable
from tests.interop.oracle import oracle_batch

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("k", pa.int64()),
        ("v", pa.string()),
        ("d", pa.float64()),
        ("i", pa.int32()),
    ]
)

#: name -> (partition keys, options, who creates the table)
CASES: dict[str, tuple[list[str], dict[str, str], str]] = {
    "unaware": ([], {}, "pypaimon"),
    "unaware-partitioned": (["dt"], {}, "pypaimon"),
    "bucketed": ([], {"bucket": "2", "bucket-key": "k"}, "pypaimon"),
    "bucketed-partitioned": (["dt"], {"bucket": "3", "bucket-key": "k"}, "pypaimon"),
    "lakeops-unaware-partitioned": (["dt"], {}, "lakeops"),
    "lakeops-bucketed": ([], {"bucket": "2", "bucket-key": "k"}, "lakeops"),
}


def _batch(seed: int) -> pa.Table:
    """Awkward rows: nulls, NaN, -0.0, empty and non-ASCII strings, repeated keys."""
    n = 7
    return pa.table(
        {
            "dt": [["2024-01-01", "2024-01-02", "ü"][(seed + j) % 3] for j in range(n)],
            "k": [None if j == 3 else (seed * 5 + j) % 4 for j in range(n)],
            "v": [["", "é😀", None, "x", "y", "z", "w"][(seed + j) % 7] for j in range(n)],
            "d": [[math.nan, -0.0, 0.0, None, 1.5, -2.25, 1e300][(seed + j) % 7] for j in range(n)],
            "i": [seed * 100 + j for j in range(n)],
        },
        schema=SCHEMA,
    )


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)
        if value == 0.0:
            return ("zero", math.copysign(1.0, value))
    return value


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(n).to_pylist() for n in SCHEMA.names]
    return sorted((tuple(_canon(v) for v in row) for row in zip(*cols, strict=True)), key=repr)


def _model(*batches: pa.Table) -> list[tuple[Any, ...]]:
    return _rows(pa.concat_tables(batches))


def test_append_tables_round_trip_with_pypaimon(tmp_path: Path) -> None:
    batches = [_batch(s) for s in range(5)]
    ops: list[dict[str, Any]] = []
    for name, (parts, options, creator) in CASES.items():
        wh = tmp_path / name
        if creator == "lakeops":
            catalog = Catalog(str(wh))
            catalog.create_database("db")
            table = catalog.create_table(
                "db.t", schema=SCHEMA, partition_keys=parts, options=options
            )
            assert isinstance(table, AppendTable)
            table.write(batches[0])
            table.write(batches[1])
        else:
            ops.append(
                {
                    "group": name,
                    "warehouse": wh,
                    "op": "create",
                    "table": "db.t",
                    "schema": SCHEMA,
                    "partition_keys": parts,
                    "options": options,
                }
            )
            for b in batches[:2]:
                ops.append(
                    {"group": name, "warehouse": wh, "op": "write", "table": "db.t", "data": b}
                )
        ops.append({"group": name, "warehouse": wh, "op": "read", "table": "db.t"})
    reads, errors = oracle_batch(ops)
    assert errors == {}
    for name in CASES:
        assert _rows(reads[name][0]) == _model(*batches[:2]), name

    # lakeops reads, appends, compacts fully
    ops = []
    for name in CASES:
        wh = tmp_path / name
        table = Catalog(str(wh)).get_table("db.t")
        assert isinstance(table, AppendTable)
        assert _rows(table.read()) == _model(*batches[:2]), name
        table.write(batches[2])
        before = sum(len(s.files) for s in table.splits())
        snapshot = table.compact(full=True)
        assert snapshot is not None and snapshot.commit_kind == "COMPACT", name
        assert sum(len(s.files) for s in table.splits()) < before, name
        assert _rows(table.read()) == _model(*batches[:3]), name
        ops.append({"group": name, "warehouse": wh, "op": "read", "table": "db.t"})
        ops.append(
            {"group": name, "warehouse": wh, "op": "write", "table": "db.t", "data": batches[3]}
        )
        ops.append({"group": name, "warehouse": wh, "op": "read", "table": "db.t"})
    reads, errors = oracle_batch(ops)
    assert errors == {}
    for name in CASES:
        assert _rows(reads[name][0]) == _model(*batches[:3]), name
        assert _rows(reads[name][1]) == _model(*batches[:4]), name

    # lakeops reads pypaimon's append after its own compaction, writes and compacts again
    ops = []
    for name in CASES:
        wh = tmp_path / name
        table = Catalog(str(wh)).get_table("db.t")
        assert _rows(table.read()) == _model(*batches[:4]), name
        table.write(batches[4])
        table.compact(full=True)
        assert _rows(table.read()) == _model(*batches), name
        ops.append({"group": name, "warehouse": wh, "op": "read", "table": "db.t"})
    reads, errors = oracle_batch(ops)
    assert errors == {}
    for name in CASES:
        assert _rows(reads[name][0]) == _model(*batches), name
