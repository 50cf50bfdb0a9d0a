"""Writers killed (SIGKILL) at random points of write, commit and compaction: only whole
commits are ever visible, and orphan cleanup removes what they left and nothing else."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import random
import signal
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.commit.orphan import referenced_files

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.int64()), ("pad", pa.string())])
ROWS_PER_COMMIT = 50


def _writer(warehouse: str, first_tag: int) -> None:
    table = Catalog(warehouse).get_table("db.t")
    tag = first_tag
    while True:  # until killed
        ids = [tag * ROWS_PER_COMMIT + i for i in range(ROWS_PER_COMMIT)]
        table.write(
            pa.table(
                {"id": ids, "tag": [tag] * ROWS_PER_COMMIT, "pad": ["x" * 200] * ROWS_PER_COMMIT},
                schema=SCHEMA,
            )
        )
        tag += 1


def _check(table: Table) -> int:
    """The table reads, ids are contiguous, and every visible commit is whole."""
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))
    rows = table.read().to_pylist()
    tags: dict[int, int] = {}
    for r in rows:
        tags[r["tag"]] = tags.get(r["tag"], 0) + 1
    assert all(count == ROWS_PER_COMMIT for count in tags.values())  # whole commits only
    assert len(tags) == sum(s.commit_kind == "APPEND" for s in snapshots)
    return max(tags, default=-1) + 1


@pytest.mark.slow
def test_killed_writers_leave_only_whole_commits(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
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
    next_tag = 0
    for _ in range(15):
        proc = ctx.Process(target=_writer, args=(str(warehouse), next_tag))
        proc.start()
        time.sleep(1.0 + rng.random() * 1.5)  # ~1 s to start, then a random point of work
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        next_tag = _check(catalog.get_table("db.t"))
    assert next_tag > 5  # the writers did commit between kills
    table = catalog.get_table("db.t")
    before = table.read().sort_by("id").to_pylist()
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.read().sort_by("id").to_pylist() == before
    _check(table)
    # what is left is exactly what snapshots reference (plus metadata)
    referenced = referenced_files(table.store)
    root = Path(table.root)
    leftover = [
        p
        for p in root.rglob("*")
        if p.is_file() and p.name not in referenced and p.parent.name not in ("schema", "snapshot")
    ]
    assert leftover == []
    assert all(name.rsplit("/", 1)[-1] not in referenced for name in removed.deleted)
