"""Branches both ways with Java Paimon 0.9 (and pypaimon 2.1 where it reads): Java creates a
table, a tag and a branch from it; lakeops reads Java's branch, writes and deletes on it,
creates a branch of its own from a snapshot and writes it; Java reads both branches
(``db.t$branch_<name>``) and the untouched main branch as the model says; lakeops
fast-forwards the main branch to its branch and Java and pypaimon read the result."""

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

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
FIELDS = [{"name": "k", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]


def _data(pairs: dict[int, str]) -> pa.Table:
    return pa.table({"k": list(pairs), "v": list(pairs.values())}, schema=SCHEMA)


def _bag(rows: list[dict[str, Any]]) -> dict[int, Any]:
    return {r["k"]: r["v"] for r in rows}


def test_branches_both_ways(tmp_path: Path, java_classpath: str) -> None:
    wh = str(tmp_path)
    run_ops(
        java_classpath,
        wh,
        [
            {
                "op": "create",
                "table": "db.t",
                "fields": FIELDS,
                "primary_keys": ["k"],
                "options": {"bucket": "2"},
            },
            {"op": "write", "table": "db.t", "rows": json_rows(_data({1: "a", 2: "b"}))},
            {"op": "tag", "table": "db.t", "name": "t1"},
            {"op": "write", "table": "db.t", "rows": json_rows(_data({3: "main"}))},
            {"op": "branch", "table": "db.t", "name": "jb", "tag": "t1"},
        ],
    )
    catalog = Catalog(wh)
    table = catalog.get_table("db.t")
    assert [b.name for b in table.branches()] == ["jb"]
    jb = table.branch("jb")
    assert _bag(jb.read().to_pylist()) == {1: "a", 2: "b"}
    jb.write(_data({4: "jb"}))
    jb.delete(pc.field("k") == 1)
    table.create_branch("lk", from_snapshot=2)
    lk = table.branch("lk")
    lk.write(_data({5: "lk"}))
    main, on_jb, on_lk, branches = run_ops(
        java_classpath,
        wh,
        [
            {"op": "read", "table": "db.t"},
            {"op": "read", "table": "db.t$branch_jb"},
            {"op": "read", "table": "db.t$branch_lk"},
            {"op": "system", "table": "db.t", "name": "branches"},
        ],
    )
    mine = table.metadata_table("branches").to_pylist()
    theirs = sorted(branches["rows"], key=lambda r: r["branch_name"])
    keys = ("branch_name", "created_from_tag", "created_from_snapshot")
    assert (
        [tuple(r[k] for k in keys) for r in theirs]
        == [tuple(r[k] for k in keys) for r in mine]
        == [("jb", "t1", 1), ("lk", None, 2)]
    )
    assert _bag(main["rows"]) == {1: "a", 2: "b", 3: "main"}
    assert _bag(on_jb["rows"]) == {2: "b", 4: "jb"}
    assert _bag(on_lk["rows"]) == {1: "a", 2: "b", 3: "main", 5: "lk"}
    table.fast_forward("jb")
    (after,) = run_ops(java_classpath, wh, [{"op": "read", "table": "db.t"}])
    assert _bag(after["rows"]) == {2: "b", 4: "jb"}
    catalog.get_table("db.t").write(_data({6: "next"}))
    (last,) = run_ops(java_classpath, wh, [{"op": "read", "table": "db.t"}])
    assert _bag(last["rows"]) == {2: "b", 4: "jb", 6: "next"}


def test_pypaimon_reads_a_fast_forwarded_lakeops_table(tmp_path: Path) -> None:
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    table.write(_data({1: "a", 2: "b"}))
    table.create_branch("dev", from_snapshot=1)
    table.write(_data({3: "main"}))
    dev = table.branch("dev")
    dev.update(pc.field("k") == 2, {"v": "B"})
    table.fast_forward("dev")
    assert _bag(oracle_read(wh, "db.t").to_pylist()) == {1: "a", 2: "B"}
