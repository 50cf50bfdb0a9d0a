"""Many processes committing to one table at once lose no commit; ids stay contiguous."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.io.file_io import FileIO

WRITERS = 8
COMMITS_EACH = 4
SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32())])


def _writer(warehouse: str, writer_id: int, start: mp.Event) -> None:
    table = Catalog(warehouse).get_table("db.t")
    start.wait()
    for c in range(COMMITS_EACH):
        base = (writer_id * COMMITS_EACH + c) * 10
        table.write(
            pa.table(
                {"id": list(range(base, base + 10)), "writer": [writer_id] * 10}, schema=SCHEMA
            )
        )


@pytest.mark.slow
def test_eight_processes_lose_no_commit(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "commit.max-retries": "50"},
    )
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(str(warehouse), w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=180)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    total = WRITERS * COMMITS_EACH
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))  # contiguous
    assert sum(s.commit_kind == "APPEND" for s in snapshots) == total  # no append lost
    assert table.latest_snapshot().total_record_count == total * 10  # keys are all distinct
    assert sorted(table.read().column("id").to_pylist()) == list(range(total * 10))


def test_publish_exclusive_has_one_winner(tmp_path) -> None:
    fio = FileIO(str(tmp_path))
    target = str(tmp_path / "snapshot" / "snapshot-1")
    assert fio.publish_exclusive(target, b"first") is True
    assert fio.publish_exclusive(target, b"second") is False
    assert (tmp_path / "snapshot" / "snapshot-1").read_bytes() == b"first"
    assert [p.name for p in (tmp_path / "snapshot").iterdir()] == ["snapshot-1"]


def _race(path: str, content: bytes, barrier, results) -> None:
    barrier.wait()
    results.put(FileIO(path.rsplit("/", 2)[0]).publish_exclusive(path, content))


@pytest.mark.slow
def test_processes_racing_for_one_name(tmp_path) -> None:
    ctx = mp.get_context("spawn")
    for round_ in range(5):
        target = str(tmp_path / f"r{round_}" / "snapshot" / "snapshot-1")
        barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
        procs = [
            ctx.Process(target=_race, args=(target, f"w{i}".encode() * 100, barrier, results))
            for i in range(WRITERS)
        ]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert outcomes.count(True) == 1
        content = (tmp_path / f"r{round_}" / "snapshot" / "snapshot-1").read_bytes()
        assert content == content[:2] * 100  # one writer's complete content, never a mix
