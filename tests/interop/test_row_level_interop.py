"""Row-level changes judged by Java Paimon 0.9 and pypaimon 2.1, against a plain model of the
rows, on every merge engine that takes them and on append tables with and without deletion
vectors, fixed bucket and unaware:

* Java creates and writes the tables (a second commit updates some keys); lakeops deletes,
  updates and merges into them; Java reads the model's rows; lakeops compacts fully; Java
  reads them again; Java deletes more rows through vectors on top of lakeops' (the
  deletion-vector append table) and lakeops reads the model's rows;
* lakeops creates, writes and changes the same kinds of tables; pypaimon and Java read them.

Which oracle judges which table: ``aggregation.remove-record-on-delete`` is a Paimon 1.x option
that Java Paimon 0.9 does not know (it retracts a deleted row's values instead: a sum drops to
0, the key stays) and pypaimon 2.1 refuses to read, as it refuses
``partial-update.remove-record-on-delete``; so the aggregation table is judged by the model
alone (lakeops' read), the partial-update one by Java alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("k", pa.int64(), False), ("v", pa.int64())]
)
FIELDS = [
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "k", "type": "BIGINT NOT NULL"},
    {"name": "v", "type": "BIGINT"},
]
PK = ["dt", "k"]
#: table -> (primary keys, options)
TABLES: dict[str, tuple[list[str], dict[str, str]]] = {
    "db.dedup": (PK, {"bucket": "2"}),
    "db.partial": (
        PK,
        {
            "bucket": "1",
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
        },
    ),
    "db.agg": (
        PK,
        {
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "aggregation.remove-record-on-delete": "true",
        },
    ),
    "db.cow": ([], {}),
    "db.dv": ([], {"deletion-vectors.enabled": "true"}),
    "db.fixed": ([], {"bucket": "2", "bucket-key": "k", "deletion-vectors.enabled": "true"}),
}


def _first() -> pa.Table:
    return pa.table(
        {"dt": ["a", "b"] * 10, "k": list(range(20)), "v": [i * 10 for i in range(20)]},
        schema=SCHEMA,
    )


def _second() -> pa.Table:
    """Keys 0-4 again (v + 1: an upsert, or a sum), and keys 20-24."""
    ks = [0, 1, 2, 3, 4, 20, 21, 22, 23, 24]
    return pa.table(
        {"dt": ["a" if k % 2 == 0 else "b" for k in ks], "k": ks, "v": [1] * 5 + [7] * 5},
        schema=SCHEMA,
    )


def _model_after_writes(name: str) -> list[dict[str, Any]]:
    keyed = bool(TABLES[name][0])
    rows = _first().to_pylist() + _second().to_pylist()
    if not keyed:
        return rows
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        old = out.get((r["dt"], r["k"]))
        if old is not None and name == "db.agg":
            r = {**r, "v": old["v"] + r["v"]}
        out[(r["dt"], r["k"])] = r
    return list(out.values())


SOURCE = pa.table(
    {"dt": ["a", "b", "a", "b"], "k": [6, 7, 30, 31], "v": [-1, 700, 300, 310]}, schema=SCHEMA
)


def _change(table: Any, name: str) -> None:
    """Delete v in [50, 90]; update dt = 'b' and k < 10: v * 2 (not aggregation); merge SOURCE
    (deduplicate and append tables): matched and source.v < 0 deleted, else updated, new rows
    inserted."""
    table.delete((pc.field("v") >= 50) & (pc.field("v") <= 90))
    if name != "db.agg":
        table.update((pc.field("dt") == "b") & (pc.field("k") < 10), {"v": pc.field("v") * 2})
    if name not in ("db.agg", "db.partial"):
        (
            table.merge(SOURCE, on=["dt", "k"])
            .when_matched_delete(condition=pc.field("source.v") < 0)
            .when_matched_update({"v": pc.field("source.v")})
            .when_not_matched_insert_all()
            .execute()
        )


def _model(name: str) -> list[dict[str, Any]]:
    rows = [r for r in _model_after_writes(name) if not (50 <= r["v"] <= 90)]
    if name != "db.agg":
        rows = [{**r, "v": r["v"] * 2} if r["dt"] == "b" and r["k"] < 10 else r for r in rows]
    if name not in ("db.agg", "db.partial"):
        src = {(r["dt"], r["k"]): r for r in SOURCE.to_pylist()}
        out = []
        for r in rows:
            s = src.pop((r["dt"], r["k"]), None)
            if s is None:
                out.append(r)
            elif s["v"] >= 0:
                out.append({**r, "v": s["v"]})
        rows = out + list(src.values())
    return rows


def _bag(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["dt"], r["k"], r["v"]) for r in rows)


#: the tables Java Paimon 0.9 judges (see the module docstring)
JAVA = {n: t for n, t in TABLES.items() if n != "db.agg"}
#: the tables pypaimon 2.1 judges
PYPAIMON = [n for n in TABLES if n not in ("db.agg", "db.partial")]


def test_java_tables_changed_by_lakeops_read_by_java(tmp_path: Path, java_classpath: str) -> None:
    wh = str(tmp_path)
    ops: list[dict[str, Any]] = []
    for name, (keys, options) in JAVA.items():
        ops.append(
            {
                "op": "create",
                "table": name,
                "fields": FIELDS,
                "primary_keys": keys,
                "partition_keys": ["dt"],
                "options": options,
            }
        )
        ops += [{"op": "write", "table": name, "rows": json_rows(x)} for x in (_first(), _second())]
    run_ops(java_classpath, wh, ops)
    catalog = Catalog(wh)
    for name in JAVA:
        table = catalog.get_table(name)
        _change(table, name)
        assert _bag(table.read().to_pylist()) == _bag(_model(name)), name
    reads = run_ops(java_classpath, wh, [{"op": "read", "table": n} for n in JAVA])
    for name, got in zip(JAVA, reads, strict=True):
        assert _bag(got["rows"]) == _bag(_model(name)), name
    for name in JAVA:
        catalog.get_table(name).compact(full=True)
    ops = [{"op": "read", "table": n} for n in JAVA]
    ops.append({"op": "delete_dv", "table": "db.dv", "column": "k", "values": [10, 30]})
    ops.append({"op": "read", "table": "db.dv"})
    *reads, deleted, after = run_ops(java_classpath, wh, ops)
    for name, got in zip(JAVA, reads, strict=True):
        assert _bag(got["rows"]) == _bag(_model(name)), f"{name} after lakeops' compaction"
    want = [r for r in _model("db.dv") if r["k"] not in (10, 30)]
    assert deleted["deleted"] == 2
    assert _bag(after["rows"]) == _bag(want)
    assert _bag(catalog.get_table("db.dv").read().to_pylist()) == _bag(want)


def test_lakeops_tables_changed_by_lakeops_read_by_both(
    tmp_path: Path, java_classpath: str
) -> None:
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    for name, (keys, options) in TABLES.items():
        table = catalog.create_table(
            name, schema=SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options
        )
        table.write(_first())
        table.write(_second())
        _change(table, name)
    reads = run_ops(java_classpath, wh, [{"op": "read", "table": n} for n in JAVA])
    for name, got in zip(JAVA, reads, strict=True):
        assert _bag(got["rows"]) == _bag(_model(name)), name
    for name in PYPAIMON:
        assert _bag(oracle_read(wh, name).to_pylist()) == _bag(_model(name)), name
    assert _bag(catalog.get_table("db.agg").read().to_pylist()) == _bag(_model("db.agg"))


def test_changes_see_java_records_no_compaction_has_reached(
    tmp_path: Path, java_classpath: str
) -> None:
    """Java writes a deletion-vector table ``write-only`` (its records wait in level 0, which
    batch reads skip until compacted); lakeops deletes and updates rows those records hold;
    Java compacts and reads the model: the delete missed none of them, the update started from
    their values."""
    wh = str(tmp_path)
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "n", "type": "BIGINT"}]
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "write-buffer-size": "256 kb"}
    first = [{"id": i, "n": i} for i in (1, 2, 3)]
    pending = [{"id": i, "n": i * 10} for i in (1, 2, 4, 5)]
    run_ops(
        java_classpath,
        wh,
        [
            {"op": "create", "table": "db.t", "fields": fields, "primary_keys": ["id"]}
            | {"partition_keys": [], "options": options},
            {"op": "write", "table": "db.t", "rows": first},
            {"op": "write", "table": "db.t", "rows": pending, "options": {"write-only": "true"}},
        ],
    )
    table = Catalog(wh).get_table("db.t")
    assert table.delete(pc.field("id").isin([2, 4])).deleted == 2
    assert table.update(pc.field("id") <= 5, {"n": pc.field("n") + 1}).updated == 3
    *_, got = run_ops(
        java_classpath, wh, [{"op": "compact", "table": "db.t"}, {"op": "read", "table": "db.t"}]
    )
    assert {r["id"]: r["n"] for r in got["rows"]} == {1: 11, 3: 4, 5: 51}
    assert len(got["rows"]) == 3
