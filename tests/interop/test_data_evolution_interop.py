"""Data-evolution and row-tracking append tables written by pypaimon 2.1 (several commits,
updates of columns by row id, a column-subset append, a column added) read by lakeops exactly
as pypaimon reads them and as a plain model of the rows says. (lakeops' writes to such tables:
test_row_tracking_write_interop.)"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

DEC = pa.decimal128(38, 10)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("p", pa.string()),
        ("s", pa.string()),
        ("d", pa.float64()),
        ("dec", DEC),
        ("ts", pa.timestamp("us")),
    ]
)
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
BIG = Decimal("9999999999999999999999999999.9999999999")
NAMES = list(SCHEMA.names)


def _rows(ids: list[int]) -> list[dict[str, Any]]:
    """Awkward rows: nulls, NaN, -0.0, empty and non-ASCII strings, extreme values."""
    strings = ["", "é✓", None, "a", "zz", "日本"]
    doubles = [float("nan"), -0.0, None, 1e308, -1.5, 0.0]
    decs = [
        BIG,
        Decimal("-" + str(BIG)),
        None,
        Decimal("0E-10"),
        Decimal("1.0000000001"),
        Decimal("-0.5"),
    ]
    stamps = [
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59, 999999),
        datetime(1970, 1, 1),
        datetime(1969, 12, 31, 23, 59, 59, 999999),
        None,
        datetime(2024, 2, 29, 12, 0, 0, 1),
    ]
    return [
        {
            "id": i,
            "p": "x" if i % 2 else "y",
            "s": strings[i % 6],
            "d": doubles[i % 6],
            "dec": decs[i % 6],
            "ts": stamps[i % 6],
        }
        for i in ids
    ]


def _table(rows: list[dict[str, Any]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _norm(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows comparable with NaN and -0.0 (repr keeps the sign of zero), in a fixed order."""

    def cell(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else repr(v)
        return v

    out = [tuple((k, cell(v)) for k, v in sorted(r.items())) for r in rows]
    return sorted(out, key=repr)


#: a string above every original value of ``s`` (a file's stale statistics exclude it)
HIGH = "\uffffupdated"


def _updates(model: dict[int, dict[str, Any]], row_ids: list[int], **values: Any) -> pa.Table:
    """Apply an update by row id to the model; the table pypaimon is given for it."""
    for rid in row_ids:
        model[rid].update(values)
    cols: dict[str, Any] = {"_ROW_ID": pa.array(row_ids, pa.int64())}
    for k, v in values.items():
        t = EXTRA.type if k == "extra" else SCHEMA.field(k).type
        cols[k] = pa.array([v] * len(row_ids), t)
    return pa.table(cols)


EXTRA = pa.field("extra", pa.string())
SMALL = pa.schema([("id", pa.int64()), ("a", pa.string())])


def _side_tables() -> list[dict[str, Any]]:
    """pypaimon ops for three small tables: row tracking alone (two commits), data evolution
    with a partially updated column renamed afterwards, data evolution with a row deleted."""
    ops: list[dict[str, Any]] = []
    evolution = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
    for name, options in (
        ("db.tracked", {"row-tracking.enabled": "true"}),
        ("db.renamed", evolution),
        ("db.deleted", {**evolution, "deletion-vectors.enabled": "true"}),
    ):
        ops.append(
            {"op": "create", "table": name, "schema": SMALL, "primary_keys": [], "options": options}
        )
        data = pa.table({"id": [1, 2, 3], "a": ["x", None, "é"]}, schema=SMALL)
        ops.append({"op": "write", "table": name, "data": data})
    ops.append({"op": "write", "table": "db.tracked", "data": pa.table({"id": [4], "a": ["w"]})})
    ops.append(
        {
            "op": "update",
            "table": "db.renamed",
            "update_cols": ["a"],
            "data": pa.table({"_ROW_ID": pa.array([2], pa.int64()), "a": ["U"]}),
        }
    )
    ops.append(
        {
            "op": "alter",
            "table": "db.renamed",
            "changes": [{"op": "rename", "field": "a", "new_name": "b"}],
        }
    )
    ops.append({"op": "delete", "table": "db.deleted", "row_ids": [1]})
    ops.append(
        {"op": "read", "table": "db.tracked", "columns": ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]}
    )
    return ops


