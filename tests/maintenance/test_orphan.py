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


def test_parallel_listing_finds_the_strays_the_serial_listing_finds(
    catalog: Catalog, warehouse: Path
) -> None:
    """Two copies of a table with 6 partitions of 2 buckets, strays planted in bucket
    directories, manifest/ and index/, and files under tag/ (never candidates): cleanup at
    parallelism 1 and 8 deletes exactly the strays, in the same (sorted) order, and the
    parallel directory listing is fsspec's ``find`` less the kept directories."""
    import shutil

    from lakeops.maintenance.orphan import list_files

    pschema = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    table = catalog.create_table(
        "db.a",
        schema=pschema,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "2"},
    )
    for n in range(3):
        ids = list(range(n * 20, n * 20 + 30))
        rows = {"p": [f"x{i % 6}" for i in ids], "id": ids, "v": [f"v{n}"] * len(ids)}
        table.write(pa.table(rows, schema=pschema))
    root_a, root_b = warehouse / "db.db" / "a", warehouse / "db.db" / "b"
    strays = {f"p=x{i % 6}/bucket-{i % 2}/data-crashed-{i}.parquet" for i in range(14)}
    strays |= {f"manifest/manifest-crashed-{i}" for i in range(3)}
    strays |= {"index/index-crashed-0", "snapshot/.snapshot-9.tmp"}
    kept = {"tag/.tag-x.tmp", "tag/deep/bucket-0/data-x.parquet", "README.operators"}
    for name in strays | kept:
        (root_a / name).parent.mkdir(parents=True, exist_ok=True)
        (root_a / name).write_bytes(b"left by a crashed writer")
    shutil.copytree(root_a, root_b)
    fio = table.store.file_io
    listed = list_files(fio, str(root_a), 8)
    assert listed == list_files(fio, str(root_a), 1)
    assert listed == [p for p in fio.fs.find(str(root_a)) if "/tag/" not in p]
    results = [
        catalog.get_table(name).remove_orphan_files(
            older_than=dt.timedelta(0), force=True, parallelism=parallelism
        )
        for name, parallelism in (("db.a", 1), ("db.b", 8))
    ]
    assert results[0] == results[1]
    assert list(results[0].deleted) == sorted(strays)
    assert _tree(root_a) == _tree(root_b)
    assert all((root_a / name).exists() for name in kept)
    assert catalog.get_table("db.b").read().num_rows == 70


def test_files_a_killed_spark_write_staged_are_orphans(catalog: Catalog, warehouse: Path) -> None:
    """A native Spark write killed before it moved its staged files leaves them below
    ``_lakeops_spark_staging``: orphans once older than the threshold, kept while younger (a
    write in progress). Other unknown files stay."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(_rows(range(10), "a"))
    root = warehouse / "db.db" / "t"
    staged = root / "_lakeops_spark_staging" / "job-1" / "part-00000-x.parquet"
    staged.parent.mkdir(parents=True)
    staged.write_bytes(b"staged by a killed write")
    unknown = root / "README.txt"
    unknown.write_bytes(b"not ours")
    assert table.remove_orphan_files(older_than=dt.timedelta(hours=1)).deleted == ()
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted == ("_lakeops_spark_staging/job-1/part-00000-x.parquet",)
    assert not staged.exists() and unknown.exists()
    assert table.read().num_rows == 10
