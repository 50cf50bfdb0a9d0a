"""Expiry and orphan removal at the locations Paimon's options put files: below
``data-file.path-directory`` and at external paths. Live files are never deleted; the files of
expired snapshots are (wherever they are); an orphan below the data directory is found."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _files(directory: Path) -> set[Path]:
    return {p for p in directory.rglob("*") if p.is_file()} if directory.exists() else set()


@pytest.mark.parametrize("external", [False, True])
def test_expire_and_orphans_at_configured_locations(warehouse: Path, external: bool) -> None:
    ext = warehouse.parent / "ext"
    options = {"bucket": "2", "data-file.path-directory": "data"}
    if external:
        options |= {
            "data-file.external-paths": f"file:{ext}",
            "data-file.external-paths.strategy": "round-robin",
        }
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    root = warehouse / "db.db" / "t"
    data_home = ext if external else root / "data"
    model: dict[int, int] = {}
    for i in range(4):
        rows = {k: i * 100 + k for k in range(i, 40, 2)}
        model |= rows
        table.write(pa.table({"id": list(rows), "v": list(rows.values())}, schema=SCHEMA))
    table.compact(full=True)
    table.write(pa.table({"id": [1], "v": [-1]}, schema=SCHEMA))
    model[1] = -1
    # every file lakeops wrote is where the options say, none in <table>/bucket-N
    assert not list(root.glob("bucket-*"))
    written = _files(data_home)
    assert written and all(p.name.startswith("data-") for p in written)

    store = table.store
    loc = store.locations(table.schema)
    live = {
        Path(loc.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path))
        for e in store.live_entries(store.latest_snapshot())
    }
    assert live < written  # compaction left replaced files behind for expiry
    orphan = root / "data" / "bucket-0" / "data-orphan-0.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"crashed writer")
    old = orphan.stat().st_mtime - 3600
    os.utime(orphan, (old, old))

    table.expire_snapshots(retain_min=1, retain_max=1)
    assert _files(data_home) - {orphan} == live  # dead files deleted, live ones kept
    result = table.remove_orphan_files(older_than=dt.timedelta(minutes=1), force=True)
    assert not orphan.exists() and any(p.endswith("data-orphan-0.parquet") for p in result.deleted)
    assert _files(data_home) - {orphan} == live
    got = table.read().sort_by("id").to_pylist()
    assert got == [{"id": k, "v": v} for k, v in sorted(model.items())]
