"""Writers that wait their turn: many processes commit appends to one table on an S3 server
(moto on loopback) at once, with the default commit options. Appends never conflict, so every
writer must commit every batch however often it loses the race for the next snapshot. Every
row is read back by lakeops and by pypaimon (from a byte copy of the table) and counted against
the model: the batches the writers were asked to write."""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_read

pytestmark = [pytest.mark.slow, pytest.mark.interop]  # processes racing, judged by pypaimon

SCHEMA = pa.schema([("writer", pa.int32()), ("commit", pa.int32()), ("row", pa.int64())])
ROWS_EACH = 10


def _batch(writer: int, commit: int) -> pa.Table:
    return pa.table(
        {
            "writer": [writer] * ROWS_EACH,
            "commit": [commit] * ROWS_EACH,
            "row": list(range(ROWS_EACH)),
        },
        schema=SCHEMA,
    )


def _writer(uri: str, storage: dict, writer: int, commits: int, start: Any, results: Any) -> None:
    """Commit ``commits`` batches; report each snapshot id, or the error that stopped it, and
    then that it finished."""
    try:
        table = Catalog(uri, storage_options=storage).get_table("db.t")
        start.wait()
        for commit in range(commits):
            snapshot = table.write(_batch(writer, commit))
            assert snapshot is not None
            results.put((writer, commit, snapshot.id))
    except BaseException:
        results.put((writer, -1, traceback.format_exc()))
        raise
    finally:
        results.put(None)


def _model(writers: int, commits: int) -> list[tuple[int, int, int]]:
    return sorted(
        (w, c, r) for w in range(writers) for c in range(commits) for r in range(ROWS_EACH)
    )


def _bag(table: pa.Table) -> list[tuple[int, int, int]]:
    return sorted((r["writer"], r["commit"], r["row"]) for r in table.to_pylist())


def _local_copy(uri: str, storage: dict, target: Path) -> Path:
    """A byte copy of the warehouse's table ``db.t`` on local disk (pypaimon reads it there)."""
    import s3fs

    fs = s3fs.S3FileSystem(**storage)
    root = uri.removeprefix("s3://").rstrip("/") + "/db.db/t"
    for path in fs.find(root):
        local = target / "db.db" / "t" / path[len(root) + 1 :]
        local.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(path, str(local))
    return target


def _contend(s3_warehouse: tuple[str, dict], tmp_path: Path, writers: int, commits: int) -> None:
    uri, storage = s3_warehouse
    catalog = Catalog(uri, storage_options=storage)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA)  # the default options
    # forkserver: each writer process is forked from one that imported lakeops once
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["lakeops", "pyarrow", "s3fs", __name__])
    start, results = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(uri, storage, w, commits, start, results))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    began = time.monotonic()
    start.set()
    reports, finished = [], 0
    while finished < writers:
        report = results.get(timeout=600)
        if report is None:
            finished += 1
        else:
            reports.append(report)
    for p in procs:
        p.join(timeout=120)
    print(f"{writers} writers x {commits} commits: {time.monotonic() - began:.1f} s")
    failures = [r[2] for r in reports if r[1] == -1]
    assert failures == [], failures[0]
    assert [p.exitcode for p in procs] == [0] * writers
    assert len(reports) == writers * commits

    # every writer was told a snapshot of its own, and that snapshot holds its batch
    ids = [sid for _, _, sid in reports]
    assert len(set(ids)) == len(ids)
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, len(snapshots) + 1))  # ids only grow
    assert sum(s.commit_kind == "APPEND" for s in snapshots) == writers * commits
    model = _model(writers, commits)
    assert _bag(table.read()) == model
    local = _local_copy(uri, storage, tmp_path / "copy")
    assert _bag(oracle_read(local, "db.t")) == model


def test_8_writers_5_commits_each_all_commit(
    s3_warehouse: tuple[str, dict], tmp_path: Path
) -> None:
    _contend(s3_warehouse, tmp_path, writers=8, commits=5)


def test_32_writers_3_commits_each_all_commit(
    s3_warehouse: tuple[str, dict], tmp_path: Path
) -> None:
    _contend(s3_warehouse, tmp_path, writers=32, commits=3)
