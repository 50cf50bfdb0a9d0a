"""Locked commits fence: a holder whose lease expired while it paused cannot replace what the
next holder published, and a holder killed at any storage call of its publish leaves no empty
or partial snapshot — the next writer commits and pypaimon reads the table."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from pathlib import Path
from typing import Any

import fsspec.implementations.local as fsspec_local
import pyarrow as pa
import pytest

import lakeops.io.publish as publish_module
from lakeops import Catalog
from lakeops.errors import LockUnavailableError
from lakeops.io.lock import Lock
from lakeops.io.publish import FencedCopyPublish, LockedPublish
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop  # judged by pypaimon

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
LEASE_MS = "300"


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [tag] * len(ids)}, schema=SCHEMA)


def _options(tmp_path: Path, kind: str, dsn: str | None) -> dict[str, str]:
    if kind == "sqlite":
        return {
            "lock.type": "sqlite",
            "lock.sqlite.path": str(tmp_path / "locks.db"),
            "lock.expire-time-ms": LEASE_MS,
        }
    if dsn is None:
        pytest.skip("no PostgreSQL server available")
    return {"lock.type": "postgres", "lock.postgres.dsn": dsn, "lock.expire-time-ms": LEASE_MS}


def _create(warehouse: Path, options: dict[str, str]) -> None:
    catalog = Catalog(str(warehouse), options=options)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(rows(range(0, 10), "base"))  # snapshot 1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("pause", ["before-fence", "after-fence"])
def test_a_paused_holder_past_its_lease_cannot_publish(
    tmp_path: Path,
    kind: str,
    pause: str,
    postgres_dsn: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writer A pauses inside its locked publish (just before or just after its lease
    re-check) until writer B, who takes the expired lease, has committed; A must not replace
    B's snapshot: before the fence A is refused, after it A's exclusive create fails and A
    commits on top of B."""
    options = _options(tmp_path, kind, postgres_dsn)
    warehouse = tmp_path / "wh"
    _create(warehouse, options)
    reached, release = threading.Event(), threading.Event()
    held: list[int] = []
    original = Lock.is_held

    def is_held(self: Lock, lease: Any) -> bool:
        mine = threading.get_ident() in held and not reached.is_set()
        if mine and pause == "before-fence":
            reached.set()
            assert release.wait(60)
        result = original(self, lease)
        if mine and pause == "after-fence":
            reached.set()
            assert release.wait(60)
        return result

    monkeypatch.setattr(Lock, "is_held", is_held)
    out: dict[str, Any] = {}

    def writer_a() -> None:
        held.append(threading.get_ident())
        table = Catalog(str(warehouse), options=options).get_table("db.t")
        try:
            out["snapshot"] = table.write(rows(range(100, 110), "a"))
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=writer_a)
    thread.start()
    assert reached.wait(60)
    b = Catalog(str(warehouse), options=options).get_table("db.t")
    b_snapshot = b.write(rows(range(200, 210), "b"))  # takes the lease once A's expired
    assert b_snapshot is not None and b_snapshot.id == 2
    release.set()
    thread.join(60)

    expected = [*range(0, 10), *range(200, 210)]
    if pause == "before-fence":
        assert isinstance(out.get("error"), LockUnavailableError), out
    else:
        assert "error" not in out, out.get("error")
        assert out["snapshot"].id == 3  # its create of snapshot-2 failed: retried on B's
        expected += list(range(100, 110))
    assert b.store.snapshot(2).commit_user == b_snapshot.commit_user  # B's snapshot stands
    assert sorted(b.read().column("id").to_pylist()) == sorted(expected)
    assert sorted(oracle_read(warehouse, "db.t").column("id").to_pylist()) == sorted(expected)


#: the storage calls of a locked publish on local disk, and whether to die before or after
KILL_POINTS = [
    ("exists", "before"),
    ("makedirs", "before"),
    ("fsync", "before"),
    ("link", "before"),
    ("link", "after"),
    ("unlink", "before"),
    ("unlink", "after"),
]


def _killed_writer(warehouse: str, options: dict[str, str], name: str, when: str) -> None:
    """Write one batch under the lock and SIGKILL this process at ``name`` (``when``) inside
    the locked publish of its snapshot."""
    inside = [False]

    def wrap(owner: Any, attr: str, point: str) -> None:
        original = getattr(owner, attr)

        def call(*args: Any, **kw: Any) -> Any:
            if inside[0] and point == name and when == "before":
                os.kill(os.getpid(), 9)
            result = original(*args, **kw)
            if inside[0] and point == name and when == "after":
                os.kill(os.getpid(), 9)
            return result

        setattr(owner, attr, call)

    wrap(fsspec_local.LocalFileSystem, "exists", "exists")
    for call_name in ("makedirs", "fsync", "link", "unlink"):
        wrap(publish_module.os, call_name, call_name)
    original_publish = LockedPublish.publish

    def publish(self: LockedPublish, fs: Any, path: str, data: bytes, *args: Any) -> bool:
        inside[0] = "/snapshot/snapshot-" in path
        return original_publish(self, fs, path, data, *args)

    LockedPublish.publish = publish  # type: ignore[method-assign]
    table = Catalog(warehouse, options=options).get_table("db.t")
    table.write(rows(range(100, 110), "killed"))


@pytest.mark.parametrize(("name", "when"), KILL_POINTS)
def test_a_holder_killed_in_its_publish_leaves_a_table_the_next_writer_commits_to(
    tmp_path: Path, name: str, when: str
) -> None:
    options = _options(tmp_path, "sqlite", None)
    warehouse = tmp_path / "wh"
    _create(warehouse, options)
    child = mp.get_context("spawn").Process(
        target=_killed_writer, args=(str(warehouse), options, name, when)
    )
    child.start()
    child.join(120)
    assert child.exitcode == -9, f"the writer was not killed at {name} ({when})"

    snapshot_dir = warehouse / "db.db" / "t" / "snapshot"
    published = (snapshot_dir / "snapshot-2").exists()
    assert published == (name == "unlink" or (name, when) == ("link", "after"))
    if published:
        assert (snapshot_dir / "snapshot-2").stat().st_size > 0
    table = Catalog(str(warehouse), options=options).get_table("db.t")
    table.write(rows(range(200, 210), "next"))  # waits out the dead holder's lease
    expected = [*range(0, 10), *range(200, 210), *(range(100, 110) if published else [])]
    assert sorted(table.read().column("id").to_pylist()) == sorted(expected)
    assert sorted(oracle_read(warehouse, "db.t").column("id").to_pylist()) == sorted(expected)
    assert table.check().ok


def test_a_fenced_copy_never_replaces_a_snapshot(tmp_path: Path) -> None:
    """On a store without an exclusive create, the locked publish copies a temporary object
    into place only after the lease and the free name are re-checked, and reads it back."""
    fs = fsspec_local.LocalFileSystem()
    target = str(tmp_path / "snapshot" / "snapshot-1")
    fs.makedirs(str(tmp_path / "snapshot"), exist_ok=True)
    copy = FencedCopyPublish()
    assert copy.publish(fs, target, b"first")
    assert not copy.publish(fs, target, b"second")
    refused = str(tmp_path / "snapshot" / "snapshot-2")

    def expired() -> None:
        raise LockUnavailableError("lease expired")

    with pytest.raises(LockUnavailableError):
        copy.publish(fs, refused, b"late", expired)
    assert Path(target).read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "snapshot").iterdir()) == ["snapshot-1"]
