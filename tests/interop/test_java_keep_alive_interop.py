"""What Java Paimon 0.9 keeps alive survives lakeops maintenance: Java writes a table, tags a
snapshot, branches from the tag, writes on the branch and registers a streaming consumer;
lakeops compacts, expires every snapshot it may and removes orphan files. Java then reads the
tag, the branch and the main table as they were, and the consumer's snapshot still exists."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import id_v_model, java_id_v_rows, json_rows, run_ops

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _create(options: dict[str, str]) -> dict[str, Any]:
    """The oracle's op creating ``db.t`` (``id`` BIGINT key, ``v`` STRING) with ``options``."""
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]
    return {
        "op": "create",
        "table": "db.t",
        "fields": fields,
        "primary_keys": ["id"],
        "options": options,
    }


def _kv(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def test_java_tags_branches_and_consumers_survive_lakeops_maintenance(
    warehouse: Path, java_classpath: str
) -> None:
    commits = [_kv(range(0, 40), "a"), _kv(range(20, 60), "b"), _kv(range(50, 90), "c")]
    on_branch = _kv(range(0, 10), "branch")
    later = [_kv(range(80, 120), "d"), _kv(range(0, 5), "e")]
    write = [{"op": "write", "table": "db.t", "rows": json_rows(c)} for c in commits]
    run_ops(
        java_classpath,
        str(warehouse),
        [
            _create({"bucket": "2"}),
            *write,
            {"op": "tag", "table": "db.t", "name": "t1", "snapshot_id": 1},
            {"op": "branch", "table": "db.t", "name": "b", "tag": "t1"},
            {"op": "write", "table": "db.t$branch_b", "rows": json_rows(on_branch)},
            {"op": "consumer", "table": "db.t", "name": "stream-job", "next_snapshot": 3},
            *[{"op": "write", "table": "db.t", "rows": json_rows(c)} for c in later],
        ],
    )
    root = warehouse / "db.db" / "t"
    kept = sorted(
        str(p.relative_to(root))
        for d in ("tag", "branch", "consumer")
        for p in (root / d).rglob("*")
    )

    table = Catalog(str(warehouse)).get_table("db.t")
    table.compact(full=True)
    result = table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert result.expired_snapshots == (1, 2)  # the consumer reads snapshot 3 next
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.check().ok
    assert (
        sorted(
            str(p.relative_to(root))
            for d in ("tag", "branch", "consumer")
            for p in (root / d).rglob("*")
        )
        == kept
    )
    assert table.store.snapshot_ids()[0] == 3

    results = run_ops(
        java_classpath,
        str(warehouse),
        [
            {"op": "read", "table": "db.t", "tag": "t1"},
            {"op": "read", "table": "db.t$branch_b"},
            {"op": "read", "table": "db.t", "snapshot_id": 3},
            {"op": "read", "table": "db.t"},
        ],
    )
    assert java_id_v_rows(results[0]) == id_v_model(commits[0])
    assert java_id_v_rows(results[1]) == id_v_model(commits[0], on_branch)
    assert java_id_v_rows(results[2]) == id_v_model(*commits)
    assert java_id_v_rows(results[3]) == id_v_model(*commits, *later)


def test_a_tag_whose_changelog_java_expired_keeps_its_data(
    warehouse: Path, java_classpath: str
) -> None:
    """Paimon's expiry keeps a tagged snapshot's data but deletes its changelog with it: the tag
    (and a branch made from it) must still protect that data from lakeops' expiry and orphan
    cleanup (they once took the missing changelog list for a tag whose files were gone)."""
    commits = [_kv(range(0, 40), "a"), _kv(range(20, 60), "b"), _kv(range(50, 90), "c")]
    run_ops(
        java_classpath,
        str(warehouse),
        [
            _create({"bucket": "2", "changelog-producer": "lookup"}),
            {"op": "write", "table": "db.t", "rows": json_rows(commits[0])},
            {"op": "tag", "table": "db.t", "name": "t1", "snapshot_id": 2},
            {"op": "branch", "table": "db.t", "name": "b", "tag": "t1"},
            *[{"op": "write", "table": "db.t", "rows": json_rows(c)} for c in commits[1:]],
            {"op": "expire", "table": "db.t", "retain": 2},
        ],
    )
    root = warehouse / "db.db" / "t"
    tagged = json.loads((root / "tag" / "tag-t1").read_text())
    assert tagged["commitKind"] == "COMPACT"  # the lookup changelog's compaction
    assert not (root / "snapshot" / "snapshot-2").exists()
    assert not (root / "manifest" / tagged["changelogManifestList"]).exists()
    assert (root / "manifest" / tagged["baseManifestList"]).exists()

    later = _kv(range(80, 100), "d")
    table = Catalog(str(warehouse)).get_table("db.t")
    table.write(later)
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.check().ok

    def rows(t: pa.Table) -> dict[int, Any]:
        return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist(), strict=True))

    assert rows(table.read(tag="t1")) == id_v_model(commits[0])
    assert rows(table.branch("b").read()) == id_v_model(commits[0])
    assert rows(table.read()) == id_v_model(*commits, later)
    results = run_ops(
        java_classpath,
        str(warehouse),
        [
            {"op": "read", "table": "db.t", "tag": "t1"},
            {"op": "read", "table": "db.t$branch_b"},
            {"op": "read", "table": "db.t"},
        ],
    )
    assert java_id_v_rows(results[0]) == id_v_model(commits[0])
    assert java_id_v_rows(results[1]) == id_v_model(commits[0])
    assert java_id_v_rows(results[2]) == id_v_model(*commits, later)
