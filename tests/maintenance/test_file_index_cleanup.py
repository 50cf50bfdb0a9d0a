"""Extra index files (``<data file>.index``) live and die with their data files: expiry deletes
them with the data files it deletes, orphan cleanup keeps referenced ones and deletes strays.

Judged against the file tree: which ``.index`` files exist, from the manifest entries' names."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
OPTIONS = {
    "file-index.bloom-filter.columns": "id,v",
    "file-index.bloom-filter.id.items": "5000",
    "file-index.in-manifest-threshold": "1 b",
}


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def _index_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*.index") if "index" not in p.parent.name}


@pytest.mark.parametrize("primary_keys", [[], ["id"]], ids=["append", "primary-key"])
def test_expiry_deletes_extra_index_files_with_their_data_files(
    catalog: Catalog, warehouse: Path, primary_keys: list[str]
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=primary_keys,
        options={"bucket": "1" if primary_keys else "-1", **OPTIONS},
    )
    table.write(_rows(range(0, 50)))
    table.write(_rows(range(50, 90)))
    root = warehouse / "db.db" / "t"
    first = {
        e.file.file_name + ".index" for e in table.store.live_entries(table.store.latest_snapshot())
    }
    assert _index_files(root) == first and len(first) == 2
    table.compact(full=True)
    live = table.store.live_entries(table.store.latest_snapshot())
    kept = {x for e in live for x in e.file.extra_files}
    assert len(kept) == 1 and _index_files(root) == first | kept
    table.expire_snapshots(retain_max=1, retain_min=1)
    assert _index_files(root) == kept
    assert table.read().num_rows == 90


def test_orphan_cleanup_keeps_referenced_index_files_and_deletes_strays(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, options={"bucket": "-1", **OPTIONS})
    table.write(_rows(range(0, 50)))
    root = warehouse / "db.db" / "t"
    (referenced,) = _index_files(root)
    stray = root / "bucket-0" / "data-crashed.parquet.index"
    stray.write_bytes(b"left by a crashed writer")
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted == ("bucket-0/data-crashed.parquet.index",)
    assert _index_files(root) == {referenced}
