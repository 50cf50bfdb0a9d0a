"""Snapshot ids only grow: a writer held at each point of its publish while others commit and
expiry keeps one snapshot never re-uses an id, never sets ``LATEST`` back, and leaves a table
that lakeops and pypaimon read exactly as a plain model says and that takes further writes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeops.io.publish as publish_module
from lakeops import Catalog
from lakeops.commit.committer import Committer
from lakeops.io.file_io import FileIO
from lakeops.table.primary_key import Table
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [tag] * len(ids)}, schema=SCHEMA)


class Hold:
    """Holds one thread at a named point until released (``reached`` tells the test)."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def here(self) -> None:
        if threading.get_ident() == self.thread and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(60), "the held writer was never released"


def _hold_at(point: str, hold: Hold, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``hold`` stop its thread at ``point`` of the publish of a snapshot."""
    if point == "before-temporary-file":
        original_publish = FileIO.publish_exclusive

        def publish_exclusive(self: FileIO, path: str, data: bytes) -> bool:
            if "/snapshot/snapshot-" in path:
                hold.here()
            return original_publish(self, path, data)

        monkeypatch.setattr(FileIO, "publish_exclusive", publish_exclusive)
    elif point in ("after-temporary-file", "after-link"):
        original_link = os.link

        def link(src: Any, dst: Any, *args: Any, **kw: Any) -> None:
            if point == "after-temporary-file" and "snapshot-" in str(dst):
                hold.here()
            original_link(src, dst, *args, **kw)
            if point == "after-link" and "snapshot-" in str(dst):
                hold.here()

        monkeypatch.setattr(publish_module.os, "link", link)
    else:
        original_hints = Committer._update_hints

        def update_hints(self: Committer, snapshot_id: int) -> None:
            hold.here()
            original_hints(self, snapshot_id)

        monkeypatch.setattr(Committer, "_update_hints", update_hints)


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write(rows(range(0, 10), "base"))  # snapshot 1
    yield t


def _in_thread(work: Callable[[], Any], hold: Hold) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        hold.thread = threading.get_ident()
        try:
            out["result"] = work()
        except BaseException as exc:  # reported by the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


@pytest.mark.interop
@pytest.mark.parametrize(
    "point", ["before-temporary-file", "after-temporary-file", "after-link", "before-hint"]
)
def test_a_held_writer_never_reuses_an_id(
    tmp_path: Path, table: Table, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "wh"
    hold = Hold()
    _hold_at(point, hold, monkeypatch)
    held_table = Catalog(str(warehouse)).get_table("db.t")
    thread, out = _in_thread(lambda: held_table.write(rows(range(100, 110), "held")), hold)
    assert hold.reached.wait(60)
    others = Catalog(str(warehouse)).get_table("db.t")
    for i in range(3):
        others.write(rows(range(200 + 10 * i, 210 + 10 * i), f"other{i}"))
    others.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    hold.release.set()
    thread.join(60)
    assert "error" not in out, out.get("error")

    store = others.store
    ids = store.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1)), f"ids with a gap: {ids}"
    assert store.latest_snapshot_id() == ids[-1]
    assert int((warehouse / "db.db" / "t" / "snapshot" / "LATEST").read_text()) == ids[-1]
    # the held commit's snapshot is the one it returned, and it is the newest one it can be
    held_snapshot = out["result"]
    assert held_snapshot is not None
    if point in ("before-temporary-file", "after-temporary-file"):
        assert held_snapshot.id == 5  # withdrawn from id 2, retried on top of 4
    else:
        assert held_snapshot.id == 2  # published before the others: they built on it

    expected = sorted([*range(0, 10), *range(100, 110), *range(200, 230)])
    assert sorted(others.read().column("id").to_pylist()) == expected
    assert sorted(oracle_read(warehouse, "db.t").column("id").to_pylist()) == expected

    monkeypatch.undo()
    others.write(rows(range(300, 305), "after"))  # the table takes further writes
    assert sorted(others.read().column("id").to_pylist()) == sorted([*expected, *range(300, 305)])
    assert others.check().ok


def test_latest_hint_below_a_newer_snapshot_is_not_trusted(table: Table) -> None:
    """A ``LATEST`` hint naming an id re-created after its expiry (the next id expired too)
    must not stop the probe: the newest snapshot is found by listing."""
    for i in range(3):
        table.write(rows(range(20 + i, 21 + i), "x"))  # snapshots 2..4
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")  # EARLIEST = 4
    store = table.store
    root = Path(store.root)
    stale = (root / "snapshot" / "snapshot-4").read_bytes()
    (root / "snapshot" / "snapshot-2").write_bytes(stale)  # a re-created id, below 4
    (root / "snapshot" / "LATEST").write_text("2")
    assert store.latest_snapshot_id() == 4


@pytest.mark.parametrize("point", ["before-put", "after-put"])
def test_a_held_writer_on_s3_never_reuses_an_id(
    s3_warehouse: tuple[str, dict], point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on an object store, where the exclusive create is a conditional put: held
    just before it (the id re-used: withdrawn, retried) or just after it (built upon)."""
    uri, storage = s3_warehouse
    catalog = Catalog(uri, storage_options=storage)
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(rows(range(0, 10), "base"))
    hold = Hold()
    held_table = Catalog(uri, storage_options=storage).get_table("db.t")
    fs = held_table.file_io.fs  # (fsspec shares the instance; the hold is per thread)
    original = fs.pipe_file

    def pipe_file(path: str, value: bytes, *args: Any, **kw: Any) -> Any:
        snapshot = "/snapshot/snapshot-" in path
        if snapshot and point == "before-put":
            hold.here()
        result = original(path, value, *args, **kw)
        if snapshot and point == "after-put":
            hold.here()
        return result

    monkeypatch.setattr(fs, "pipe_file", pipe_file)
    thread, out = _in_thread(lambda: held_table.write(rows(range(100, 110), "held")), hold)
    assert hold.reached.wait(60)
    for i in range(3):
        t.write(rows(range(200 + 10 * i, 210 + 10 * i), f"other{i}"))
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    hold.release.set()
    thread.join(60)
    if "error" in out:
        raise out["error"]
    assert out["result"].id == (5 if point == "before-put" else 2)
    ids = t.store.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1)) and t.store.latest_snapshot_id() == ids[-1]
    expected = sorted([*range(0, 10), *range(100, 110), *range(200, 230)])
    assert sorted(t.read().column("id").to_pylist()) == expected
    t.write(rows(range(300, 305), "after"))
    assert t.check().ok
