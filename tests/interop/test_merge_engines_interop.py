"""Partial-update and aggregation tables agree with pypaimon 2.1, in both directions.

Only what pypaimon supports is compared: partial-update without sequence groups, aggregation
with sum / max / min / listagg, ``sequence.field`` and ``rowkind.field``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

PU_SCHEMA = pa.schema(
    [("id", pa.int64()), ("a", pa.string()), ("b", pa.int32()), ("c", pa.float64())]
)
AGG_SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("total", pa.int64()),
        ("hi", pa.int32()),
        ("lo", pa.float64()),
        ("tags", pa.string()),
        ("op", pa.string()),
    ]
)
AGG_OPTIONS = {
    "bucket": "2",
    "merge-engine": "aggregation",
    "rowkind.field": "op",
    "fields.total.aggregate-function": "sum",
    "fields.hi.aggregate-function": "max",
    "fields.lo.aggregate-function": "min",
    "fields.tags.aggregate-function": "listagg",
}


def _sorted(t: pa.Table, keys: list[str]) -> list[dict]:
    return t.sort_by([(k, "ascending") for k in keys]).to_pylist()


def _pu_batches() -> list[pa.Table]:
    return [
        pa.table(
            {"id": [1, 2, 3], "a": ["x", None, "z"], "b": [1, 2, None], "c": [None, 0.5, 1.5]},
            schema=PU_SCHEMA,
        ),
        pa.table(
            {"id": [1, 3, 4], "a": [None, "Z", "w"], "b": [10, None, 4], "c": [9.0, None, None]},
            schema=PU_SCHEMA,
        ),
        pa.table(
            {"id": [2, 1], "a": ["y", None], "b": [None, None], "c": [None, 7.5]}, schema=PU_SCHEMA
        ),
    ]


def _agg_batches() -> list[pa.Table]:
    def t(rows: list[tuple]) -> pa.Table:
        return pa.Table.from_pylist(
            [dict(zip(AGG_SCHEMA.names, r, strict=True)) for r in rows], schema=AGG_SCHEMA
        )

    return [
        t(
            [
                ("d1", 1, 10, 5, 1.5, "a", "+I"),
                ("d1", 2, 1, 1, 0.5, "b", "+I"),
                ("d2", 1, 7, 9, None, None, "+I"),
            ]
        ),
        t([("d1", 1, 5, 3, -2.0, "c", "+I"), ("d2", 1, None, 11, 4.0, "x", "+I")]),
        t([("d1", 2, 4, 0, 0.1, "e", "+I"), ("d1", 1, 1, 2, 9.0, "f", "+U")]),
    ]


def test_partial_update_written_by_lakeops(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.pu",
        schema=PU_SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "merge-engine": "partial-update"},
    )
    for batch in _pu_batches():
        table.write(batch)
    ours = table.read()
    assert _sorted(ours, ["id"])[0] == {"id": 1, "a": "x", "b": 10, "c": 7.5}
    assert _sorted(oracle_read(warehouse, "db.pu"), ["id"]) == _sorted(ours, ["id"])


def test_first_row_written_in_many_flushes_by_lakeops(warehouse) -> None:
    """One write that flushes many times into a first-row table, whose later flushes repeat
    the earlier flushes' keys and the table's: every level-0 file is moved up and compacted
    again within the write. pypaimon reads every snapshot; the latest holds each key's first
    row (a plain model)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("s", pa.string())])
    table = catalog.create_table(
        "db.fr",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "first-row", "write-buffer-size": "2 kb"},
    )

    def block(low: int, high: int, tag: str) -> pa.Table:
        ids = list(range(low, high))
        return pa.table({"id": ids, "s": [f"{tag}{i:06d}" * 3 for i in ids]}, schema=schema)

    inputs = [
        block(0, 100, "a"),
        pa.concat_tables([block(5000, 5200, "b"), block(5000, 5200, "c"), block(0, 100, "d")]),
    ]
    for batch in inputs:
        table.write(batch)
    first: dict[int, str] = {}
    for batch in inputs:
        for row in batch.to_pylist():
            first.setdefault(row["id"], row["s"])
    expected = [{"id": k, "s": v} for k, v in sorted(first.items())]
    assert _sorted(oracle_read(warehouse, "db.fr"), ["id"]) == expected
    for snapshot in table.snapshots():
        theirs = oracle_read(warehouse, "db.fr", snapshot.id)
        assert _sorted(theirs, ["id"]) == _sorted(table.read(snapshot_id=snapshot.id), ["id"])


