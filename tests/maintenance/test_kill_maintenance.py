"""Expiry and orphan cleanup SIGKILLed at every kind of point: the child process kills itself
at its N-th storage mutation (a delete, a write, a hint replaced), for 20+ values of N each.
After every kill the table reads the model's rows, every file its snapshots reference exists
(``Table.check``), and a rerun succeeds and finishes the job; pypaimon reads the end state."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.io.file_io import FileIO
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
MUTATIONS = ("delete", "write_bytes", "overwrite_atomic")


def _batch(n: int) -> pa.Table:
    ids = list(range(n * 7, n * 7 + 30))
    return pa.table({"id": ids, "v": [f"{n}-{os.urandom(6).hex()}" for _ in ids]}, schema=SCHEMA)


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _files(warehouse: Path) -> set[str]:
    return {str(p.relative_to(warehouse)) for p in warehouse.rglob("*") if p.is_file()}


def _die_at(n: int, counted: Any) -> None:
    """Make this process SIGKILL itself at its ``n``-th storage mutation (0: never), counting
    them in ``counted`` (a shared integer)."""
    for name in MUTATIONS:
        original = getattr(FileIO, name)

        def wrapped(self: FileIO, *args: Any, _original: Any = original, **kw: Any) -> Any:
            counted.value += 1
            if counted.value == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return _original(self, *args, **kw)

        setattr(FileIO, name, wrapped)


def _expire(warehouse: str) -> None:
    Catalog(warehouse).get_table("db.t").expire_snapshots(
        retain_min=1, retain_max=2, time_retained="0 ms"
    )


def _orphans(warehouse: str) -> None:
    Catalog(warehouse).get_table("db.t").remove_orphan_files(older_than=dt.timedelta(hours=1))


def _child(job: str, warehouse: str, n: int, counted: Any) -> None:
    _die_at(n, counted)
    (_expire if job == "expire" else _orphans)(warehouse)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str], list[str]]:
    """A table with 12 snapshots (writes and compactions) and 40 day-old orphan files."""
    warehouse = tmp_path_factory.mktemp("template") / "wh"
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    model: dict[int, str] = {}
    for n in range(10):
        batch = _batch(n)
        table.write(batch)
        model.update(_rows(batch))
        if n % 4 == 3:
            table.compact(full=True)
    root = warehouse / "db.db" / "t"
    junk = [root / "bucket-0" / f"data-crashed-{i}.parquet" for i in range(20)]
    junk += [root / "manifest" / f"manifest-crashed-{i}" for i in range(20)]
    old = time.time() - 2 * 86400
    for path in junk:
        path.write_bytes(os.urandom(64))
        os.utime(path, (old, old))
    return warehouse, model, [str(p.relative_to(root)) for p in junk]


@pytest.mark.slow
@pytest.mark.parametrize("job", ["expire", "orphans"])
def test_killed_maintenance_resumes(
    template: tuple[Path, dict[int, str], list[str]], tmp_path: Path, job: str
) -> None:
    source, model, junk = template
    ctx = mp.get_context("fork")

    def run(warehouse: Path, n: int) -> int:
        counted = ctx.Value("i", 0)
        proc = ctx.Process(target=_child, args=(job, str(warehouse), n, counted))
        proc.start()
        proc.join()
        assert proc.exitcode == (0 if n == 0 else -signal.SIGKILL), (n, proc.exitcode)
        return int(counted.value)

    shutil.copytree(source, tmp_path / "count")  # copy2: modification times kept
    total = run(tmp_path / "count", 0)  # how many mutations the whole job makes
    uninterrupted = Catalog(str(tmp_path / "count")).get_table("db.t")
    expected_ids = uninterrupted.store.snapshot_ids()
    expected_files = _files(tmp_path / "count")
    points = sorted(random.Random(job).sample(range(1, total + 1), min(20, total)))
    assert len(points) >= 20
    for n in points:
        warehouse = tmp_path / f"wh-{n}"
        shutil.copytree(source, warehouse)
        run(warehouse, n)
        table = Catalog(str(warehouse)).get_table("db.t")
        assert _rows(table.read()) == model, n
        assert table.check().ok, (n, table.check().problems)
        (_expire if job == "expire" else _orphans)(str(warehouse))  # the rerun finishes it
        table = Catalog(str(warehouse)).get_table("db.t")
        assert _rows(table.read()) == model, n
        assert table.check().ok, n
        assert table.store.snapshot_ids() == expected_ids, n
        if job == "orphans":  # a resumed cleanup leaves exactly what an uninterrupted one does
            assert _files(warehouse) == expected_files, n
            assert not any((warehouse / "db.db" / "t" / j).exists() for j in junk)
        if n != points[len(points) // 2]:
            shutil.rmtree(warehouse)
    # the end state of one killed and resumed run, read by pypaimon
    assert _rows(oracle_read(tmp_path / f"wh-{points[len(points) // 2]}", "db.t")) == model