def _check_side_tables(catalog: Catalog, tracked: pa.Table) -> None:
    """Row tracking alone: lakeops = pypaimon = model. Renamed: lakeops = model, where
    pypaimon 2.1 differs (it matches a partial file's write columns by the current name, so
    the renamed column of the updated row reads its old value; Java Paimon matches them by
    field id through the file's own schema, as lakeops does). Deleted rows (deletion
    vectors, not applied by lakeops yet): the read is refused, not wrong."""
    want = [
        {"id": 1, "_ROW_ID": 0, "_SEQUENCE_NUMBER": 1},
        {"id": 2, "_ROW_ID": 1, "_SEQUENCE_NUMBER": 1},
        {"id": 3, "_ROW_ID": 2, "_SEQUENCE_NUMBER": 1},
        {"id": 4, "_ROW_ID": 3, "_SEQUENCE_NUMBER": 2},
    ]
    assert sorted(tracked.to_pylist(), key=lambda r: r["id"]) == want
    table = catalog.get_table("db.tracked")
    got = table.read(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"])
    assert got.schema == tracked.schema
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == want
    batches = list(table.to_batches(columns=["_ROW_ID", "id"], batch_rows=2))
    assert [b.num_rows for b in batches] == [2, 1, 1]
    streamed = pa.Table.from_batches(batches).to_pylist()
    assert sorted(streamed, key=lambda r: r["id"]) == [
        {"_ROW_ID": r["_ROW_ID"], "id": r["id"]} for r in want
    ]
    renamed = catalog.get_table("db.renamed").read()
    assert sorted(renamed.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "b": "x"},
        {"id": 2, "b": None},
        {"id": 3, "b": "U"},
    ]
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        catalog.get_table("db.deleted").read()