def test_partial_update_written_by_pypaimon(warehouse) -> None:
    oracle_create(
        warehouse,
        "db.pu",
        PU_SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "merge-engine": "partial-update"},
    )
    batches = _pu_batches()
    oracle_write(warehouse, "db.pu", batches[0])
    oracle_write(warehouse, "db.pu", batches[1])
    table = Catalog(str(warehouse)).get_table("db.pu")
    assert _sorted(table.read(), ["id"]) == _sorted(oracle_read(warehouse, "db.pu"), ["id"])
    table.write(batches[2])
    assert _sorted(oracle_read(warehouse, "db.pu"), ["id"]) == _sorted(table.read(), ["id"])


def test_aggregation_written_by_lakeops(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.agg",
        schema=AGG_SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options=AGG_OPTIONS,
    )
    for batch in _agg_batches():
        table.write(batch)
    ours = _sorted(table.read(), ["dt", "id"])
    assert ours[0] == {
        "dt": "d1",
        "id": 1,
        "total": 16,
        "hi": 5,
        "lo": -2.0,
        "tags": "a,c,f",
        "op": "+U",
    }
    assert _sorted(oracle_read(warehouse, "db.agg"), ["dt", "id"]) == ours


def test_aggregation_written_by_pypaimon(warehouse) -> None:
    oracle_create(
        warehouse,
        "db.agg",
        AGG_SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options=AGG_OPTIONS,
    )
    batches = _agg_batches()
    oracle_write(warehouse, "db.agg", batches[0])
    oracle_write(warehouse, "db.agg", batches[1])
    table = Catalog(str(warehouse)).get_table("db.agg")
    assert _sorted(table.read(), ["dt", "id"]) == _sorted(
        oracle_read(warehouse, "db.agg"), ["dt", "id"]
    )
    table.write(batches[2])
    assert _sorted(oracle_read(warehouse, "db.agg"), ["dt", "id"]) == _sorted(
        table.read(), ["dt", "id"]
    )


# ----------------------------------------------------- merge_map_with_keytime
MMK_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("m", pa.map_(pa.string(), pa.struct([("v", pa.string()), ("ts", pa.string())]))),
    ]
)
MMK_OPTIONS = {
    "bucket": "1",
    "merge-engine": "aggregation",
    "fields.m.aggregate-function": "merge_map_with_keytime",
    "fields.m.ts-field": "ts",
}


def _mmk_batches() -> list[pa.Table]:
    # timestamps compare as strings (Java String.compareTo): "050" < "100" but "50" > "100"
    def row(v: str | None, ts: str | None) -> dict:
        return {"v": v, "ts": ts}

    batches = [
        [
            (1, [("name", row("iPhone", "100")), ("color", row("Black", "100"))]),
            (2, [("a", row("x", None))]),
        ],
        [
            (1, [("name", row("iPad", "200")), ("price", row("999", "200"))]),
            (2, [("a", row("y", "5")), ("b", row("z", "7"))]),
        ],
        [
            (1, [("color", row("White", "050")), ("price", None)]),
            (2, [("b", row("w", "7")), ("a", row("q", None))]),
        ],
    ]
    return [
        pa.Table.from_pylist([{"id": i, "m": m} for i, m in b], schema=MMK_SCHEMA) for b in batches
    ]


def _mmk(t: pa.Table) -> dict:
    return {r["id"]: dict(r["m"]) for r in t.to_pylist()}


MMK_EXPECTED = {
    1: {"name": {"v": "iPad", "ts": "200"}, "color": {"v": "Black", "ts": "100"}},
    2: {"a": {"v": "y", "ts": "5"}, "b": {"v": "z", "ts": "7"}},
}


