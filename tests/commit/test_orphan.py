"""Orphan cleanup's threshold: below one hour (or negative) is refused unless forced, because
the files of a commit in progress look exactly like orphans until it publishes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "older_than", [dt.timedelta(0), dt.timedelta(minutes=59), -dt.timedelta(1)]
)
def test_short_thresholds_keep_a_commit_in_progress(
    catalog: Catalog, warehouse: Path, older_than: dt.timedelta
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.write(_rows(range(10), "a"))
    writer = table.new_write()
    writer.write(_rows(range(5, 20), "b"))
    messages = writer.prepare_commit()  # data files written, snapshot not yet published
    root = warehouse / "db.db" / "t"
    before = _tree(root)
    with pytest.raises(ConfigurationError, match="force") as refused:
        table.remove_orphan_files(older_than=older_than)
    assert "publishes the snapshot" in str(refused.value) or "negative" in str(refused.value)
    assert _tree(root) == before  # nothing deleted
    table.commit(messages)
    expected = {i: "a" + str(i) for i in range(5)} | {i: f"b{i}" for i in range(5, 20)}
    read = table.read()
    assert dict(zip(read["id"].to_pylist(), read["v"].to_pylist(), strict=True)) == expected


def test_dry_run_lists_young_candidates_and_force_deletes_them(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(_rows(range(10), "a"))
    stray = warehouse / "db.db" / "t" / "bucket-0" / "data-crashed.parquet"
    stray.write_bytes(b"left by a crashed writer")
    with pytest.raises(ConfigurationError, match="negative"):
        table.remove_orphan_files(older_than=-dt.timedelta(seconds=1), dry_run=True)
    assert table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True).deleted == (
        "bucket-0/data-crashed.parquet",
    )
    assert stray.exists()
    assert table.remove_orphan_files(older_than=dt.timedelta(hours=1)).deleted == ()  # too young
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted == ("bucket-0/data-crashed.parquet",) and not stray.exists()
    assert table.read().num_rows == 10


@pytest.mark.parametrize("parallelism", [1, 4, None])
def test_pooled_orphan_deletes_remove_exactly_the_strays(
    catalog: Catalog, warehouse: Path, parallelism: int | None
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.write(_rows(range(30), "a"))
    root = warehouse / "db.db" / "t"
    strays = {f"bucket-{i % 2}/data-crashed-{i}.parquet" for i in range(9)}
    strays |= {f"manifest/manifest-crashed-{i}" for i in range(3)}
    for name in strays:
        (root / name).write_bytes(b"left by a crashed writer")
    before = _tree(root)
    removed = table.remove_orphan_files(
        older_than=dt.timedelta(0), force=True, parallelism=parallelism
    )
    assert set(removed.deleted) == strays and len(removed.deleted) == len(strays)
    assert _tree(root) == {k: v for k, v in before.items() if k not in strays}
    assert table.read().num_rows == 30


def test_a_failed_orphan_delete_surfaces(
    catalog: Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.io.file_io import FileIO

    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(_rows(range(3), "a"))
    for i in range(5):
        (warehouse / "db.db" / "t" / "bucket-0" / f"data-crashed-{i}.parquet").write_bytes(b"x")
    real = FileIO.delete

    def delete(self: FileIO, path: str) -> None:
        if path.endswith("crashed-3.parquet"):
            raise PermissionError("denied")
        real(self, path)

    monkeypatch.setattr(FileIO, "delete", delete)
    with pytest.raises(PermissionError, match="denied"):
        table.remove_orphan_files(older_than=dt.timedelta(0), force=True, parallelism=3)
    with pytest.raises(ConfigurationError, match="parallelism"):
        table.remove_orphan_files(older_than=dt.timedelta(0), force=True, parallelism=0)
