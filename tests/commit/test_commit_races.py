"""Races of 6 writer processes on one table of each bucket mode, with a process compacting,
expiring snapshots and rolling back beside them. The writers overwrite each other's keys; each
records the snapshot id of every commit it made (the maintainer of every rollback), which gives
the commit order, and a plain model replays the committed batches and rollbacks in that order.
lakeops and pypaimon must both read exactly the model (no duplicate key, no lost key), before
and after a full compaction, and snapshot ids must be contiguous and never reused."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitConflictError, StaleWriteError
from tests.interop.oracle import oracle_read

pytestmark = [pytest.mark.slow, pytest.mark.interop]  # processes racing, judged by pypaimon

WRITERS = 6
COMMITS_EACH = 4
KEYS = 120
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])


def _batch(writer: int, commit: int) -> pa.Table:
    """Overlapping keys; cross-partition tables see keys move between partitions."""
    start = (writer * 37 + commit * 53) % KEYS
    ids = [(start + i) % KEYS for i in range(40)]
    tag = f"w{writer}c{commit}"
    return pa.table(
        {"id": ids, "p": [f"p{(writer + commit) % 3}"] * len(ids), "v": [tag] * len(ids)},
        schema=SCHEMA,
    )


def _writer(warehouse: str, writer: int, start: Any, rolled: Any, results: Any) -> None:
    """Commit the writer's batches, reporting each commit's APPEND snapshot; an error is
    reported too (the test then fails with it instead of waiting for this writer), and the
    writer always reports that it finished."""
    try:
        _write_batches(warehouse, writer, start, rolled, results)
    except BaseException:
        results.put(("error", writer, traceback.format_exc()))
        raise
    finally:
        results.put(None)


def _write_batches(warehouse: str, writer: int, start: Any, rolled: Any, results: Any) -> None:
    table = Catalog(warehouse).get_table("db.t")
    start.wait()
    for commit in range(COMMITS_EACH):
        if commit == COMMITS_EACH - 1:  # the last commits race a rollback, however slow the box
            rolled.wait(timeout=300)
        user = f"w{writer}c{commit}-{uuid.uuid4()}"  # finds this commit's APPEND afterwards
        last = None
        for _ in range(20):  # what Table.write does, with a commit user of its own
            write = table.new_write()
            try:
                write.write(_batch(writer, commit))
                last = table.commit(write.prepare_commit(), commit_user=user)
                break
            except StaleWriteError:
                write.abort()  # planned on a snapshot another commit made stale: again
            except CommitConflictError:
                write.abort()  # a clean failure: nothing of it was committed
                break
        if last is None:
            continue
        sid = last.id
        while not (
            (s := table.store.snapshot(sid)).commit_user == user and s.commit_kind != "COMPACT"
        ):
            sid -= 1
        results.put(((sid, 0), writer, commit))


def _maintainer(warehouse: str, start: Any, stop: Any, rolled: Any, results: Any) -> None:
    """Compacts and expires, and every third round rolls the table back two snapshots."""
    table = Catalog(warehouse).get_table("db.t")
    start.wait()
    rounds = 0
    while not stop.is_set():
        rounds += 1
        with contextlib.suppress(CommitConflictError):
            table.compact(full=True)
        # keeps enough for the writers to find their own APPEND snapshots
        table.expire_snapshots(retain_min=30, retain_max=30, time_retained="0 ms")
        ids = table.store.snapshot_ids()
        if rounds % 3 == 0 and len(ids) > 3:
            target = ids[-3]
            with contextlib.suppress(CommitConflictError):
                if (done := table.rollback_to(target)) is not None:
                    results.put(((done.id, 1), -1, target))
                    rolled.set()
    results.put("done")


@pytest.mark.parametrize(
    ("partitioned", "options"),
    [
        (False, {"bucket": "2"}),
        (False, {"bucket": "-1", "dynamic-bucket.target-row-num": "30"}),
        (True, {"bucket": "-1"}),
    ],
    ids=["fixed", "dynamic", "cross-partition"],
)
def test_racing_writers_lose_and_duplicate_nothing(
    catalog: Catalog, warehouse: Path, partitioned: bool, options: dict[str, str]
) -> None:
    catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        partition_keys=["p"] if partitioned else None,
        options={"commit.max-retries": "50", **options},
    )
    ctx = mp.get_context("spawn")
    start, stop, rolled, results = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
    writers = [
        ctx.Process(target=_writer, args=(str(warehouse), w, start, rolled, results))
        for w in range(WRITERS)
    ]
    maintainer = ctx.Process(
        target=_maintainer, args=(str(warehouse), start, stop, rolled, results)
    )
    for p in [*writers, maintainer]:
        p.start()
    start.set()
    events: list[tuple[tuple[int, int], int, int]] = []
    finished = maintained = 0
    while finished < WRITERS or not maintained:
        item = results.get(timeout=300)
        if item is None:
            finished += 1
            if finished == WRITERS:
                stop.set()
        elif item == "done":
            maintained = 1
        elif item[0] == "error":
            stop.set()
            pytest.fail(f"writer {item[1]} failed:\n{item[2]}")
        else:
            events.append(item)
    for p in [*writers, maintainer]:
        p.join(timeout=120)
        assert p.exitcode == 0

    ids = [sid for sid, _, _ in events]
    assert len(set(ids)) == len(ids)  # no two commits were told the same snapshot
    assert sum(w >= 0 for _, w, _ in events) >= WRITERS  # the race made progress
    assert any(w < 0 for _, w, _ in events)  # and rollbacks raced it
    # the model: commits replayed in snapshot order; a rollback restores the rows as of its
    # target snapshot (every event at or below it)
    model: dict[int, tuple[str, str]] = {}
    history: list[tuple[int, dict[int, tuple[str, str]]]] = []
    for (sid, _), writer, arg in sorted(events):
        if writer < 0:
            model = dict(next((m for s, m in reversed(history) if s <= arg), {}))
        else:
            b = _batch(writer, arg)
            columns = (b.column(c).to_pylist() for c in ("id", "p", "v"))
            for i, p, v in zip(*columns, strict=True):
                model[i] = (p, v) if partitioned else ("", v)
        history.append((sid, dict(model)))

    table = catalog.get_table("db.t")
    snapshot_ids = table.store.snapshot_ids()
    assert snapshot_ids == list(range(snapshot_ids[0], snapshot_ids[-1] + 1))

    def rows(got: pa.Table) -> dict[int, tuple[str, str]]:
        keys = got.column("id").to_pylist()
        assert len(keys) == len(set(keys)), "a key is duplicated"
        parts = got.column("p").to_pylist() if partitioned else [""] * len(keys)
        return dict(zip(keys, zip(parts, got.column("v").to_pylist(), strict=True), strict=True))

    assert rows(table.read()) == model
    assert rows(oracle_read(warehouse, "db.t")) == model
    catalog.get_table("db.t").compact(full=True)
    assert rows(catalog.get_table("db.t").read()) == model
    assert rows(oracle_read(warehouse, "db.t")) == model


WIDE = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64())])
ROUNDS = 12


def _stream(warehouse: str, column: str, start: Any) -> None:
    """One stream of the wide table: writes its column of every key, round after round."""
    table = Catalog(warehouse).get_table("db.w")
    other = "b" if column == "a" else "a"
    ids = list(range(200)) if column == "a" else list(reversed(range(200)))
    start.wait()
    for round_ in range(1, ROUNDS + 1):
        table.write(
            pa.table(
                {"id": ids, column: [round_] * len(ids), other: pa.nulls(len(ids), pa.int64())},
                schema=WIDE,
            )
        )


def _compactor(warehouse: str, start: Any, stop: Any) -> None:
    table = Catalog(warehouse).get_table("db.w")
    start.wait()
    while not stop.is_set():
        with contextlib.suppress(CommitConflictError):
            table.compact(full=True)


@pytest.mark.parametrize(
    "options",
    [
        {"merge-engine": "partial-update"},
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "last_non_null_value",
            "fields.b.aggregate-function": "last_non_null_value",
        },
    ],
    ids=["partial-update", "aggregation"],
)
def test_two_stream_processes_keep_every_columns_latest_value(
    catalog: Catalog, warehouse: Path, options: dict[str, str]
) -> None:
    """The wide table of the design documents, as two processes writing disjoint columns of
    the same keys while a third compacts: every column ends with its stream's last value."""
    catalog.create_table(
        "db.w",
        schema=WIDE,
        primary_keys=["id"],
        options={"bucket": "2", "commit.max-retries": "50", **options},
    )
    ctx = mp.get_context("spawn")
    start, stop = ctx.Event(), ctx.Event()
    streams = [ctx.Process(target=_stream, args=(str(warehouse), c, start)) for c in "ab"]
    compactor = ctx.Process(target=_compactor, args=(str(warehouse), start, stop))
    for p in [*streams, compactor]:
        p.start()
    start.set()
    for p in streams:
        p.join(timeout=300)
        assert p.exitcode == 0
    stop.set()
    compactor.join(timeout=120)
    assert compactor.exitcode == 0
    expected = {i: (ROUNDS, ROUNDS) for i in range(200)}

    def rows(got: pa.Table) -> dict[int, tuple[int, int]]:
        return dict(
            zip(
                got.column("id").to_pylist(),
                zip(got.column("a").to_pylist(), got.column("b").to_pylist(), strict=True),
                strict=True,
            )
        )

    assert rows(catalog.get_table("db.w").read()) == expected
    assert rows(oracle_read(warehouse, "db.w")) == expected
    catalog.get_table("db.w").compact(full=True)
    assert rows(catalog.get_table("db.w").read()) == expected
    assert rows(oracle_read(warehouse, "db.w")) == expected
