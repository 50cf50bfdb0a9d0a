"""Primary-key tables with deletion vectors written by Java Paimon 0.9, read by lakeops.

Java creates four primary-key tables with ``deletion-vectors.enabled`` (deduplicate partitioned
with two buckets and unpartitioned with three, aggregation, partial-update) and writes five
commits of inserts, updates and deletes (inserts only for the last two engines): each batch
write's lookup compaction lifts level 0 and gives the older files deletion vectors; a full
compaction runs after the second write, and the fifth write runs with ``write-only`` so its
level-0 file stays. Paimon's batch read skips level 0, so Java's read after the fifth write
still shows the fourth write's state: the plain model follows that rule, and lakeops must
return what Java returns — whole, projected, filtered, streamed, looked up, at older snapshots
and as ``audit_log``. lakeops then flushes the level-0 file (marking the rows it supersedes)
and Java reads the whole model. Two JVM runs.
(pypaimon 2.1 cannot read Java 0.9's data manifests: no ``_VALUE_STATS_COLS``, see
test_append_deletion_vectors_interop.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX
from tests.interop.java_oracle import json_rows, run_ops

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("k", pa.int64(), False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int32()),
    ]
)
FIELDS = [
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "k", "type": "BIGINT NOT NULL"},
    {"name": "v", "type": "STRING"},
    {"name": "n", "type": "INT"},
]
DV = {"deletion-vectors.enabled": "true"}
#: name -> (partition keys, primary keys, options, merge engine: "dedup" | "sum" | "partial")
TABLES: dict[str, tuple[list[str], list[str], dict[str, str], str]] = {
    "db.p": (["dt"], ["dt", "k"], {**DV, "bucket": "2"}, "dedup"),
    "db.b": ([], ["dt", "k"], {**DV, "bucket": "3"}, "dedup"),
    "db.agg": (
        [],
        ["dt", "k"],
        {**DV, "bucket": "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        "sum",
    ),
    "db.pu": (
        ["dt"],
        ["dt", "k"],
        {**DV, "bucket": "2", "merge-engine": "partial-update"},
        "partial",
    ),
}

Row = tuple[Any, ...]
Batch = list[tuple[str, int, str | None, int]]  # (kind, k, v, n)


def _dt(k: int) -> str:
    return ["a", "b", "ü"][k % 3]


def _batches() -> list[Batch]:
    b1: Batch = [("+I", k, f"v1-{k}-é", k) for k in range(40)]
    b2: Batch = [("+U", k, f"v2-{k}", 100) for k in range(0, 40, 3)]
    b2 += [("-D", k, None, 0) for k in (1, 5, 10, 20)]
    b3: Batch = [("+U", k, None if k % 8 == 2 else f"v3-{k}", 7) for k in range(2, 40, 4)]
    b3 += [("-D", k, None, 0) for k in (7, 8, 30)] + [("+I", k, "", k) for k in range(40, 45)]
    b4: Batch = [("+U", k, f"v4-{k}", -k) for k in range(11)]
    b4 += [("-D", k, None, 0) for k in (12, 13, 41)] + [("+I", k, "x", 1) for k in (45, 46, 47)]
    b5: Batch = [("+U", k, f"v5-{k}", 5) for k in range(14, 19)]
    b5 += [("-D", 0, None, 0), ("+I", 50, "late", 50)]
    return [b1, b2, b3, b4, b5]


def _rows_of(batch: Batch, engine: str) -> tuple[pa.Table, list[str]]:
    agg = engine != "dedup"
    kept = [r for r in batch if not (agg and r[0] == "-D")]  # sum, partial-update: inserts only
    table = pa.table(
        {
            "dt": [_dt(r[1]) for r in kept],
            "k": [r[1] for r in kept],
            "v": [r[2] for r in kept],
            "n": [r[3] for r in kept],
        },
        schema=SCHEMA,
    )
    return table, ["+I" if agg else r[0] for r in kept]


def _model(batches: list[Batch], engine: str) -> list[Row]:
    """The rows after ``batches``: upserts and deletes by key; for ``sum`` (inserts only) ``n``
    summed and ``v`` the last non-null value; for ``partial`` each field's last non-null value."""
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
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def _java(result: dict[str, Any], columns: list[str] | None = None) -> list[Row]:
    cols = columns or SCHEMA.names
    return sorted(tuple(r[c] for c in cols) for r in result["rows"])