def test_merge_map_with_keytime_written_by_lakeops(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.mmk", schema=MMK_SCHEMA, primary_keys=["id"], options=MMK_OPTIONS
    )
    for batch in _mmk_batches():
        table.write(batch)
    assert _mmk(table.read()) == MMK_EXPECTED
    assert _mmk(oracle_read(warehouse, "db.mmk")) == MMK_EXPECTED
    table.compact(full=True)
    assert _mmk(oracle_read(warehouse, "db.mmk")) == MMK_EXPECTED


def test_merge_map_with_keytime_written_by_pypaimon(warehouse) -> None:
    oracle_create(warehouse, "db.mmk", MMK_SCHEMA, primary_keys=["id"], options=MMK_OPTIONS)
    for batch in _mmk_batches():
        oracle_write(warehouse, "db.mmk", batch)
    assert _mmk(oracle_read(warehouse, "db.mmk")) == MMK_EXPECTED
    assert _mmk(Catalog(str(warehouse)).get_table("db.mmk").read()) == MMK_EXPECTED


def test_first_row_written_by_java_then_lakeops_read_by_java(warehouse, java_classpath) -> None:
    """Java Paimon 0.9 writes a first-row table (its own lookup compactions), lakeops writes
    into it in many flushes whose keys repeat Java's and each other's, Java compacts and writes
    again, and each side reads each key's first row (a plain model) at every step: Java reads
    the levels above 0 without merging them, so a key must be in one of them."""
    from lakeops.format.schema_change import SetOption
    from tests.interop.java_oracle import json_rows, run_ops

    schema = pa.schema([pa.field("id", pa.int64(), False), ("s", pa.string())])

    def block(low: int, high: int, tag: str) -> pa.Table:
        ids = list(range(low, high))
        return pa.table({"id": ids, "s": [f"{tag}{i:06d}" * 3 for i in ids]}, schema=schema)

    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "s", "type": "STRING"}]
    options = {"bucket": "1", "merge-engine": "first-row"}
    java_first = [block(0, 100, "a"), block(50, 150, "b")]
    ops = [
        {"op": "create", "table": "db.fr", "fields": fields, "primary_keys": ["id"],
         "partition_keys": [], "options": options},
        *[{"op": "write", "table": "db.fr", "rows": json_rows(b)} for b in java_first],
    ]  # fmt: skip
    run_ops(java_classpath, warehouse, ops)
    table = Catalog(str(warehouse)).get_table("db.fr")
    # lakeops flushes every few rows (Java's writer needs three 64 kb pages: set back after)
    table.alter([SetOption("write-buffer-size", "2 kb")])
    ours = pa.concat_tables([block(200, 260, "c"), block(200, 260, "d"), block(0, 40, "e")])
    table = Catalog(str(warehouse)).get_table("db.fr")
    table.write(ours)
    table.alter([SetOption("write-buffer-size", "256 mb")])
    java_last = block(250, 280, "f")
    first: dict[int, str] = {}
    for batch in [*java_first, ours, java_last]:
        for row in batch.to_pylist():
            first.setdefault(row["id"], row["s"])

    def model(upto: int) -> list[dict]:
        return [{"id": k, "s": v} for k, v in sorted(first.items()) if k < upto]

    (after_ours,) = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.fr"}])
    assert sorted(after_ours["rows"], key=lambda r: r["id"]) == model(260)
    assert _sorted(table.read(), ["id"]) == model(260)
    ops = [
        {"op": "compact", "table": "db.fr"},
        {"op": "write", "table": "db.fr", "rows": json_rows(java_last)},
        {"op": "compact", "table": "db.fr"},
        {"op": "read", "table": "db.fr"},
    ]
    final = run_ops(java_classpath, warehouse, ops)[-1]
    assert sorted(final["rows"], key=lambda r: r["id"]) == model(280)
    assert _sorted(Catalog(str(warehouse)).get_table("db.fr").read(), ["id"]) == model(280)
