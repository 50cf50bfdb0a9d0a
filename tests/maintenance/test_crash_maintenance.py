"""A process that writes, compacts, expires and rolls back in a loop is SIGKILLed at seeded
points (it kills itself at its N-th storage call: :mod:`tests.io.kill_points`), again and
again. After every kill the table must read (lakeops, and pypaimon along the
way), every visible commit must be whole, snapshot ids contiguous, and after the last kill
orphan cleanup must remove exactly the unreferenced files and change no row."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import random
import signal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitConflictError, Table
from lakeops.maintenance.orphan import referenced_files
from tests.interop.oracle import oracle_read
from tests.io.kill_points import die_at

SCHEMA = pa.schema([("id", pa.int64()), ("tag", pa.int64()), ("pad", pa.string())])
ROWS = 40
#: the kill point: the N-th storage call (a write is ~14, a compaction or expiry more)
MAX_POINT = 150


def _batch(tag: int) -> pa.Table:
    ids = [tag * ROWS + i for i in range(ROWS)]
    return pa.table(
        {"id": ids, "tag": [tag] * ROWS, "pad": [os.urandom(30).hex() for _ in ids]},
        schema=SCHEMA,
    )


def _maintain(warehouse: str, first_tag: int, seed: int, point: int) -> None:
    """Until it kills itself at its ``point``-th storage call: write, compact, expire, roll
    back."""
    die_at(point)
    rng = random.Random(seed)
    table = Catalog(warehouse).get_table("db.t")
    tag = first_tag
    while True:
        step = rng.randrange(4)
        try:
            if step == 0:
                table.write(_batch(tag))
                tag += 1
            elif step == 1:
                table.compact(full=True)
            elif step == 2:
                table.expire_snapshots(retain_min=3, retain_max=5, time_retained="0 ms")
            else:
                ids = table.store.snapshot_ids()
                table.rollback_to(rng.choice(ids[-4:]))
        except CommitConflictError:
            pass


def _check(table: Table) -> set[int]:
    """The table reads, ids are contiguous, and every visible commit is whole."""
    ids = table.store.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))
    tags: dict[int, int] = {}
    rows = table.read()
    keys = rows.column("id").to_pylist()
    assert len(keys) == len(set(keys))
    for tag in rows.column("tag").to_pylist():
        tags[tag] = tags.get(tag, 0) + 1
    assert all(count == ROWS for count in tags.values()), tags  # whole commits only
    return set(tags)


def _content(table: pa.Table) -> list[tuple[int, int, str]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "tag", "pad")), strict=True))


@pytest.mark.interop
@pytest.mark.slow
def test_killed_maintenance_never_breaks_the_table(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "3"},
    )
    for tag in range(4):
        table.write(_batch(tag))
    ctx = mp.get_context("spawn")
    rng = random.Random(20261125)
    next_tag = 100
    for kill in range(12):
        point = rng.randint(1, MAX_POINT)
        proc = ctx.Process(target=_maintain, args=(str(warehouse), next_tag, kill, point))
        proc.start()
        proc.join(timeout=300)
        assert proc.exitcode == -signal.SIGKILL, (point, proc.exitcode)
        next_tag += 1000
        current = catalog.get_table("db.t")
        _check(current)
        if kill % 4 == 3:
            assert _content(oracle_read(warehouse, "db.t")) == _content(current.read())
    table = catalog.get_table("db.t")
    before = _content(table.read())
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert _content(catalog.get_table("db.t").read()) == before
    assert _content(oracle_read(warehouse, "db.t")) == before
    referenced = referenced_files(table.store)
    leftover = [
        p
        for p in Path(table.root).rglob("*")
        if p.is_file() and p.name not in referenced and p.parent.name not in ("schema", "snapshot")
    ]
    assert leftover == []
    assert all(name.rsplit("/", 1)[-1] not in referenced for name in removed.deleted)
