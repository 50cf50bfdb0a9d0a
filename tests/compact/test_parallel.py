"""Parallel compaction (``plan_compaction`` on a thread pool): for random upserts into several
partitions and buckets (fixed and dynamic buckets, the lookup changelog producer, which shares
one lookup cache between workers), compacting with parallelism 4 gives exactly the files,
levels, sequence numbers, snapshots and changelog of parallelism 1, and the rows of a plain
last-write-wins model. A failure in any worker commits nothing and deletes every file any worker
wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakeops import Catalog
from lakeops.compact import planner
from tests.write.test_parallel import (
    CASES,
    batches,
    create,
    layout,
    model,
    rows_of,
    write_all,
)


@pytest.mark.parametrize(("bucket", "producer", "extra"), CASES[:2])
@pytest.mark.parametrize("full", [False, True])
def test_parallel_compaction_is_the_serial_compaction(
    catalog: Catalog, bucket: str, producer: str, extra: dict[str, str], full: bool
) -> None:
    # the writers do not compact, so the table compaction has level-0 runs to merge
    options = {**extra, "write-only": "true"}
    layouts = []
    for parallelism in (1, 4):
        table = create(catalog, f"t{parallelism}", bucket, producer, options)
        write_all(table, 5, parallelism=1)
        assert table.compact(full=full, parallelism=parallelism) is not None
        assert rows_of(table) == model(5)
        layouts.append(layout(table))
    serial, parallel = layouts
    assert len({(f[0], f[1]) for f in serial["live"]}) >= 3  # several buckets in play
    assert serial["snapshots"][-1][0] == "COMPACT"
    assert parallel == serial


def test_a_failing_bucket_commits_nothing_and_deletes_every_file(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(catalog, "t", "4", "lookup", {"write-only": "true"})
    write_all(table, 8, parallelism=1)
    before = sorted(p for p in Path(table.root).rglob("*") if p.is_file())
    last = table.store.latest_snapshot_id()
    real = planner.run_bucket
    finished = []

    def failing(table: Any, job: planner.BucketJob, **kw: Any) -> Any:
        if job.bucket == 2 and job.partition == jobs[-1].partition:
            raise OSError("disk full")
        done = real(table, job, **kw)
        finished.append(done)
        return done

    jobs = planner.plan_buckets(table.store, table.schema)
    monkeypatch.setattr(planner, "run_bucket", failing)
    with pytest.raises(OSError, match="disk full"):
        table.compact(full=True, parallelism=4)
    assert any(written for _, written in finished)  # other workers wrote files
    assert table.store.latest_snapshot_id() == last
    assert sorted(p for p in Path(table.root).rglob("*") if p.is_file()) == before


def test_lookup_reads_of_different_buckets_overlap(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup changelog producer's reads of higher-level row groups run inside each bucket's
    compaction, concurrently across buckets: the shared lookup cache holds its lock only for its
    bookkeeping, never while a row group is read. Two lookup reads must be in flight at once
    (a barrier of two; serial reads would break it at its timeout)."""
    import threading

    from lakeops.kv.reader import KeyValueReader

    table = create(catalog, "t", "4", "lookup", {"write-only": "true"})
    write_all(table, 3, parallelism=1)
    table.compact(full=True, parallelism=1)  # the higher level flush_level0 looks keys up in
    expected = model(3)
    for seed in (4, 5):  # small level-0 runs: flushed to a level above the max level
        (small,) = batches(seed, rounds=1, rows=40)
        table.write(small)
        expected |= {(r["p"], r["id"]): r["s"] for r in small.to_pylist()}
    barrier = threading.Barrier(2, timeout=20)
    entered: list[str] = []
    lock = threading.Lock()
    real = KeyValueReader.read_row_group

    def read_row_group(self: KeyValueReader, directory: str, *args: Any) -> Any:
        with lock:
            first_two = len(entered) < 2 and directory not in entered
            if first_two:
                entered.append(directory)
        if first_two:
            barrier.wait()  # raises BrokenBarrierError if the other bucket cannot get here
        return real(self, directory, *args)

    monkeypatch.setattr(KeyValueReader, "read_row_group", read_row_group)
    assert table.flush_level0(parallelism=4) is not None
    assert len(entered) == 2
    assert rows_of(table) == expected
