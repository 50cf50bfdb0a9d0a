"""Append tables with deletion vectors, against Java Paimon 0.9 (and pypaimon 2.1's reader).

Java creates four append tables with ``deletion-vectors.enabled`` — unaware bucket and fixed
bucket, partitioned and not — writes two commits and deletes rows twice the way Paimon's Spark
DELETE does (the oracle's ``delete_dv``: a vector per touched file through
``AppendDeletionFileMaintainer``, the second delete merging into vectors already there). The
plain model is every row written minus the rows whose ``k`` was deleted. lakeops must read what
Java reads (whole, projected, filtered, streamed, at older snapshots, ``audit_log``), append
without touching the index, compact dropping the deleted rows and the compacted files'
vectors, refuse ``read_changes`` across a delete, expire snapshots and clean orphans keeping
every live vector; Java then reads, deletes again (also rows lakeops wrote) and compacts, and
lakeops reads the result. Two tables lakeops creates get Java's deletes, lakeops' compaction
(one partly, so lakeops writes an index file of the vectors left), pypaimon 2.1's reads (it
cannot read the data manifests Java 0.9 writes: no ``_VALUE_STATS_COLS``) and Java's read and
delete on top. One JVM run before lakeops' part, one after.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX, deletion_files, roll_blobs
from lakeops.format.manifest import FileKind
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])
FIELDS = [
    {"name": "dt", "type": "STRING"},
    {"name": "k", "type": "BIGINT"},
    {"name": "v", "type": "STRING"},
]
DV = {"deletion-vectors.enabled": "true"}
TABLES: dict[str, tuple[list[str], dict[str, str]]] = {
    "db.up": (["dt"], DV),
    # its first file (600 rows) is above 70 % of the target size, yet has a vector: Paimon's
    # compaction takes it all the same
    "db.u": ([], {**DV, "target-file-size": "2 kb"}),
    "db.bp": (["dt"], {**DV, "bucket": "2", "bucket-key": "k"}),
    "db.b": ([], {**DV, "bucket": "3", "bucket-key": "k"}),
}
#: the deletes Java runs, in order (k values); the second one hits files already deleted from
FIRST, SECOND, THIRD = [1, 2, 7, 1003, 1005], [3, 1004, 1008, 9], [0, 2002, 2006, 3001]


def _batch(seed: int, n: int = 12) -> pa.Table:
    return pa.table(
        {
            "dt": [["a", "ü", "b"][j % 3] for j in range(n)],
            "k": [seed * 1000 + j for j in range(n)],
            "v": [None if j == 5 else f"v{seed}-{j}-é" for j in range(n)],
        },
        schema=SCHEMA,
    )


def _model(batches: list[pa.Table], deleted: list[int]) -> list[tuple[Any, ...]]:
    rows = pa.concat_tables(batches)
    rows = rows.filter(pc.invert(pc.is_in(rows.column("k"), pa.array(deleted, pa.int64()))))
    return _rows(rows)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c for c in ("dt", "k", "v") if c in table.column_names]
    return sorted(
        zip(*(table.column(c).to_pylist() for c in cols), strict=True),
        key=lambda r: tuple((x is None, x) for x in r),
    )


def _java_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return _rows(pa.Table.from_pylist(result["rows"], schema=SCHEMA))


#: tables lakeops creates and writes (b[0..2]); Java deletes FIRST + THIRD, lakeops compacts
#: ("db.lb" compacts windows of two files: the newest file's vector stays, copied unchanged
#: into the bucket's new index file), Java reads and deletes SECOND on top
LAKEOPS_TABLES: dict[str, tuple[list[str], dict[str, str]]] = {
    "db.lup": (["dt"], DV),
    "db.lb": ([], {**DV, "bucket": "3", "bucket-key": "k", "compaction.max.file-num": "2"}),
}


def test_append_tables_with_deletion_vectors_both_ways(tmp_path: Path, java_classpath: str) -> None:
    b = [_batch(0, 600), *(_batch(s) for s in range(1, 4))]
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    for name, (parts, options) in LAKEOPS_TABLES.items():
        table = catalog.create_table(name, schema=SCHEMA, partition_keys=parts, options=options)
        for x in b[:3]:
            table.write(x)
    ops: list[dict[str, Any]] = []
    for name, (parts, options) in TABLES.items():
        ops.append(
            {
                "op": "create",
                "table": name,
                "fields": FIELDS,
                "partition_keys": parts,
                "options": options,
            }
        )
        ops += [{"op": "write", "table": name, "rows": json_rows(x)} for x in b[:2]]
        ops += [
            {"op": "delete_dv", "table": name, "column": "k", "values": FIRST},
            {"op": "delete_dv", "table": name, "column": "k", "values": SECOND},
            {"op": "read", "table": name},
        ]
    ops += [
        {"op": "delete_dv", "table": name, "column": "k", "values": FIRST + THIRD}
        for name in LAKEOPS_TABLES
    ]
    results = run_ops(java_classpath, wh, ops)
    java_reads = [r for r in results if r["op"] == "read"]
    deleted = [r["deleted"] for r in results if r["op"] == "delete_dv"]
    assert deleted[: 2 * len(TABLES)] == [len(FIRST), len(SECOND)] * len(TABLES)
    model = _model(b[:2], FIRST + SECOND)

    for name, java in zip(TABLES, java_reads, strict=True):
        table = catalog.get_table(name)
        latest = table.store.latest_snapshot()
        index = table.store.index_entries(latest)
        assert any(e.file.index_type == DELETION_VECTORS_INDEX for e in index), name
        assert _java_rows(java) == model, name
        assert _rows(table.read()) == model, name
        # projection, filter (with pruning), streaming batches, time travel, audit_log
        assert _rows(table.read(columns=["k"])) == sorted((r[1],) for r in model), name
        wanted = pc.field("k") >= 1000
        assert _rows(table.read(filter=wanted)) == [r for r in model if r[1] >= 1000], name
        streamed = pa.Table.from_batches(list(table.to_batches(batch_rows=4)), schema=SCHEMA)
        assert _rows(streamed) == model, name
        assert _rows(table.read(snapshot_id=2)) == _model(b[:2], []), name
        assert _rows(table.read(snapshot_id=3)) == _model(b[:2], FIRST), name
        audit = table.metadata_table("audit_log")
        assert set(audit.column("rowkind").to_pylist()) == {"+I"}, name
        assert _rows(audit.drop_columns(["rowkind"])) == model, name
        # the appended rows of the first two commits; a range across a delete is refused
        assert _rows(table.read_changes(0, 2).drop_columns(["_row_kind"])) == _model(b[:2], [])
        with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
            table.read_changes(0, latest.id)

        # an append carries the index manifest forward unchanged
        snapshot = table.write(b[2])
        assert snapshot is not None and snapshot.index_manifest == latest.index_manifest, name
        assert _rows(table.read()) == _model(b[:3], FIRST + SECOND), name

        # a full compaction drops the deleted rows and the vectors of the files it replaced
        compacted = table.compact(full=True)
        assert compacted is not None, name
        assert _rows(table.read()) == _model(b[:3], FIRST + SECOND), name
        delta = table.store.delta_entries(compacted)
        gone = {e.file.file_name for e in delta if e.kind == FileKind.DELETE}
        after = deletion_files(table.store.index_entries(compacted))
        assert gone and not gone & {n for (_, _, n) in after}, name
        if name == "db.u":  # above the small-file size, but it has a vector: compacted
            big = max((e.file for e in table.store.live_entries(latest)), key=lambda f: f.file_size)
            assert big.file_size >= 1434 and big.file_name in gone
        assert _rows(table.read(snapshot_id=compacted.id - 1)) == _model(b[:3], FIRST + SECOND)
        # expiry and orphan cleaning keep every vector a live snapshot references
        table.expire_snapshots(retain_max=1, retain_min=1)
        table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
        assert _rows(table.read()) == _model(b[:3], FIRST + SECOND), name

    # lakeops' own tables: Java's vectors read, then compacted away (db.lb: partly)
    lakeops_model = _model(b[:3], FIRST + THIRD)
    pypaimon_reads: list[dict[str, Any]] = []
    for name in LAKEOPS_TABLES:
        table = catalog.get_table(name)
        assert _rows(table.read()) == lakeops_model, name
        before = deletion_files(table.store.index_entries(table.latest_snapshot()))
        compacted = table.compact(full=name == "db.lup")
        assert compacted is not None, name
        after = deletion_files(table.store.index_entries(compacted))
        if name == "db.lup":
            assert not after
        else:
            assert after and all(df.path != before[k].path for k, df in after.items())
        assert _rows(table.read()) == lakeops_model, name
        pypaimon_reads += [
            {"op": "read", "table": name, "snapshot_id": compacted.id - 1},
            {"op": "read", "table": name},
        ]
    # pypaimon 2.1 (it cannot read the data manifests of Java's tables): Java's vectors, then
    # lakeops' compaction
    for got in oracle_script(wh, pypaimon_reads):
        assert _rows(got) == lakeops_model

    # Java reads what lakeops appended and compacted, deletes (lakeops' rows too), compacts
    ops = []
    for name in TABLES:
        ops += [
            {"op": "read", "table": name},
            {"op": "write", "table": name, "rows": json_rows(b[3])},
            {"op": "delete_dv", "table": name, "column": "k", "values": THIRD},
            {"op": "compact", "table": name},
            {"op": "read", "table": name},
        ]
    for name in LAKEOPS_TABLES:
        ops += [
            {"op": "read", "table": name},
            {"op": "delete_dv", "table": name, "column": "k", "values": SECOND},
            {"op": "read", "table": name},
        ]
    results = run_ops(java_classpath, wh, ops)
    final = _model(b, FIRST + SECOND + THIRD)
    for i, name in enumerate(TABLES):
        first_read, last_read = results[5 * i], results[5 * i + 4]
        assert _java_rows(first_read) == _model(b[:3], FIRST + SECOND), name
        assert _java_rows(last_read) == final, name
        assert _rows(catalog.get_table(name).read()) == final, name
    lakeops_final = _model(b[:3], FIRST + THIRD + SECOND)
    for i, name in enumerate(LAKEOPS_TABLES):
        first_read, last_read = results[5 * len(TABLES) + 3 * i : 5 * len(TABLES) + 3 * i + 3 : 2]
        assert _java_rows(first_read) == lakeops_model, name
        assert _java_rows(last_read) == lakeops_final, name
        assert _rows(catalog.get_table(name).read()) == lakeops_final, name


def test_rolled_index_files_of_an_unaware_table(tmp_path: Path, java_classpath: str) -> None:
    """``deletion-vector.index-file.target-size`` (Paimon's ``writeWithRolling``), honoured by
    Java 0.9 as by :func:`roll_blobs`: on a table lakeops creates with a 50-byte target, Java
    deletes rows of four files and rolls its vectors into the index files the rule gives (a
    file closes once a vector takes it past the target); lakeops reads exactly the plain model
    through them, its compaction retires them all, and Java reads the result."""
    b = [_batch(0, 600), *(_batch(s) for s in range(1, 4))]
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    options = {**DV, "deletion-vector.index-file.target-size": "50 b"}
    table = catalog.create_table("db.r", schema=SCHEMA, options=options)
    for x in b:
        table.write(x)
    deletes = [{"op": "delete_dv", "table": "db.r", "column": "k", "values": FIRST + THIRD}]
    assert [r["deleted"] for r in run_ops(java_classpath, str(tmp_path), deletes)] == [9]
    table = catalog.get_table("db.r")
    entries = table.store.index_entries(table.latest_snapshot())
    vectors = deletion_files(entries)
    assert len(vectors) == 4
    # Java's files, each with its vectors in file order, are what roll_blobs makes of them
    by_file: dict[str, list[tuple[str, bytes, Any]]] = {}
    for (_, _, name), df in sorted(vectors.items(), key=lambda kv: kv[1].offset):
        by_file.setdefault(df.path, []).append((name, bytes(df.length + 8), df))
    groups = sorted(by_file.values(), key=len, reverse=True)
    assert len(groups) >= 2  # the target made Java roll
    flat = [item for g in groups for item in g]
    assert roll_blobs(flat, 50) == groups
    model = _model(b, FIRST + THIRD)
    assert _rows(table.read()) == model
    compacted = table.compact(full=True)
    assert compacted is not None and not deletion_files(table.store.index_entries(compacted))
    assert _rows(table.read()) == model
    (java,) = run_ops(java_classpath, str(tmp_path), [{"op": "read", "table": "db.r"}])
    assert _java_rows(java) == model
