"""Primary-key tables with deletion vectors written and compacted by lakeops, read by Java
Paimon 0.9 and pypaimon 2.1, and written alternately with Java.

lakeops creates three deletion-vector tables (deduplicate partitioned with two buckets,
aggregation with ``sum``, partial-update) and writes three commits (each write lifts its level
0 at once; a full compaction after the second). Java 0.9 then reads them: its batch read skips
level 0 and applies the vectors **without merging** the other levels, so it returns the model's
rows only if lakeops marked every superseded row. Java writes and compacts a fourth commit and
reads; lakeops writes a fifth, compacts fully, writes a sixth; Java reads again, and also
reads a table whose level-0 compaction was killed before its snapshot published (the write's
APPEND landed, invisible to deletion-vector reads: Java and lakeops read the two earlier
writes). The plain model (upserts and deletes by key; ``sum`` sums, partial-update keeps the
last non-null value) judges every read.

pypaimon 2.1 reads lakeops' snapshot before Java wrote (it cannot read Java 0.9's data
manifests, see test_append_deletion_vectors_interop). Neither oracle reads the 64-bit layout
(``deletion-vectors.bitmap64``: Paimon 0.9 lacks it, pypaimon 2.1 rejects its magic number),
so tests/compact/test_vectors.py judges it against the layout of Paimon 1.x's
``Bitmap64DeletionVector`` / ``OptimizedRoaringBitmap64``. Two JVM runs.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX
from lakeops.io.file_io import FileIO
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("k", pa.int64(), False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int32()),
        pa.field("op", pa.string()),
    ]
)
COLS = ["dt", "k", "v", "n"]
DV = {"deletion-vectors.enabled": "true"}
#: name -> (partition keys, options, engine: "dedup" | "sum" | "partial")
TABLES: dict[str, tuple[list[str], dict[str, str], str]] = {
    "db.p": (["dt"], {**DV, "bucket": "2", "rowkind.field": "op"}, "dedup"),
    "db.agg": (
        [],
        {**DV, "bucket": "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        "sum",
    ),
    "db.pu": (["dt"], {**DV, "bucket": "1", "merge-engine": "partial-update"}, "partial"),
}

KINDS = ["+I", "+U", "-D"]
Row = tuple[Any, ...]
Batch = list[tuple[str, int, str | None, int]]  # (kind, k, v, n)


def _dt(k: int) -> str:
    return ["a", "b"][k % 2]


def _batches() -> list[Batch]:
    b1: Batch = [("+I", k, f"v1-{k}", k) for k in range(30)]
    b2: Batch = [("+U", k, f"v2-{k}", 100) for k in range(0, 30, 3)]
    b2 += [("-D", k, None, 0) for k in (1, 5, 10)]
    b3: Batch = [("+U", k, None if k % 8 == 2 else f"v3-{k}", 7) for k in range(2, 30, 4)]
    b3 += [("-D", k, None, 0) for k in (7, 8)] + [("+I", k, "", k) for k in range(30, 34)]
    b4: Batch = [("+U", k, f"j4-{k}", -k) for k in range(0, 12, 2)] + [("-D", 31, None, 0)]
    b5: Batch = [("+U", k, f"v5-{k}", 5) for k in range(10, 20)] + [("-D", 3, None, 0)]
    b6: Batch = [("+U", k, f"v6-{k}", 6) for k in range(15, 25, 3)] + [("+I", 40, "new", 1)]
    return [b1, b2, b3, b4, b5, b6]


def _rows_of(batch: Batch, engine: str) -> tuple[pa.Table, list[str]]:
    agg = engine != "dedup"
    kept = [r for r in batch if not (agg and r[0] == "-D")]  # sum, partial-update: upserts only
    table = pa.table(
        {
            "dt": [_dt(r[1]) for r in kept],
            "k": [r[1] for r in kept],
            "v": [r[2] for r in kept],
            "n": [r[3] for r in kept],
            "op": ["+I" if agg else r[0] for r in kept],
        },
        schema=SCHEMA,
    )
    return table, ["+I" if agg else r[0] for r in kept]


def _model(batches: list[Batch], engine: str) -> list[Row]:
    state: dict[int, list[Any]] = {}
    for batch in batches:
        for kind, k, v, n in batch:
            if engine != "dedup":
                if kind == "-D":
                    continue
                old = state.get(k)
                if old is None:
                    state[k] = [_dt(k), k, v, n]
                else:
                    old[2] = v if v is not None else old[2]
                    old[3] = old[3] + n if engine == "sum" else n
            elif kind == "-D":
                state.pop(k, None)
            else:
                state[k] = [_dt(k), k, v, n]
    return sorted(tuple(r) for r in state.values())


def _rows(table: pa.Table) -> list[Row]:
    return sorted(zip(*(table.column(c).to_pylist() for c in COLS), strict=True))


def _java(result: dict[str, Any]) -> list[Row]:
    return sorted(tuple(r[c] for c in COLS) for r in result["rows"])


def _write(catalog: Catalog, name: str, batch: Batch, engine: str) -> None:
    catalog.get_table(name).write(_rows_of(batch, engine)[0])


def _killed_flush(catalog: Catalog, batches: list[Batch], monkeypatch: pytest.MonkeyPatch) -> int:
    """Table ``db.crash`` with two writes, then a third whose level-0 compaction is killed
    before its snapshot publishes (the APPEND landed). Returns the APPEND's snapshot id."""
    table = catalog.create_table(
        "db.crash",
        schema=SCHEMA,
        primary_keys=["dt", "k"],
        options={**DV, "bucket": "2", "rowkind.field": "op"},
    )
    for batch in batches[:2]:
        _write(catalog, "db.crash", batch, "dedup")
    before = table.store.latest_snapshot_id()
    original = FileIO.publish_exclusive
    published: list[str] = []

    def kill(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path and published:
            raise KeyboardInterrupt("killed before the compaction's publish")
        ok = original(self, path, data)
        if "/snapshot/snapshot-" in path:
            published.append(path)
        return ok

    monkeypatch.setattr(FileIO, "publish_exclusive", kill)
    with pytest.raises(KeyboardInterrupt):
        _write(catalog, "db.crash", batches[2], "dedup")
    monkeypatch.undo()
    latest = catalog.get_table("db.crash").store.latest_snapshot()
    assert latest is not None and latest.id == before + 1 and latest.commit_kind == "APPEND"
    return latest.id


def test_lakeops_writes_and_compacts_java_and_pypaimon_read(
    tmp_path: Path, java_classpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = _batches()
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    for name, (parts, options, _) in TABLES.items():
        catalog.create_table(
            name, schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=parts, options=options
        )
    for name, (_, _, engine) in TABLES.items():
        for i in range(3):
            _write(catalog, name, batches[i], engine)
            if i == 1:
                catalog.get_table(name).compact(full=True)
        table = catalog.get_table(name)
        latest = table.store.latest_snapshot()
        assert latest is not None and latest.commit_kind == "COMPACT"
        assert all(e.file.level > 0 for e in table.store.live_entries(latest))
        assert any(
            e.file.index_type == DELETION_VECTORS_INDEX for e in table.store.index_entries(latest)
        ), name
        assert _rows(table.read()) == _model(batches[:3], engine), name
    ours = {name: catalog.get_table(name).store.latest_snapshot_id() for name in TABLES}
    ops: list[dict[str, Any]] = []
    for name, (_, _, engine) in TABLES.items():
        rows, kinds = _rows_of(batches[3], engine)
        ops += [
            {"op": "read", "table": name},
            {"op": "write", "table": name, "rows": json_rows(rows, kinds)},
            {"op": "compact", "table": name},
            {"op": "read", "table": name},
        ]
    results = run_ops(java_classpath, tmp_path, ops)
    for i, (name, (_, _, engine)) in enumerate(TABLES.items()):
        first, after = results[4 * i], results[4 * i + 3]
        assert _java(first) == _model(batches[:3], engine), name
        assert _java(after) == _model(batches[:4], engine), name

    for name, (_, _, engine) in TABLES.items():
        table = catalog.get_table(name)
        assert _rows(table.read()) == _model(batches[:4], engine), name
        _write(catalog, name, batches[4], engine)
        catalog.get_table(name).compact(full=True)
        _write(catalog, name, batches[5], engine)
        assert _rows(catalog.get_table(name).read()) == _model(batches, engine), name
    _killed_flush(catalog, batches, monkeypatch)
    reads = [{"op": "read", "table": n} for n in [*TABLES, "db.crash"]]
    results = run_ops(java_classpath, tmp_path, reads)
    for result, (name, (_, _, engine)) in zip(results[:-1], TABLES.items(), strict=True):
        assert _java(result) == _model(batches, engine), name
    # the killed compaction changed nothing Java reads: the third write waits in level 0
    assert _java(results[-1]) == _model(batches[:2], "dedup")
    assert _rows(catalog.get_table("db.crash").read()) == _model(batches[:2], "dedup")

    for name, (_, _, engine) in TABLES.items():
        got = oracle_read(tmp_path, name, snapshot_id=ours[name])
        assert _rows(got) == _model(batches[:3], engine), name


def test_sequence_field_deletes_as_java_drops_them(tmp_path: Path, java_classpath: str) -> None:
    """``sequence.field`` with retractions: a deletion-vector compaction drops a ``-D`` as
    soon as it lifts it (Paimon's drop-delete in deletion-vector mode), so a later row with a
    lower sequence value comes back. Java 0.9 writes the same batches into its own table; both
    reads must be equal (and the case must occur: some key differs from merge-on-read)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), ("op", pa.string())])
    fields = [
        {"name": "id", "type": "BIGINT NOT NULL"},
        {"name": "v", "type": "BIGINT"},
        {"name": "op", "type": "STRING"},
    ]
    options = {**DV, "bucket": "2", "sequence.field": "v", "rowkind.field": "op"}
    rng = random.Random(0)
    batches = [
        pa.Table.from_pylist(
            [
                {"id": rng.randrange(100), "v": rng.randrange(1000), "op": rng.choice(KINDS)}
                for _ in range(40)
            ],
            schema=schema,
        )
        for _ in range(6)
    ]
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": "db.j",
            "fields": fields,
            "partition_keys": [],
            "primary_keys": ["id"],
            "options": options,
        }
    ]
    ops += [
        {"op": "write", "table": "db.j", "rows": json_rows(b, b.column("op").to_pylist())}
        for b in batches
    ]
    ops.append({"op": "read", "table": "db.j"})
    java = sorted((r["id"], r["v"]) for r in run_ops(java_classpath, tmp_path, ops)[-1]["rows"])
    catalog = Catalog(str(tmp_path))
    ours = catalog.create_table("db.l", schema=schema, primary_keys=["id"], options=options)
    merged = catalog.create_table(
        "db.m",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "2", "sequence.field": "v", "rowkind.field": "op"},
    )
    for b in batches:
        ours.write(b)
        merged.write(b)
    assert sorted((r["id"], r["v"]) for r in ours.read().to_pylist()) == java
    assert sorted((r["id"], r["v"]) for r in merged.read().to_pylist()) != java