def test_data_evolution_table_reads_as_pypaimon_and_the_model(warehouse) -> None:
    """Commits (one partition each, so row ids follow write order): rows 0-3, rows 4-8, s of
    rows 0/5/7 updated, d and dec of rows 1/5, a column-subset append (id, p, d) of rows 9-10,
    a column added and set on rows 2/6, s of row 5 again. lakeops = pypaimon = model on
    several snapshots, with projection, the system columns and filters that stale statistics
    of a sibling file would get wrong."""
    name = "db.de"
    model: dict[int, dict[str, Any]] = {}
    seq: dict[int, int] = {}  # row id -> sequence number (the snapshot that last wrote its range)
    ranges = [range(0, 4), range(4, 9), range(9, 11)]
    history: dict[int, tuple[dict[int, dict[str, Any]], dict[int, int]]] = {}
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": name,
            "schema": SCHEMA,
            "partition_keys": ["p"],
            "primary_keys": [],
            "options": OPTIONS,
        }
    ]
    snapshot = 0

    def commit(op: dict[str, Any], touched: list[int]) -> None:
        nonlocal snapshot
        snapshot += 1
        ops.append({"table": name, **op})
        for r in ranges:
            if any(t in r for t in touched):
                seq.update({rid: snapshot for rid in r})
        history[snapshot] = ({k: dict(v) for k, v in model.items()}, dict(seq))

    for ids, part in ((range(0, 4), "y"), (range(4, 9), "x")):
        rows = [dict(r, p=part) for r in _rows(list(ids))]
        model.update({r["id"]: r for r in rows})  # row id = id: one partition per commit
        commit({"op": "write", "data": _table(rows)}, list(ids))
    commit(
        {"op": "update", "update_cols": ["s"], "data": _updates(model, [0, 5, 7], s=HIGH)},
        [0, 5, 7],
    )
    commit(
        {
            "op": "update",
            "update_cols": ["d", "dec"],
            "data": _updates(model, [1, 5], d=-2.5, dec=Decimal("-0.0000000001")),
        },
        [1, 5],
    )
    subset = [{"id": i, "p": "x", "d": float(i) / 4} for i in (9, 10)]
    for r in subset:
        model[r["id"]] = {**{c: None for c in NAMES}, **r}
    commit(
        {
            "op": "write",
            "write_cols": ["id", "p", "d"],
            "data": pa.Table.from_pylist(
                subset, schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("p"), SCHEMA.field("d")])
            ),
        },
        [9, 10],
    )
    ops.append(
        {
            "op": "alter",
            "table": name,
            "changes": [{"op": "add", "field": "extra", "type": "STRING"}],
        }
    )
    for row in model.values():
        row["extra"] = None
    commit(
        {"op": "update", "update_cols": ["extra"], "data": _updates(model, [2, 6], extra="ñ")},
        [2, 6],
    )
    commit({"op": "update", "update_cols": ["s"], "data": _updates(model, [5], s="last")}, [5])
    checked = [3, 5, snapshot]
    system = ["id", "s", "_ROW_ID", "_SEQUENCE_NUMBER"]
    ops += [{"op": "read", "table": name, "snapshot_id": sid} for sid in checked]
    ops.append({"op": "read", "table": name, "columns": system})
    ops += _side_tables()
    reads = oracle_script(warehouse, ops)
    _check_side_tables(Catalog(str(warehouse)), reads[-1])
    reads = reads[:-1]

    table = Catalog(str(warehouse)).get_table(name)
    for sid, oracle in zip(checked, reads[:-1], strict=True):
        rows, _ = history[sid]
        want = [{c: r.get(c) for c in oracle.column_names} for r in rows.values()]
        got = table.read(snapshot_id=sid)  # in the current schema: extra may be more
        assert got.column_names[: oracle.num_columns] == oracle.column_names
        want = [{c: r.get(c) for c in got.column_names} for r in rows.values()]
        assert _norm(oracle.to_pylist()) == _norm(
            [{c: r[c] for c in oracle.column_names} for r in want]
        ), sid
        assert _norm(got.to_pylist()) == _norm(want), sid
    rows, seqs = history[snapshot]
    want_system = [
        {"id": r["id"], "s": r["s"], "_ROW_ID": rid, "_SEQUENCE_NUMBER": seqs[rid]}
        for rid, r in rows.items()
    ]
    assert _norm(reads[-1].to_pylist()) == _norm(want_system)
    got = table.read(columns=system)
    assert got.schema == reads[-1].schema
    assert _norm(got.to_pylist()) == _norm(want_system)
    # filters: on an updated column (the original file's statistics exclude the new value),
    # on a column of the original file, on the system columns; streamed as well
    filters = [
        (pc.field("s") == HIGH, lambda rid, r: r["s"] == HIGH),
        (pc.field("id") == 1, lambda rid, r: r["id"] == 1),
        (pc.field("d") < 0, lambda rid, r: r["d"] is not None and r["d"] < 0),
        (pc.field("_ROW_ID") >= 5, lambda rid, r: rid >= 5),
        (pc.field("_SEQUENCE_NUMBER") == snapshot, lambda rid, r: seqs[rid] == snapshot),
    ]
    for expr, keep in filters:
        want = [dict(r) for rid, r in rows.items() if keep(rid, r)]
        assert _norm(table.read(filter=expr).to_pylist()) == _norm(want), str(expr)
        streamed = pa.Table.from_batches(list(table.to_batches(filter=expr, batch_rows=2)))
        assert _norm(streamed.to_pylist()) == _norm(want), str(expr)
    sub = table.read(columns=["extra", "_ROW_ID"], filter=pc.field("extra") == "ñ")
    assert sorted(sub.column("_ROW_ID").to_pylist()) == [2, 6]
