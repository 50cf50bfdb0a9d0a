"""A commit SIGKILLed at each of its storage mutations on a table with Iceberg metadata: the
Paimon snapshot is the truth. After every kill the Iceberg head (``version-hint.text``) is a
complete version whose files all exist and whose row count is that of the Paimon snapshot of
the same id (a plain model of the rows each commit wrote), and the next commit brings Iceberg
to the latest Paimon snapshot with every row."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.puffin import read_puffin_footer
from lakeops.io.file_io import FileIO

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
MUTATIONS = ("delete", "write_bytes", "overwrite_atomic")


def _batch(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [str(i) for i in ids]}, schema=SCHEMA)


def _child(warehouse: str, n: int, counted: Any, ids: tuple[int, ...] = (3, 4)) -> None:
    """Write ``ids`` into db.t, SIGKILLed at the ``n``-th storage mutation (never when 0)."""
    for name in MUTATIONS:
        original = getattr(FileIO, name)

        def wrapped(self: FileIO, *args: Any, _original: Any = original, **kw: Any) -> Any:
            counted.value += 1
            if counted.value == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return _original(self, *args, **kw)

        setattr(FileIO, name, wrapped)
    Catalog(warehouse).get_table("db.t").write(_batch(list(ids)))


def _fresh(warehouse: Path) -> None:
    """The table before the killed commit: one commit of three rows (Iceberg paths are
    absolute, so each run builds its own rather than copying one)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, options={"metadata.iceberg.storage": "table-location"}
    )
    table.write(_batch([1, 2, 5]))


def _head(meta: Path) -> tuple[int, int]:
    """(the hinted version, the rows Iceberg reads: data rows less the rows the deletion
    vectors delete, if any), every file checked to exist and every Puffin file to be whole."""
    version = int((meta / "version-hint.text").read_text())
    doc = json.loads((meta / f"v{version}.metadata.json").read_text())
    (snap,) = [s for s in doc["snapshots"] if s["snapshot-id"] == doc["current-snapshot-id"]]
    rows = 0
    with open(snap["manifest-list"], "rb") as f:
        manifests = list(fastavro.reader(f))
    for m in manifests:
        with open(m["manifest_path"], "rb") as f:  # type: ignore[index]
            for entry in fastavro.reader(f):
                data_file = entry["data_file"]  # type: ignore[index]
                path = Path(data_file["file_path"])
                if data_file["content"] == 1:
                    blobs, _ = read_puffin_footer(path.read_bytes(), str(path))
                    (blob,) = [
                        b
                        for b in blobs
                        if b.referenced_data_file == data_file["referenced_data_file"]
                    ]
                    assert blob.offset == data_file["content_offset"]
                    assert blob.cardinality == data_file["record_count"]
                    rows -= data_file["record_count"]
                else:
                    assert path.exists()
                    rows += data_file["record_count"]
    return version, rows


@pytest.mark.slow
def test_a_killed_commit_leaves_a_complete_iceberg_head_caught_up_next(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")

    def run(warehouse: Path, n: int) -> int:
        counted = ctx.Value("i", 0)
        proc = ctx.Process(target=_child, args=(str(warehouse), n, counted))
        proc.start()
        proc.join()
        assert proc.exitcode == (0 if n == 0 else -signal.SIGKILL), (n, proc.exitcode)
        return int(counted.value)

    _fresh(tmp_path / "count")
    total = run(tmp_path / "count", 0)
    assert total >= 6  # data file, manifests, snapshot, Iceberg manifest, list, metadata …
    rows_at = {1: 3, 2: 5}  # the model: rows of each Paimon snapshot
    behind = 0  # kills after the Paimon publish, before the Iceberg head moved
    for n in range(1, total + 1):
        warehouse = tmp_path / f"kill-{n}"
        _fresh(warehouse)
        run(warehouse, n)
        meta = warehouse / "db.db" / "t" / "metadata"
        version, rows = _head(meta)
        assert rows == rows_at[version], n
        killed = Catalog(str(warehouse)).get_table("db.t")
        published = killed.store.latest_snapshot_id()
        assert version <= published  # Iceberg never runs ahead of Paimon
        behind += version < published
        killed.write(_batch([9]))
        version, rows = _head(meta)
        assert version == published + 1, n
        assert rows == rows_at[published] + 1, n
        shutil.rmtree(warehouse)
    assert behind >= 3


V3_DV = {
    "metadata.iceberg.storage": "table-location",
    "metadata.iceberg.format-version": "3",
    "deletion-vectors.enabled": "true",
    "bucket": "1",
}


def _dv_fresh(warehouse: Path) -> None:
    """A deletion-vector primary-key table with Iceberg v3 metadata: ids 1, 2, 5, then 1, 5
    again (their first rows deleted by vectors once the second write's level 0 is lifted)."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=V3_DV)
    table.write(_batch([1, 2, 5]))
    table.write(_batch([1, 5]))


@pytest.mark.slow
def test_a_killed_commit_keeps_the_iceberg_vectors_of_its_head_whole(tmp_path: Path) -> None:
    """The same kill loop on a deletion-vector table with format-version-3 metadata: after
    every kill the head's Puffin files exist whole and its rows (data less vectors) are the
    model's of that snapshot; the next commit catches up."""
    ctx = mp.get_context("fork")

    def run(warehouse: Path, n: int) -> int:
        counted = ctx.Value("i", 0)
        proc = ctx.Process(target=_child, args=(str(warehouse), n, counted, (2, 3, 4)))
        proc.start()
        proc.join()
        assert proc.exitcode == (0 if n == 0 else -signal.SIGKILL), (n, proc.exitcode)
        return int(counted.value)

    _dv_fresh(tmp_path / "count")
    base = Catalog(str(tmp_path / "count")).get_table("db.t").store.latest_snapshot_id()
    total = run(tmp_path / "count", 0)
    assert base is not None
    # the model: each write publishes an APPEND (level 0, which Iceberg does not see) and the
    # COMPACT that lifts it; ids 1, 2, 5 up to the killed write's APPEND, 1..5 after its COMPACT
    for n in range(1, total + 1):
        warehouse = tmp_path / f"kill-{n}"
        _dv_fresh(warehouse)
        run(warehouse, n)
        meta = warehouse / "db.db" / "t" / "metadata"
        version, rows = _head(meta)
        killed = Catalog(str(warehouse)).get_table("db.t")
        published = killed.store.latest_snapshot_id()
        assert published is not None and version <= published
        assert rows == (3 if version <= base + 1 else 5), n
        killed.write(_batch([9]))
        version, rows = _head(meta)
        assert version == killed.store.latest_snapshot_id(), n
        assert rows == (6 if published > base else 4), n
        shutil.rmtree(warehouse)
