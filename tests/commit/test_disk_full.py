"""A real disk-full sweep: the table lives on a small tmpfs, and before each operation a filler
file leaves only so many bytes free (0 to ~180 KiB in 4 KiB steps), so the disk fills at every
point of a write (with its in-writer compaction), a full compaction, an expiry and a rollback.

Every outcome must be a success or a clean failure (a lakeops error or ENOSPC), and after the
filler is removed the table must hold exactly the rows of the snapshots that were published
(a plain model replays the operations that landed), read by lakeops after every step and by
pypaimon along the way and at the end. Needs permission to mount a tmpfs (root); skipped
otherwise."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog, CommitStateUnknownError, LakeopsError
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
STEP = 4096
LEVELS = 46


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _fill(mount: Path, leave: int) -> Path:
    """A filler file that leaves about ``leave`` bytes free on the tmpfs."""
    filler = mount / "filler"
    size = max(_free(mount) - leave, 0)
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY)
    try:
        if size:
            os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
    return filler


def _batch(tag: int, rng: np.random.Generator) -> pa.Table:
    """80 rows (half of them keys written before), high-entropy values."""
    ids = np.concatenate([rng.choice(max(tag * 40, 1), 40), tag * 40 + np.arange(40)])
    ids = np.unique(ids)
    values = [f"t{tag}-" + rng.bytes(48).hex() for _ in range(len(ids))]
    return pa.table({"id": ids.astype(np.int64), "v": values}, schema=SCHEMA)


def _rows(table: pa.Table) -> dict[int, str]:
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    return dict(zip(ids, table.column("v").to_pylist(), strict=True))


@pytest.mark.slow  # a write at each of 46 fill levels, judged by pypaimon too
@pytest.mark.interop
def test_a_full_disk_at_every_point_never_loses_or_invents_a_row(small_disk: Path) -> None:
    warehouse = small_disk / "wh"
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "3"},
    )
    rng = np.random.default_rng(20261125)
    states: dict[int, dict[int, str]] = {}  # snapshot id -> the rows it holds (model)
    content: dict[int, str] = {}
    failures = successes = tag = 0
    for level in range(LEVELS):
        table = catalog.get_table("db.t")
        latest = table.store.latest_snapshot_id()
        op = level % 4 if latest is not None else 0
        batch = _batch(tag, rng)
        filler = _fill(small_disk, level * STEP)
        unknown = False
        try:
            if op == 0:
                table.write(batch)
            elif op == 1:
                table.compact(full=True)
            elif op == 2:
                table.expire_snapshots(retain_min=3, retain_max=3, time_retained="0 ms")
            else:
                table.rollback_to(min(states) if states else 1)
            successes += 1
        except CommitStateUnknownError:
            unknown = True
        except (LakeopsError, OSError) as exc:
            failures += 1
            if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
                assert exc.errno in (errno.ENOSPC, None), exc
        finally:
            filler.unlink()
        table = catalog.get_table("db.t")
        now = table.store.latest_snapshot_id()
        landed = now != latest
        assert landed or not unknown or now == latest
        if landed and op == 0:
            content = {**content, **_rows(batch)}
            tag += 1
        elif landed and op == 3:
            content = dict(states[min(states) if states else 1])
        if now is not None:
            for sid in range(latest or 0, now + 1):
                if sid and sid not in states and sid >= (latest or 0):
                    states[sid] = content
            # expiry removes old snapshots: forget them
            ids = set(table.store.snapshot_ids())
            states = {sid: rows for sid, rows in states.items() if sid in ids}
        assert _rows(table.read()) == content, f"level {level}, op {op}"
        # a failed publish or hint update leaves no temporary file behind
        assert not [p.name for p in (warehouse / "db.db/t/snapshot").glob("*.tmp")]
        if level % 12 == 11:
            assert _rows(oracle_read(warehouse, "db.t")) == content, f"level {level}"
    assert failures > 3 and successes > 3  # the sweep did hit full disks and did make progress
    assert _rows(oracle_read(warehouse, "db.t")) == content
    ids = catalog.get_table("db.t").store.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))
