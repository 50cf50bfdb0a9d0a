"""A wedged table — a snapshot id re-created after its expiry, ``LATEST`` naming it — is
reported by ``check`` and repaired by ``Table.repair``; pypaimon reads the repaired table and
writers commit to it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.table.primary_key import Table
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [tag] * len(ids)}, schema=SCHEMA)


def wedged(tmp_path: Path) -> Table:
    """Snapshots 1..4, expiry keeping 4, then ``snapshot-2`` created again (as a writer that
    paused before its publish did before ids were checked) and ``LATEST`` pointed at it."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(rows(range(0, 10), "s1"))
    t.write(rows(range(10, 20), "s2"))
    snapshot_dir = Path(t.store.root) / "snapshot"
    second = (snapshot_dir / "snapshot-2").read_bytes()
    t.write(rows(range(20, 30), "s3"))
    t.write(rows(range(30, 40), "s4"))
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    (snapshot_dir / "snapshot-2").write_bytes(second)
    (snapshot_dir / "LATEST").write_text("2")
    return t


@pytest.mark.interop
def test_check_finds_a_wedged_table_and_repair_fixes_it(tmp_path: Path) -> None:
    t = wedged(tmp_path)
    report = t.check()
    problems = {p.path: p.problem for p in report.problems}
    assert "re-uses an expired id" in problems["snapshot/snapshot-2"]
    assert "LATEST names snapshot 2, but the newest is 4" in problems["snapshot/LATEST"]
    assert "lakeops repair" in problems["snapshot/LATEST"]

    dry = t.repair(dry_run=True)
    assert [s.snapshot_id for s in dry.strays] == [2] and dry.strays[0].moved_to is None
    assert (Path(t.store.root) / "snapshot" / "snapshot-2").exists()
    assert not t.check().ok

    done = t.repair()
    (stray,) = done.strays
    assert stray.snapshot_id == 2 and stray.commit_kind == "APPEND"
    assert stray.delta_record_count == 10
    assert stray.moved_to is not None and (Path(t.store.root) / stray.moved_to).is_file()
    assert done.latest_hint == 4 and done.earliest_hint is None
    assert t.store.snapshot_ids() == [4]
    assert t.check().ok
    assert not t.repair().changed  # idempotent

    expected = list(range(0, 40))
    assert sorted(t.read().column("id").to_pylist()) == expected
    assert sorted(oracle_read(tmp_path / "wh", "db.t").column("id").to_pylist()) == expected
    assert t.write(rows(range(40, 45), "after")).id > 4
    assert sorted(oracle_read(tmp_path / "wh", "db.t").column("id").to_pylist()) == [
        *expected,
        *range(40, 45),
    ]
    # orphan cleanup leaves the moved file alone
    t.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert (Path(t.store.root) / stray.moved_to).is_file()


def test_a_healthy_table_has_nothing_to_repair(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write(rows(range(i, i + 1), "x"))
    t.expire_snapshots(retain_min=2, retain_max=2, time_retained="0 ms")
    (Path(t.store.root) / "snapshot" / "LATEST").write_text("2")  # lagging, not wrong
    assert t.check().ok
    report = t.repair()
    assert report.strays == () and report.earliest_hint is None
