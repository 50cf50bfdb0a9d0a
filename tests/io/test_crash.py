"""Writers killed (SIGKILL) at points of write, commit and compaction: only whole commits are
ever visible, every commit a writer finished is visible, and orphan cleanup removes what they
left and nothing else.

The kill points are deterministic: each writer kills itself at its N-th storage call
(:mod:`tests.io.kill_points`), N drawn from a seeded generator, so no timing decides where it
dies."""

from __future__ import annotations

import datetime as dt
import itertools
import multiprocessing as mp
import random
import signal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.maintenance.orphan import referenced_files
from tests.io.kill_points import die_at

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.int64()), ("pad", pa.string())])
ROWS_PER_COMMIT = 50
ROUNDS = 12
#: a commit makes ~14 storage calls, one that also compacts ~28: up to ~4 commits per round
MAX_POINT = 60


def _writer(warehouse: str, first_tag: int, point: int, committed: Any) -> None:
    die_at(point)
    table = Catalog(warehouse).get_table("db.t")
    for tag in itertools.count(first_tag):  # until it kills itself
        ids = [tag * ROWS_PER_COMMIT + i for i in range(ROWS_PER_COMMIT)]
        table.write(
            pa.table(
                {"id": ids, "tag": [tag] * ROWS_PER_COMMIT, "pad": ["x" * 200] * ROWS_PER_COMMIT},
                schema=SCHEMA,
            )
        )
        committed.value += 1


def _check(table: Table) -> int:
    """The table reads, ids are contiguous, and every visible commit is whole; the next tag."""
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))
    rows = table.read().to_pylist()
    tags: dict[int, int] = {}
    for r in rows:
        tags[r["tag"]] = tags.get(r["tag"], 0) + 1
    assert all(count == ROWS_PER_COMMIT for count in tags.values())  # whole commits only
    assert sorted(tags) == list(range(len(tags)))  # no commit lost between visible ones
    assert len(tags) == sum(s.commit_kind == "APPEND" for s in snapshots)
    return len(tags)


@pytest.mark.slow
def test_killed_writers_leave_only_whole_commits(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "2",
            "num-sorted-run.compaction-trigger": "3",
            "target-file-size": "8 kb",
        },
    )
    ctx = mp.get_context("spawn")
    rng = random.Random(20261122)
    next_tag = finished = 0
    for _ in range(ROUNDS):
        committed = ctx.Value("i", 0)
        point = rng.randint(1, MAX_POINT)
        proc = ctx.Process(target=_writer, args=(str(warehouse), next_tag, point, committed))
        proc.start()
        proc.join(timeout=300)
        assert proc.exitcode == -signal.SIGKILL, (point, proc.exitcode)
        table = catalog.get_table("db.t")
        before, next_tag = next_tag, _check(table)
        # every write() that returned is visible; at most one more (killed after publishing)
        assert committed.value <= next_tag - before <= committed.value + 1, point
        finished += committed.value
    assert finished > 0  # some writers did finish commits between kills
    table = catalog.get_table("db.t")
    before_rows = table.read().sort_by("id").to_pylist()
    orphans = _unreferenced(table)
    assert orphans  # the kills left files behind
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.read().sort_by("id").to_pylist() == before_rows
    _check(table)
    # exactly the unreferenced files went; what is left is what snapshots reference
    assert sorted(name.rsplit("/", 1)[-1] for name in removed.deleted) == orphans
    assert _unreferenced(table) == []


def _unreferenced(table: Table) -> list[str]:
    """Names of the files under the table that no snapshot references (metadata aside)."""
    referenced = referenced_files(table.store)
    return sorted(
        p.name
        for p in Path(table.root).rglob("*")
        if p.is_file() and p.name not in referenced and p.parent.name not in ("schema", "snapshot")
    )
