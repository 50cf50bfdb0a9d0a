"""Table operations on every store: write, read, compact, expire, orphans, rollback."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lakeops import Catalog

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


@pytest.fixture(params=["local", "s3"])
def catalog(request, tmp_path) -> Catalog:  # type: ignore[no-untyped-def]
    if request.param == "local":
        cat = Catalog(str(tmp_path / "wh"))
    else:
        uri, options = request.getfixturevalue("s3_warehouse")
        cat = Catalog(uri, storage_options=options)
    cat.create_database("db")
    return cat


def _write(table, i: int) -> None:  # type: ignore[no-untyped-def]
    table.write(
        pa.table(
            {"dt": [f"d{i % 2}"] * 20, "id": list(range(i, i + 20)), "v": [i] * 20}, schema=SCHEMA
        )
    )


def test_lifecycle(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    for i in range(6):
        _write(table, i)
    state = table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()
    assert table.compact(full=True) is not None
    table.expire_snapshots(retain_min=2, time_retained="0 ms")
    assert len(table.snapshots()) == 2
    assert table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist() == state
    # a crashed writer's leftovers: a data file and a manifest no snapshot references
    fio = table.file_io
    leftovers = [
        f"{table.root}/dt=d0/bucket-0/data-crashed-0.parquet",
        f"{table.root}/manifest/manifest-crashed-0",
    ]
    for path in leftovers:
        fio.write_bytes(path, b"junk")
    # orphan cleanup lists directories level by level on a pool: the files fsspec's find lists
    from lakeops.maintenance.orphan import list_files

    root = fio.fs._strip_protocol(table.root)
    assert list_files(fio, table.root, 8) == fio.fs.find(root) == list_files(fio, table.root, 1)
    assert table.remove_orphan_files(older_than=dt.timedelta(hours=1)).deleted == ()  # too young
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert sorted(r.rsplit("/", 1)[-1] for r in removed.deleted) == [
        "data-crashed-0.parquet",
        "manifest-crashed-0",
    ]
    assert table.read().num_rows == len(state)
    before = table.latest_snapshot().id
    _write(table, 100)
    _write(table, 200)
    rolled = table.rollback_to(before)
    assert rolled is not None and rolled.id == before + 3  # a new snapshot, ids only grow
    assert table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist() == state
    _write(table, 300)  # commits continue after the rollback, ids stay contiguous
    assert [s.id for s in table.snapshots()] == list(range(before - 1, before + 5))
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted == ()  # rollback left no garbage
