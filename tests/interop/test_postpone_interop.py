"""Postpone-bucket tables (``bucket = -2``) with pypaimon 2.1 both ways. The Java 0.9 oracle
predates postpone buckets (Paimon 1.1+), so pypaimon 2.1 judges — its batch writes into
``bucket-postpone``, its batch writes into real buckets (``postpone.batch-write-fixed-bucket``'s
builder) and its reads, which skip the postpone bucket as Paimon's do — together with a dict of
the last value per key (what every reader must see once the postponed rows are moved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format import binary_row
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [("dt", pa.string()), pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]
)
COLUMNS = [
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "v", "type": "STRING"},
]


def _rows(dt: str, ids: range, tag: str) -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA
    )


def _sorted(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def _model(*writes: tuple[str, range, str]) -> list[tuple[Any, ...]]:
    last: dict[tuple[str, int], str] = {}
    for dt, ids, tag in writes:
        last.update({(dt, i): f"{tag}{i}" for i in ids})
    return sorted((dt, i, v) for (dt, i), v in last.items())


def _counts(table: Any) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for e in table.store.live_entries(table.latest_snapshot()):
        dt = binary_row.deserialize(e.partition, table.schema.types_of(["dt"]))[0]
        out.setdefault(dt, set()).add(e.total_buckets)
    return out


def test_lakeops_moves_what_pypaimon_postponed(warehouse: Path) -> None:
    """pypaimon creates and writes a postpone table (into ``bucket-postpone``, and one batch
    into real buckets of partition ``b``); lakeops reads what pypaimon reads, writes, moves
    the postponed rows, and pypaimon reads the model; a second round keeps each partition's
    bucket count."""
    a1, a2, b1 = ("a", range(0, 30), "x"), ("a", range(20, 50), "y"), ("b", range(0, 10), "f")
    b2, c1 = ("b", range(5, 15), "w"), ("c", range(0, 8), "l")
    w = str(warehouse)
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": "db.t",
            "schema": COLUMNS,
            "partition_keys": ["dt"],
            "primary_keys": ["dt", "id"],
            # lakeops' writes stay postponed too (the default moves them at once)
            "options": {
                "bucket": "-2",
                "postpone.default-bucket-num": "3",
                "postpone.batch-write-fixed-bucket": "false",
            },
        },
        {"op": "write", "table": "db.t", "data": _rows(*a1)},
        {"op": "write", "table": "db.t", "data": _rows(*b1), "postpone_fixed_bucket": True},
        {"op": "write", "table": "db.t", "data": _rows(*a2)},
        {"op": "read", "table": "db.t"},
    ]
    (before,) = oracle_script(w, ops)
    assert _sorted(before) == _model(b1)  # only the real buckets are visible
    table = Catalog(w).get_table("db.t")
    assert _sorted(table.read()) == _model(b1)
    b_count = _counts(table)["b"]
    table.write(_rows(*b2))
    table.write(_rows(*c1))
    assert _sorted(table.read()) == _model(b1)
    table.compact()
    assert {dt: c for dt, c in _counts(table).items()} == {"a": {3}, "b": b_count, "c": {3}}
    expected = _model(a1, b1, a2, b2, c1)
    assert _sorted(table.read()) == expected
    a3 = ("a", range(45, 60), "z")
    ops = [
        {"op": "read", "table": "db.t"},
        {"op": "write", "table": "db.t", "data": _rows(*a3)},
    ]
    (after,) = oracle_script(w, ops)
    assert _sorted(after) == expected
    table = Catalog(w).get_table("db.t")
    table.compact()
    (last,) = oracle_script(w, [{"op": "read", "table": "db.t"}])
    assert _sorted(last) == _model(a1, b1, a2, b2, c1, a3) == _sorted(table.read())
    assert _counts(table)["a"] == {3}


def test_pypaimon_reads_a_postpone_table_lakeops_writes(warehouse: Path) -> None:
    """lakeops creates a postpone table and writes it: with ``postpone.batch-write-fixed-bucket``
    (Paimon's default) the rows are in real buckets when the write returns (ceil(40 / 16) = 3
    for the new partition), so pypaimon reads them; pypaimon writes its own postponed rows,
    which lakeops' compaction moves into the partition's 3 buckets; pypaimon reads the model."""
    w = str(warehouse)
    Catalog(w).create_database("db")
    table = Catalog(w).create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "-2", "postpone.target-row-num-per-bucket": "16"},
    )
    a1, a2 = ("a", range(0, 40), "x"), ("a", range(30, 45), "p")
    table.write(_rows(*a1))
    assert _counts(table) == {"a": {3}}
    (seen,) = oracle_script(
        w,
        [
            {"op": "read", "table": "db.t"},
            {"op": "write", "table": "db.t", "data": _rows(*a2)},
        ],
    )
    assert _sorted(seen) == _model(a1)
    table = Catalog(w).get_table("db.t")
    assert _sorted(table.read()) == _model(a1)  # pypaimon's rows are postponed
    table.compact()
    assert _counts(table) == {"a": {3}}
    (read,) = oracle_script(w, [{"op": "read", "table": "db.t"}])
    assert _sorted(read) == _model(a1, a2) == _sorted(table.read())


def test_deletion_vector_postpone_table_moved_and_read_by_pypaimon(warehouse: Path) -> None:
    """``deletion-vectors.enabled`` on a postpone table (Paimon's validation allows it):
    pypaimon creates and writes it (postponed and real-bucket rows); lakeops writes, moves the
    postponed rows and compacts them up, marking the rows they supersede in the files it keeps;
    pypaimon — whose reads of a deletion-vector table skip level 0 and trust the vectors —
    reads the model after each round, and lakeops reads what pypaimon wrote next."""
    w = str(warehouse)
    a1, b1, a2 = ("a", range(0, 40), "x"), ("b", range(0, 20), "f"), ("a", range(30, 60), "y")
    options = {
        "bucket": "-2",
        "deletion-vectors.enabled": "true",
        "postpone.default-bucket-num": "2",
    }
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": "db.t",
            "schema": COLUMNS,
            "partition_keys": ["dt"],
            "primary_keys": ["dt", "id"],
            "options": options,
        },
        {"op": "write", "table": "db.t", "data": _rows(*a1)},
        {"op": "write", "table": "db.t", "data": _rows(*b1), "postpone_fixed_bucket": True},
    ]
    oracle_script(w, ops)
    table = Catalog(w).get_table("db.t")
    table.compact()
    (first,) = oracle_script(w, [{"op": "read", "table": "db.t"}])
    assert _sorted(first) == _model(a1, b1) == _sorted(table.read())
    b2 = ("b", range(10, 30), "w")
    table.write(_rows(*a2))
    table.write(_rows(*b2))
    a3 = ("a", range(0, 5), "z")
    (unmoved,) = oracle_script(
        w,
        [
            {"op": "read", "table": "db.t"},
            {"op": "write", "table": "db.t", "data": _rows(*a3)},
        ],
    )
    # lakeops' writes were moved and lifted at once (the default fixed-bucket batch write)
    assert _sorted(unmoved) == _model(a1, b1, a2, b2)
    table = Catalog(w).get_table("db.t")
    table.compact()
    expected = _model(a1, b1, a2, b2, a3)
    (last,) = oracle_script(w, [{"op": "read", "table": "db.t"}])
    assert _sorted(last) == expected == _sorted(table.read())
    latest = table.latest_snapshot()
    assert 0 not in {e.file.level for e in table.store.live_entries(latest)}
    # a3 superseded rows that stay in kept files: pypaimon's read relied on the vectors
    assert table.store.index_entries(latest), "no deletion vectors were written"


def test_merge_on_read_of_what_pypaimon_postponed(warehouse: Path) -> None:
    """A ``postpone.merge-on-read`` table pypaimon writes: rows in real buckets of partition
    ``a`` (its fixed-bucket batch write), then postponed rows over them from two writes and a
    partition only postponed. lakeops' batch reads and lookups merge the postponed rows in
    (the model), pypaimon's reads — which leave the postpone bucket out — do not; once lakeops'
    compaction has moved them, pypaimon reads the model too."""
    a1, a2 = ("a", range(0, 30), "x"), ("a", range(20, 40), "y")
    a3, b1 = ("a", range(35, 45), "z"), ("b", range(0, 10), "f")
    w = str(warehouse)
    options = {"bucket": "-2", "postpone.default-bucket-num": "3", "postpone.merge-on-read": "true"}
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": "db.t",
            "schema": COLUMNS,
            "partition_keys": ["dt"],
            "primary_keys": ["dt", "id"],
            "options": options,
        },
        {"op": "write", "table": "db.t", "data": _rows(*a1), "postpone_fixed_bucket": True},
        {"op": "write", "table": "db.t", "data": _rows(*a2)},
        {"op": "write", "table": "db.t", "data": _rows(*b1)},
        {"op": "write", "table": "db.t", "data": _rows(*a3)},
        {"op": "read", "table": "db.t"},
    ]
    (theirs,) = oracle_script(w, ops)
    assert _sorted(theirs) == _model(a1)
    table = Catalog(w).get_table("db.t")
    expected = _model(a1, a2, b1, a3)
    assert _sorted(table.read()) == expected
    keys = pa.table({"dt": ["a", "a", "a", "b"], "id": [5, 25, 38, 9]})
    got = sorted((r["dt"], r["id"], r["v"]) for r in table.lookup(keys).to_pylist())
    assert got == [
        r for r in expected if (r[0], r[1]) in {("a", 5), ("a", 25), ("a", 38), ("b", 9)}
    ]
    table.compact()
    (moved,) = oracle_script(w, [{"op": "read", "table": "db.t"}])
    assert _sorted(moved) == expected == _sorted(table.read())