def test_java_primary_key_tables_with_deletion_vectors(tmp_path: Path, java_classpath: str) -> None:
    batches = _batches()
    ops: list[dict[str, Any]] = []
    for name, (parts, keys, options, engine) in TABLES.items():
        ops.append(
            {
                "op": "create",
                "table": name,
                "fields": FIELDS,
                "partition_keys": parts,
                "primary_keys": keys,
                "options": options,
            }
        )
        for i, batch in enumerate(batches):
            if i == 4:  # the last write leaves its level-0 file
                ops.append(
                    {
                        "op": "alter",
                        "table": name,
                        "changes": [{"change": "setOption", "key": "write-only", "value": "true"}],
                    }
                )
            rows, kinds = _rows_of(batch, engine)
            ops.append({"op": "write", "table": name, "rows": json_rows(rows, kinds)})
            if i == 1:
                ops.append({"op": "compact", "table": name})
            if i >= 2:
                ops.append({"op": "read", "table": name})
        ops.append({"op": "system", "table": name, "name": "audit_log"})
    results = run_ops(java_classpath, tmp_path, ops)
    by_table: dict[str, list[dict[str, Any]]] = {}
    for op, res in zip(ops, results, strict=True):
        by_table.setdefault(op["table"], []).append({**op, **res})

    catalog = Catalog(str(tmp_path))
    for name, (_, _, _, engine) in TABLES.items():
        reads = [r for r in by_table[name] if r["op"] == "read"]
        audit = next(r for r in by_table[name] if r["op"] == "system")
        # Java after writes 3, 4, 5: the last one lags (its level-0 file is not read)
        wants = [_model(batches[:i], engine) for i in (3, 4, 4)]
        assert [_java(r) for r in reads] == wants, name
        assert _model(batches, engine) != wants[-1]  # the lag is visible
        table = catalog.get_table(name)
        store = table.store
        latest = store.latest_snapshot()
        assert latest is not None and latest.id == reads[-1]["latest"]
        levels = [e.file.level for e in store.live_entries(latest)]
        assert 0 in levels and any(lv > 0 for lv in levels), (name, levels)
        assert any(
            e.file.index_type == DELETION_VECTORS_INDEX for e in store.index_entries(latest)
        ), name
        assert any(s.deletions for s in table.splits()), name

        want = pa.Table.from_pylist(
            [dict(zip(SCHEMA.names, r, strict=True)) for r in wants[-1]], schema=SCHEMA
        )
        assert _rows(table.read()) == wants[-1], name
        for r in reads[:2]:
            assert _rows(table.read(snapshot_id=r["latest"])) == _java(r), name
        assert _rows(table.read(columns=["k", "n"])) == _rows(want.select(["k", "n"]))
        flt = (pc.field("k") >= 5) & (pc.field("dt") != "b")
        assert _rows(table.read(filter=flt)) == _rows(want.filter(flt)), name
        streamed = pa.Table.from_batches(
            list(table.to_batches(batch_rows=4, parallelism=2)), schema=SCHEMA
        )
        assert _rows(streamed) == wants[-1], name
        probe = pa.table(
            {"dt": [_dt(k) for k in (0, 3, 7, 14, 45, 50)], "k": [0, 3, 7, 14, 45, 50]},
            schema=pa.schema([SCHEMA.field("dt"), SCHEMA.field("k")]),
        )
        probed = set(zip(probe["dt"].to_pylist(), probe["k"].to_pylist(), strict=True))
        assert _rows(table.lookup(probe)) == [r for r in wants[-1] if r[:2] in probed], name
        ours = table.metadata_table("audit_log")
        java_audit = sorted((r["rowkind"], *(r[c] for c in SCHEMA.names)) for r in audit["rows"])
        assert _rows(ours) == java_audit, name

        # lakeops maintains the vectors now: its flush lifts Java's level-0 file
        assert table.flush_level0() is not None
        assert _rows(catalog.get_table(name).read()) == _model(batches, engine), name
    after = run_ops(java_classpath, tmp_path, [{"op": "read", "table": n} for n in TABLES])
    for result, (name, (_, _, _, engine)) in zip(after, TABLES.items(), strict=True):
        assert _java(result) == _model(batches, engine), name
