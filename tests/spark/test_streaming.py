"""Structured Streaming: the exactly-once sink (killed between write and commit, restarted) and the
change source, checked against pypaimon (tests/interop/oracle.py) and plain models."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog, Table
from lakeops.errors import ConfigurationError
from lakeops.spark.streaming import (
    COMMIT_GATE_ENV,
    LakeopsStreamWriter,
    last_committed_identifier,
    stream_commit_user,
)
from tests.interop.oracle import oracle_changes, oracle_read

pytestmark = [pytest.mark.slow, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "bucket": "2"}
KV = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _batches(n: int) -> list[pa.Table]:
    """Micro-batch inputs whose keys repeat across batches: a lost or doubled batch changes the
    sums."""
    return [
        pa.table({"id": [i % 7 for i in range(b, b + 20)], "v": [b * 100 + i for i in range(20)]})
        for b in range(n)
    ]


def _sums(batches: list[pa.Table]) -> dict[int, int]:
    total: Counter[int] = Counter()
    for b in batches:
        for k, v in zip(b.column("id").to_pylist(), b.column("v").to_pylist(), strict=True):
            total[k] += v
    return dict(total)


def _user_identifiers(t: Table, user: str) -> list[int]:
    return [s.commit_identifier for s in t.snapshots() if s.commit_user == user]


# --------------------------------------------------------------------------------------- sink
def test_commit_user_is_stable_per_checkpoint_and_required(tmp_path: Path) -> None:
    a = stream_commit_user({"checkpointlocation": str(tmp_path / "ck")})
    assert a == stream_commit_user({"checkpointLocation": str(tmp_path / "ck") + "/"})
    assert a != stream_commit_user({"checkpointlocation": str(tmp_path / "other")})
    assert stream_commit_user({"commit_user": "job-7"}) == "job-7"
    with pytest.raises(ConfigurationError, match="checkpointLocation"):
        LakeopsStreamWriter({"path": str(tmp_path)}, False)


def test_replayed_batch_id_commits_nothing(catalog: Catalog) -> None:
    t = catalog.create_table("db.sink", schema=KV, primary_keys=["id"], options=SUM)
    options = {"path": t.root, "commit_user": "query-1"}
    b0, b1 = _batches(2)

    def run(data: pa.Table, batch_id: int) -> list:
        writer = LakeopsStreamWriter(options, False)  # a fresh writer, as each Spark commit
        message = writer.write(iter(data.to_batches()))
        writer.commit([message], batch_id)
        return message.messages  # type: ignore[attr-defined]

    run(b0, 0)
    replay = run(b0, 0)  # Spark replays batch 0 (its commit was not recorded)
    run(b1, 1)
    run(b1, 0)  # an older batch id is committed too
    assert _user_identifiers(t, "query-1") == [0, 1]
    assert last_committed_identifier(t, "query-1") == 1
    assert last_committed_identifier(t, "query-2") is None
    # the replay's own files are gone; the table holds each batch once (pypaimon reads it)
    files = [f.file_name for m in replay for f in m.new_files]
    assert files and not any(
        (Path(t.root) / "bucket-0" / f).exists() or (Path(t.root) / "bucket-1" / f).exists()
        for f in files
    )
    got = oracle_read(Path(t.root).parents[1], "db.sink").to_pylist()
    assert {r["id"]: r["v"] for r in got} == _sums([b0, b1])


class _Gate:
    """The test's side of the sink's commit gate (two FIFOs held open read-write, so neither
    side sees an early end of file)."""

    def __init__(self, root: Path) -> None:
        root.mkdir()
        self.root = root
        os.mkfifo(root / "reached")
        os.mkfifo(root / "release")
        self.reached = os.open(root / "reached", os.O_RDWR)
        self.release = os.open(root / "release", os.O_RDWR)

    def next(self, proc: subprocess.Popen[bytes]) -> tuple[str, int, int]:
        """The next commit point the query reached: (point, batch id, pid of the committer)."""
        while True:
            ready, _, _ = select.select([self.reached], [], [], 5)
            if ready:
                point, batch, pid = os.read(self.reached, 200).decode().split()
                return point, int(batch), int(pid)
            if proc.poll() is not None:
                raise AssertionError(f"the query exited ({proc.returncode}) before the gate")

    def go(self) -> None:
        os.write(self.release, b"go\n")

    def close(self) -> None:
        os.close(self.reached)
        os.close(self.release)


def _query(
    source: Path, table: str, checkpoint: Path, gate: Path | None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(COMMIT_GATE_ENV, None)
    if gate is not None:
        env[COMMIT_GATE_ENV] = str(gate)
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("stream_query.py")),
            str(source),
            table,
            str(checkpoint),
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the JVM and its Python workers die too
    )


def _kill(proc: subprocess.Popen[bytes], committer_pid: int) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):  # a Python worker may have its own group
        os.kill(committer_pid, signal.SIGKILL)
    proc.wait()


def test_killed_between_write_and_commit_then_restarted(tmp_path: Path, catalog: Catalog) -> None:
    """Run 1 is killed after batch 1 wrote its files, before its commit; run 2 commits the
    replayed batch 1 and is killed right after (before Spark records it); run 3 replays batch 1
    (skipped: already committed) and commits batch 2. Every batch lands exactly once."""
    t = catalog.create_table("db.stream", schema=KV, primary_keys=["id"], options=SUM)
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    batches = _batches(3)
    for i, b in enumerate(batches):
        pq.write_table(b, source / f"part-{i}.parquet")
        os.utime(source / f"part-{i}.parquet", (1_700_000_000 + i, 1_700_000_000 + i))
    user = stream_commit_user({"checkpointLocation": str(checkpoint)})
    gate = _Gate(tmp_path / "gate")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        # run 1: batch 0 commits; batch 1 is killed between its write and its commit
        procs.append(p := _query(source, t.root, checkpoint, gate.root))
        for expected in (("commit", 0), ("committed", 0)):
            assert gate.next(p)[:2] == expected
            gate.go()
        point, batch, pid = gate.next(p)
        assert (point, batch) == ("commit", 1)
        _kill(p, pid)
        assert _user_identifiers(t, user) == [0]

        # run 2: Spark replays batch 1, which commits; killed before Spark's commit log
        procs.append(p := _query(source, t.root, checkpoint, gate.root))
        assert gate.next(p)[:2] == ("commit", 1)
        gate.go()
        point, batch, pid = gate.next(p)
        assert (point, batch) == ("committed", 1)
        _kill(p, pid)
        assert _user_identifiers(t, user) == [0, 1]

        # run 3: batch 1 again (skipped), then batch 2
        procs.append(p := _query(source, t.root, checkpoint, None))
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        gate.close()
    assert _user_identifiers(t, user) == [0, 1, 2]
    got = oracle_read(Path(t.root).parents[1], "db.stream").to_pylist()
    assert {r["id"]: r["v"] for r in got} == _sums(batches)


# ------------------------------------------------------------------------------------- source
def _stream_once(spark, path: str, out: Path, **options: str) -> list[tuple]:
    """Run the change stream on what is there now (availableNow) into a parquet sink at ``out``
    (checkpointed beside it); returns every row the sink holds so far."""
    reader = spark.readStream.format("lakeops").option("row-kind", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load(path)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(out) + "-checkpoint")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    return sorted(tuple(r) for r in spark.read.parquet(str(out)).collect())


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_source_emits_full_state_then_changes(spark, catalog: Catalog, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = catalog.create_table(
        "db.src", schema=schema, primary_keys=["id"], options={"bucket": "2", "rowkind.field": "op"}
    )
    t.write(pa.table({"id": [1, 2, 3, 1], "v": [10, 20, 30, 11], "op": ["+I"] * 4}, schema=schema))
    out = tmp_path / "out"
    warehouse = Path(t.root).parents[1]

    first = _stream_once(spark, t.root, out)
    assert first == sorted(("+I", *r) for r in _rows(oracle_read(warehouse, "db.src", 1)))

    t.write(pa.table({"id": [2, 4], "v": [21, 40], "op": ["-D", "+I"]}, schema=schema))
    t.write(pa.table({"id": [3], "v": [31], "op": ["+U"]}, schema=schema))
    second = _stream_once(spark, t.root, out)  # restarted from the checkpoint
    changes = _rows(oracle_changes(warehouse, "db.src", 1, 3))
    assert second == sorted(first + changes)
    assert {r[0] for r in changes} == {"-D", "+I", "+U"}

    # from a given snapshot on: only its changes and later ones, no full state
    from_two = _stream_once(spark, t.root, tmp_path / "out2", **{"scan.snapshot-id": "2"})
    assert from_two == changes
    with pytest.raises(Exception, match="row-kind"):
        spark.readStream.format("lakeops").load(t.root).writeStream.format("memory").queryName(
            "src_4"
        ).start().awaitTermination()
