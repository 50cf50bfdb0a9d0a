"""Many processes committing to one table at once lose no commit, on every store; writers
racing a compaction lose nothing."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitConflictError, ConfigurationError
from lakeops.io.file_io import FileIO

WRITERS = 8
COMMITS_EACH = 25
# the S3 test server serialises every request in one process: fewer commits, still 4 processes
# racing and a compactor (the local-disk race runs the full size)
S3_WRITERS = 4
S3_COMMITS_EACH = 6
SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32())])


def _writer(
    uri: str, storage: dict, options: dict, writer_id: int, commits: int, start: Any
) -> None:
    table = Catalog(uri, storage_options=storage, options=options).get_table("db.t")
    start.wait()
    for c in range(commits):
        base = (writer_id * commits + c) * 10
        table.write(
            pa.table(
                {"id": list(range(base, base + 10)), "writer": [writer_id] * 10}, schema=SCHEMA
            )
        )


def _compactor(uri: str, storage: dict, options: dict, start: Any, stop: Any, results: Any) -> None:
    """Compact while the writers run (losing some races), then once fully after they
    stopped; report how many compactions it committed."""
    table = Catalog(uri, storage_options=storage, options=options).get_table("db.t")
    start.wait()
    done = 0
    while not stop.is_set():
        with contextlib.suppress(CommitConflictError):
            done += table.compact() is not None
    done += table.compact(full=True) is not None  # no writer left: nothing to conflict with
    results.put(done)


def _run(
    uri: str,
    storage: dict,
    options: dict,
    writers: int = WRITERS,
    commits: int = COMMITS_EACH,
) -> None:
    catalog = Catalog(uri, storage_options=storage, options=options)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "commit.max-retries": "200"},
    )
    ctx = mp.get_context("spawn")
    start, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(uri, storage, options, w, commits, start))
        for w in range(writers)
    ]
    compactor = ctx.Process(target=_compactor, args=(uri, storage, options, start, stop, results))
    for p in [*procs, compactor]:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=600)
    stop.set()
    compactor.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * writers
    assert compactor.exitcode == 0
    snapshots = table.snapshots()
    total = writers * commits
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))  # contiguous
    assert sum(s.commit_kind == "APPEND" for s in snapshots) == total  # each commit once
    assert sorted(table.read().column("id").to_pylist()) == list(range(total * 10))
    assert table.latest_snapshot().total_record_count >= total * 10
    done = results.get(timeout=10)
    # the compactor committed compactions (its last, full one runs alone), each one a COMPACT
    # snapshot (writers may add their own), and that full compaction left no level-0 file
    assert done >= 1
    assert sum(s.commit_kind == "COMPACT" for s in snapshots) >= done
    assert 0 not in {e.file.level for e in table.store.live_entries(snapshots[-1])}


@pytest.mark.slow
def test_local_disk(warehouse) -> None:
    _run(str(warehouse), {}, {})


@pytest.mark.slow
def test_s3_conditional_put(s3_warehouse) -> None:
    uri, storage = s3_warehouse
    _run(uri, storage, {}, S3_WRITERS, S3_COMMITS_EACH)


@pytest.mark.slow
def test_s3_with_lock(s3_warehouse, postgres_dsn, tmp_path) -> None:
    uri, storage = s3_warehouse
    if postgres_dsn is not None:
        options = {
            "lock.enabled": "true",
            "lock.type": "postgres",
            "lock.postgres.dsn": postgres_dsn,
        }
    else:  # no PostgreSQL server here: the single-host lock
        options = {
            "lock.enabled": "true",
            "lock.type": "sqlite",
            "lock.sqlite.path": str(tmp_path / "locks.db"),
        }
    catalog = Catalog(uri, storage_options=storage, options=options)
    assert type(catalog.file_io.publisher).__name__ == "LockedPublish"
    _run(uri, storage, options, S3_WRITERS, S3_COMMITS_EACH)


def test_publish_exclusive_has_one_winner(tmp_path) -> None:
    fio = FileIO(str(tmp_path))
    target = str(tmp_path / "snapshot" / "snapshot-1")
    assert fio.publish_exclusive(target, b"first") is True
    assert fio.publish_exclusive(target, b"second") is False
    assert (tmp_path / "snapshot" / "snapshot-1").read_bytes() == b"first"
    assert [p.name for p in (tmp_path / "snapshot").iterdir()] == ["snapshot-1"]


@pytest.mark.slow
def test_s3_sees_commits_of_other_processes(s3_warehouse) -> None:
    """A process that listed the snapshot directory still sees, reads and commits on top of
    snapshots another process publishes afterwards (no stale listing is reused)."""
    uri, storage = s3_warehouse
    catalog = Catalog(uri, storage_options=storage)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    table.write(pa.table({"id": [0], "writer": [0]}, schema=SCHEMA))
    assert [s.id for s in table.snapshots()] == [1]  # lists snapshot/
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    start.set()
    other = ctx.Process(target=_writer, args=(uri, storage, {}, 1, 1, start))
    other.start()
    other.join(timeout=300)
    assert other.exitcode == 0
    latest = table.latest_snapshot()
    assert latest is not None and latest.id == 2
    assert sorted(table.read().column("id").to_pylist()) == [0, *range(10, 20)]
    table.write(pa.table({"id": [1], "writer": [0]}, schema=SCHEMA))
    assert [s.id for s in table.snapshots()] == [1, 2, 3]


def test_listing_cache_is_refused(s3_warehouse) -> None:
    uri, storage = s3_warehouse
    with pytest.raises(ConfigurationError, match="use_listings_cache"):
        Catalog(uri, storage_options={**storage, "use_listings_cache": True})
