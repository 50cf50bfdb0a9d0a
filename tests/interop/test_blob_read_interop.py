"""BLOB columns as pypaimon 2.1 writes them (type BLOB, values in ``.blob`` files beside the
Parquet files, one BLOB file rolled into several by ``blob.target-file-size``) read by lakeops
exactly as pypaimon reads them and as a plain model of the rows says (the Java 0.9 oracle
knows no BLOB type: Paimon 1.x). Nulls, empty values, binary zeros and large values; a
projection without the BLOB column, one with only it, the system columns and a filter.
lakeops then appends rows with BLOB values (its ``.blob`` files rolled at the table's target)
and pypaimon reads every row, lakeops' included, as the model says; an update of the BLOB
column is refused by name, the table left byte-identical; a compaction merges data files of
consecutive row ids and leaves the ``.blob`` files, and pypaimon reads the same rows."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("pic", pa.large_binary())])
OPTIONS = {
    "row-tracking.enabled": "true",
    "data-evolution.enabled": "true",
    "blob-field": "pic",
    "blob.target-file-size": "1 kb",
}


def _value(i: int) -> bytes | None:
    kinds = [None, b"", b"\x00\x01\x00", bytes(range(256)) * (i % 7), f"v{i}".encode() * 300]
    return kinds[i % len(kinds)]


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_blob_tables_pypaimon_writes_read_exactly(warehouse: Path) -> None:
    name = "db.blobs"
    model: dict[int, dict[str, Any]] = {}  # row id -> row (one partition per commit)
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
    next_id = 0
    for ids, part in ((range(0, 12), "a"), (range(12, 15), "b"), (range(15, 23), "a")):
        rows = [{"id": i, "p": part, "pic": _value(i)} for i in ids]
        for r in rows:
            model[next_id] = r
            next_id += 1
        ops.append({"op": "write", "table": name, "data": pa.Table.from_pylist(rows, SCHEMA)})
    cols = ["id", "p", "pic", "_ROW_ID"]
    ops.append({"op": "read", "table": name, "columns": cols})
    (theirs,) = oracle_script(warehouse, ops)
    want = sorted(({**r, "_ROW_ID": rid} for rid, r in model.items()), key=lambda r: r["_ROW_ID"])
    assert sorted(theirs.to_pylist(), key=lambda r: r["_ROW_ID"]) == want

    table = Catalog(str(warehouse)).get_table(name)
    blob_files = [f for s in table.splits() for f in s.files if f.file_name.endswith(".blob")]
    assert len(blob_files) > 3  # (the fixture: some BLOB file rolled into several)
    got = table.read(columns=cols)
    assert got.schema.field("pic").type == pa.large_binary()
    assert sorted(got.to_pylist(), key=lambda r: r["_ROW_ID"]) == want
    only = table.read(columns=["pic", "_ROW_ID"])
    assert sorted(only.to_pylist(), key=lambda r: r["_ROW_ID"]) == [
        {"pic": r["pic"], "_ROW_ID": r["_ROW_ID"]} for r in want
    ]
    assert sorted(table.read(columns=["id"]).column("id").to_pylist()) == list(range(23))
    filtered = table.read(columns=["id", "pic"], filter=pc.field("id") >= 20)
    assert sorted(filtered.to_pylist(), key=lambda r: r["id"]) == [
        {"id": r["id"], "pic": r["pic"]} for r in want if r["id"] >= 20
    ]
    streamed = pa.Table.from_batches(list(table.to_batches(columns=cols, batch_rows=5)))
    assert sorted(streamed.to_pylist(), key=lambda r: r["_ROW_ID"]) == want

    before = _tree(warehouse)
    assert table.compact(full=True) is None  # no two groups of a partition follow each other
    assert _tree(warehouse) == before

    # lakeops appends: a data file of id and p, then the .blob files of pic (rolled at 1 kb)
    mine = [{"id": i, "p": "b", "pic": _value(i)} for i in range(30, 48)]
    old = {e.file.file_name for e in table.store.live_entries(table.latest_snapshot())}
    table.write(pa.Table.from_pylist(mine, SCHEMA))
    for r in mine:
        model[next_id] = r
        next_id += 1
    want = sorted(({**r, "_ROW_ID": rid} for rid, r in model.items()), key=lambda r: r["_ROW_ID"])
    entries = table.store.live_entries(table.latest_snapshot())
    new = [e.file for e in entries if e.file.file_name not in old]
    assert sum(f.file_name.endswith(".blob") for f in new) > 1  # rolled
    assert [f.write_cols for f in new if not f.file_name.endswith(".blob")] == [("id", "p")]
    assert sorted(table.read(columns=cols).to_pylist(), key=lambda r: r["_ROW_ID"]) == want
    (after,) = oracle_script(warehouse, [{"op": "read", "table": name, "columns": cols}])
    assert sorted(after.to_pylist(), key=lambda r: r["_ROW_ID"]) == want
    # pypaimon appends after lakeops, and reads on
    theirs_too = [{"id": i, "p": "a", "pic": _value(i)} for i in range(50, 55)]
    ops = [
        {"op": "write", "table": name, "data": pa.Table.from_pylist(theirs_too, SCHEMA)},
        {"op": "read", "table": name, "columns": cols},
    ]
    for r in theirs_too:
        model[next_id] = r
        next_id += 1
    (last,) = oracle_script(warehouse, ops)
    want = sorted(({**r, "_ROW_ID": rid} for rid, r in model.items()), key=lambda r: r["_ROW_ID"])
    assert sorted(last.to_pylist(), key=lambda r: r["_ROW_ID"]) == want

    # lakeops appends to a after pypaimon's rows, then compacts: the two data files (ids
    # 41-45, 46-51) become one holding id and p; the .blob files stay and belong to it
    again = [{"id": i, "p": "a", "pic": _value(i)} for i in range(60, 66)]
    table = Catalog(str(warehouse)).get_table(name)
    table.write(pa.Table.from_pylist(again, SCHEMA))
    for r in again:
        model[next_id] = r
        next_id += 1
    blobs = {e.file.file_name for e in table.store.live_entries(table.latest_snapshot())}
    blobs = {n for n in blobs if n.endswith(".blob")}
    assert table.compact(full=True) is not None
    entries = table.store.live_entries(table.latest_snapshot())
    assert {e.file.file_name for e in entries if e.file.file_name.endswith(".blob")} == blobs
    merged = [e.file for e in entries if e.file.file_source == 1]
    assert [(f.first_row_id, f.row_count, f.write_cols) for f in merged] == [
        (41, 11, ("id", "p", "_ROW_ID", "_SEQUENCE_NUMBER"))
    ]
    want = sorted(({**r, "_ROW_ID": rid} for rid, r in model.items()), key=lambda r: r["_ROW_ID"])
    assert sorted(table.read(columns=cols).to_pylist(), key=lambda r: r["_ROW_ID"]) == want
    (compacted,) = oracle_script(warehouse, [{"op": "read", "table": name, "columns": cols}])
    assert sorted(compacted.to_pylist(), key=lambda r: r["_ROW_ID"]) == want


def test_blob_updates_both_ways(warehouse: Path) -> None:
    """Updates of a BLOB column by row id: pypaimon updates some rows (a ``.blob`` file up to
    the last row updated, placeholders for the rows it leaves), lakeops reads every row's
    newest value; lakeops updates others — rows pypaimon's update left as placeholders, a row
    it set, a value set to null — and pypaimon reads the model; an update of ``pic`` and ``id``
    together writes both files; pypaimon updates after lakeops, and both read on. Rows of the
    second file of the rolled write keep sequence numbers above the snapshot ids, so an update
    of them would not be read: lakeops refuses it, writing nothing."""
    name = "db.updates"
    rows = [{"id": i, "p": "a", "pic": _value(i)} for i in range(14)]
    model = {rid: dict(r) for rid, r in enumerate(rows)}
    cols = ["id", "p", "pic", "_ROW_ID"]

    def want() -> list[dict[str, Any]]:
        return [{**r, "_ROW_ID": rid} for rid, r in sorted(model.items())]

    def got(t: pa.Table) -> list[dict[str, Any]]:
        return sorted(t.to_pylist(), key=lambda r: r["_ROW_ID"])

    def update(data: dict[str, list[Any]]) -> pa.Table:
        names = list(data)[1:]
        for rid, *values in zip(*data.values(), strict=True):
            model[rid].update(dict(zip(names, values, strict=True)))
        fields = [pa.field("_ROW_ID", pa.int64(), False), *(SCHEMA.field(c) for c in names)]
        return pa.Table.from_pydict(data, pa.schema(fields))

    theirs = update({"_ROW_ID": [2, 4], "pic": [b"py-2", b"py-4" * 50]})
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": name,
            "schema": SCHEMA,
            "partition_keys": ["p"],
            "primary_keys": [],
            "options": OPTIONS,
        },
        {"op": "write", "table": name, "data": pa.Table.from_pylist(rows, SCHEMA)},
        {"op": "update", "table": name, "data": theirs, "update_cols": ["pic"]},
        {"op": "read", "table": name, "columns": cols},
    ]
    (seen,) = oracle_script(warehouse, ops)
    assert got(seen) == want()
    table = Catalog(str(warehouse)).get_table(name)
    assert got(table.read(columns=cols)) == want()

    before = _tree(warehouse)
    late = pa.table(
        {"_ROW_ID": pa.array([9], pa.int64()), "pic": pa.array([b"z"], pa.large_binary())}
    )
    with pytest.raises(UnsupportedFeatureError, match=r"sequence number \d+"):
        table.update_columns(late)
    assert _tree(warehouse) == before

    # lakeops: rows 0 and 3 (placeholders in pypaimon's file), 4 (pypaimon's), 1 to null
    table.update_columns(update({"_ROW_ID": [0, 3, 4, 1], "pic": [b"lo-0", b"", b"lo-4", None]}))
    assert got(table.read(columns=cols)) == want()
    (mine,) = oracle_script(warehouse, [{"op": "read", "table": name, "columns": cols}])
    assert got(mine) == want()

    table.update_columns(update({"_ROW_ID": [3, 1], "id": [30, 10], "pic": [b"x" * 3000, b"y"]}))
    theirs = update({"_ROW_ID": [1, 0], "pic": [b"py-1", b"py-0"]})
    ops = [
        {"op": "update", "table": name, "data": theirs, "update_cols": ["pic"]},
        {"op": "read", "table": name, "columns": cols},
    ]
    (last,) = oracle_script(warehouse, ops)
    assert got(last) == want()
    table = Catalog(str(warehouse)).get_table(name)
    assert got(table.read(columns=cols)) == want()
