"""The commit protocol under faults: a published commit is never undone, a snapshot id is
never reused, and an unknown commit state keeps every file. Faults are injected into the
storage calls of a real local table (the protocol itself runs unmodified); every outcome is
checked against the rows written (a plain model) and against pypaimon."""

from __future__ import annotations

import errno
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitStateUnknownError
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _batch(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _table(catalog: Catalog, **options: str):
    return catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", **options}
    )


def _model(*batches: pa.Table) -> dict[int, str]:
    out: dict[int, str] = {}
    for b in batches:
        out.update(zip(b.column("id").to_pylist(), b.column("v").to_pylist(), strict=True))
    return out


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


@pytest.mark.interop
def test_a_stalled_writer_never_reuses_an_expired_snapshot_id(
    catalog: Catalog, warehouse: Path
) -> None:
    table = _table(catalog)
    first = _batch(0, 30, "a")
    table.write(first)
    stale_view = table.store.latest_snapshot()  # what a writer that stalls now has seen
    writer = catalog.get_table("db.t")
    others = [_batch(30 * i, 30 * i + 30, f"o{i}") for i in range(1, 4)]
    for b in others:
        table.write(b)  # snapshots 2..4
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert sorted(p.name for p in (warehouse / "db.db/t/snapshot").glob("snapshot-*")) == [
        "snapshot-4"
    ]
    late = _batch(200, 230, "late")
    tw = writer.new_write()
    tw.write(late)
    messages = tw.prepare_commit()
    calls = {"n": 0}
    real = writer.store.latest_snapshot

    def stalled():  # the committer's first look is the stale one, as after a long stall
        calls["n"] += 1
        return stale_view if calls["n"] == 1 else real()

    writer.store.latest_snapshot = stalled  # type: ignore[method-assign]
    snapshot = writer.commit(messages)
    assert calls["n"] >= 2  # it re-planned on the real latest snapshot
    assert snapshot is not None
    ids = sorted(int(p.name[9:]) for p in (warehouse / "db.db/t/snapshot").glob("snapshot-*"))
    assert ids[0] == 4 and ids == list(range(4, snapshot.id + 1))  # 2 was never reused
    expected = _model(first, *others, late)
    assert _rows(catalog.get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected


def test_a_publish_that_landed_but_reported_an_error_is_kept(catalog: Catalog) -> None:
    table = _table(catalog)
    fio = table.file_io
    real = fio.publish_exclusive

    def lost_response(path: str, data: bytes) -> bool:
        real(path, data)
        raise ConnectionResetError("connection reset by peer")  # the put landed

    fio.publish_exclusive = lost_response  # type: ignore[method-assign]
    data = _batch(0, 50, "a")
    snapshot = table.write(data)
    assert snapshot is not None and snapshot.id == 1
    fio.publish_exclusive = real  # type: ignore[method-assign]
    assert _rows(catalog.get_table("db.t").read()) == _model(data)


@pytest.mark.interop
def test_an_unknown_commit_state_keeps_every_file(catalog: Catalog, warehouse: Path) -> None:
    table = _table(catalog)
    fio = table.file_io
    real_publish, real_read = fio.publish_exclusive, fio.read_bytes
    broken = {"on": False}

    def lost_response(path: str, data: bytes) -> bool:
        real_publish(path, data)
        broken["on"] = True
        raise TimeoutError("no response")

    def read_bytes(path: str, max_bytes: int | None = None) -> bytes:
        if broken["on"] and "/snapshot/snapshot-" in path:
            raise OSError(errno.EIO, "503 Slow Down")
        return real_read(path, max_bytes)

    fio.publish_exclusive = lost_response  # type: ignore[method-assign]
    fio.read_bytes = read_bytes  # type: ignore[method-assign]
    data = _batch(0, 50, "a")
    with pytest.raises(CommitStateUnknownError, match="cannot be read back"):
        table.write(data)
    fio.publish_exclusive, fio.read_bytes = real_publish, real_read  # type: ignore[method-assign]
    # the snapshot did land: its data files must all still be there
    assert _rows(catalog.get_table("db.t").read()) == _model(data)
    assert _rows(oracle_read(warehouse, "db.t")) == _model(data)


@pytest.mark.interop
def test_a_full_disk_after_the_data_commit_drops_only_the_compaction(
    catalog: Catalog, warehouse: Path
) -> None:
    table = _table(catalog, **{"num-sorted-run.compaction-trigger": "2"})
    batches = [_batch(0, 40, "a"), _batch(20, 60, "b")]
    table.write(batches[0])
    fio = table.file_io
    real_write, real_publish = fio.write_bytes, fio.publish_exclusive
    published = {"n": 0}

    def publish(path: str, data: bytes) -> bool:
        won = real_publish(path, data)
        published["n"] += "/snapshot/" in path and won
        return won

    def write_bytes(path: str, data: bytes) -> None:
        if published["n"] >= 1 and "/manifest/" in path:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    fio.publish_exclusive = publish  # type: ignore[method-assign]
    fio.write_bytes = write_bytes  # type: ignore[method-assign]
    snapshot = table.write(batches[1])
    fio.write_bytes, fio.publish_exclusive = real_write, real_publish  # type: ignore[method-assign]
    assert snapshot is not None and snapshot.commit_kind == "APPEND"
    expected = _model(*batches)
    assert _rows(catalog.get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected
