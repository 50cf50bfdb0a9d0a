"""Fault injection at every storage step of a write (with its in-writer compaction), a full
compaction, a rollback and an expiry, on local disk and on the S3 test server.

The n-th call the operation makes to the table's storage (reads, writes, deletes, hint updates,
the exclusive publish — and, for the publish, also *after* the object landed) raises an I/O
error, for n = 1, 2, … until the operation no longer reaches an n-th call. Every outcome must
be a success, a clean failure or :class:`CommitStateUnknownError`; afterwards (faults off) the
table must hold exactly the rows of the operations whose snapshots were published — a plain
model decides — read by lakeops after every step and by pypaimon along the way."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitStateUnknownError, LakeopsError, Table
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
METHODS = ("read_bytes", "write_bytes", "overwrite_atomic", "delete", "exists", "publish_exclusive")


class Faults:
    """Makes the n-th storage call of a FileIO fail (``after``: the n-th publish lands, then
    its answer is lost)."""

    def __init__(self, fio: Any) -> None:
        self.fio = fio
        self.real = {m: getattr(fio, m) for m in METHODS}
        self.fail_at = 0
        self.calls = 0
        self.after = False
        for m in METHODS:
            setattr(fio, m, self._wrap(m))

    def _wrap(self, method: str) -> Callable[..., Any]:
        real = self.real[method]

        def call(*args: Any) -> Any:
            if self.after:  # count publishes only: the n-th lands, then its answer is lost
                if method != "publish_exclusive":
                    return real(*args)
                self.calls += 1
                if self.calls != self.fail_at:
                    return real(*args)
                real(*args)
                raise ConnectionResetError("connection reset after the put landed")
            self.calls += 1
            if self.calls != self.fail_at:
                return real(*args)
            raise OSError(errno.EIO, f"injected fault in {method}")

        return call

    def arm(self, n: int, after: bool = False) -> None:
        self.fail_at, self.calls, self.after = n, 0, after

    def disarm(self) -> None:
        self.fail_at = 0


def _batch(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _rows(table: pa.Table) -> dict[int, str]:
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a key is duplicated"
    return dict(zip(ids, table.column("v").to_pylist(), strict=True))


def _operation(t: Table, n: int, oldest: int) -> tuple[str, Callable[[], Any], pa.Table | None]:
    """The ``n``-th operation of the sweep: (kind, run it, the batch it writes); a rollback
    goes back to ``oldest``, the oldest snapshot still alive."""
    kind = ("write", "compact", "write", "rollback", "expire")[n % 5]
    if kind == "write":
        batch = _batch(10 * n, 10 * n + 25, f"s{n}-")
        return kind, lambda: t.write(batch), batch
    if kind == "compact":
        return kind, lambda: t.compact(full=True), None
    if kind == "rollback":
        return kind, lambda: t.rollback_to(oldest), None
    return (
        kind,
        lambda: t.expire_snapshots(retain_min=4, retain_max=4, time_retained="0 ms"),
        None,
    )


def _sweep(catalog: Catalog, warehouse: str, oracle: bool, ops: int, stride: int = 1) -> None:
    """Fail the n-th storage call of each of ``ops`` operations, for n = 1, 1 + stride, … until
    an operation makes fewer calls than n."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "2"},
    )
    first = _batch(0, 30, "base")
    table.write(first)
    content: dict[int, str] = _rows(first)
    states = {1: dict(content)}  # snapshot id -> rows (model)
    step = 0

    faults = Faults(table.file_io)  # the catalog's storage, shared by every table it opens
    for op_index in range(ops):
        for after in (False, True):
            n = 1 - stride
            while True:
                n += stride
                t = catalog.get_table("db.t")
                assert t.file_io is faults.fio
                kind, run, batch = _operation(t, op_index, min(states))
                before = t.store.latest_snapshot_id()
                faults.arm(n, after)
                try:
                    run()
                except CommitStateUnknownError:
                    pass
                except (LakeopsError, OSError):
                    pass
                finally:
                    reached = faults.calls >= n
                    faults.disarm()
                now = catalog.get_table("db.t").store.latest_snapshot_id()
                assert now is not None and before is not None
                if now != before:  # the operation's snapshot(s) landed
                    if kind == "write":
                        assert batch is not None
                        content = {**content, **_rows(batch)}
                    elif kind == "rollback":
                        content = dict(states[min(states)])
                for sid in range(before + 1, now + 1):
                    states[sid] = dict(content)
                fresh = catalog.get_table("db.t")
                alive = set(fresh.store.snapshot_ids())
                states = {sid: rows for sid, rows in states.items() if sid in alive}
                assert _rows(fresh.read()) == content, (kind, n, after)
                step += 1
                if oracle and step % 40 == 0:
                    assert _rows(oracle_read(warehouse, "db.t")) == content, (kind, n, after)
                if not reached:
                    break  # the operation made fewer than n storage calls: swept
    ids = catalog.get_table("db.t").store.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))
    if oracle:
        assert _rows(oracle_read(warehouse, "db.t")) == content


@pytest.mark.slow
def test_faults_at_every_step_on_local_disk(catalog: Catalog, warehouse: Path) -> None:
    _sweep(catalog, str(warehouse), oracle=True, ops=5)


@pytest.mark.slow
def test_faults_at_every_step_on_s3(s3_warehouse: tuple[str, dict]) -> None:
    uri, storage = s3_warehouse
    catalog = Catalog(uri, storage_options=storage)
    catalog.create_database("db")
    # a write with its in-writer compaction, every other storage call (the S3 test server
    # serialises every request; the local-disk sweep covers every call of five operations)
    _sweep(catalog, uri, oracle=False, ops=1, stride=2)
