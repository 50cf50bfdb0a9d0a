"""Rollback is a commit: a new snapshot holding an older one's files, published exclusively
like every write. Checked against a plain model and pypaimon, with a writer racing it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _kv(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _model(*batches: pa.Table) -> dict[int, str]:
    out: dict[int, str] = {}
    for b in batches:
        out.update(_rows(b))
    return out


@pytest.mark.interop
def test_rollback_publishes_a_new_snapshot_and_keeps_history(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    first, second, third = _kv(list(range(50)), "a"), _kv(list(range(25, 75)), "b"), _kv([1], "c")
    table.write(first)
    table.write(second)
    table.write(third)
    snapshot = table.rollback_to(1)
    assert snapshot is not None and snapshot.id == 4 and snapshot.commit_kind == "OVERWRITE"
    assert _rows(table.read()) == _model(first)
    assert _rows(oracle_read(warehouse, "db.t")) == _model(first)
    assert _rows(table.read(snapshot_id=3)) == _model(first, second, third)  # still there
    assert table.rollback_to(1) is None  # nothing left to undo
    after = _kv(list(range(70, 90)), "d")
    table.write(after)
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    assert _rows(oracle_read(warehouse, "db.t")) == _model(first, after)
    # expiry may now remove what only snapshots 2 and 3 referenced, never what 4 and 5 use
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert _rows(catalog.get_table("db.t").read()) == _model(first, after)
    assert _rows(oracle_read(warehouse, "db.t")) == _model(first, after)


@pytest.mark.interop
def test_a_writer_racing_a_rollback_commits_on_top_of_it(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    base, later = _kv(list(range(40)), "a"), _kv(list(range(20, 60)), "b")
    table.write(base)
    table.write(later)
    writer = table.new_write()  # planned on snapshot 2
    racing = _kv(list(range(50, 80)), "w")
    writer.write(racing)
    assert catalog.get_table("db.t").rollback_to(1) is not None  # snapshot 3
    table.commit(writer.prepare_commit())  # snapshot 4, on the rolled-back table
    expected = _model(base, racing)
    assert _rows(table.read()) == expected
    more = []
    for n in range(6):
        batch = _kv([n, 100 + n], f"m{n}")
        more.append(batch)
        table.write(batch)
    expected = _model(base, racing, *more)
    assert _rows(catalog.get_table("db.t").read()) == expected
    assert _rows(oracle_read(warehouse, "db.t")) == expected
    ids = [s.id for s in table.snapshots()]
    assert ids == list(range(1, ids[-1] + 1))


@pytest.mark.interop
def test_rollback_of_a_dynamic_bucket_table_restores_its_key_index(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.d",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "20"},
    )
    first = _kv(list(range(30)), "a")
    table.write(first)
    table.write(_kv(list(range(30, 90)), "b"))  # new keys: new buckets and index files
    table.rollback_to(1)
    again = _kv(list(range(20, 90)), "c")  # keys 30.. are new again after the rollback
    table.write(again)
    got = oracle_read(warehouse, "db.d")
    assert got.num_rows == 90  # no key in two buckets
    assert _rows(got) == _model(first, again)
    assert _rows(catalog.get_table("db.d").read()) == _model(first, again)


def test_rollback_tells_apart_files_alike_in_every_statistic(catalog: Catalog) -> None:
    """After a rollback, sequence numbers are given out again: two full compactions on the two
    sides of it write files alike in size, key range, sequence range and level but holding
    other values. A rollback to the first must restore it, not take the second for it."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    ids = list(range(10))
    base = pa.table({"id": ids, "v": ["x0"] * 10}, schema=SCHEMA)
    first = pa.table({"id": ids, "v": ["aa"] * 10}, schema=SCHEMA)
    second = pa.table({"id": ids, "v": ["bb"] * 10}, schema=SCHEMA)
    table.write(base)
    start = table.store.latest_snapshot().id
    table.write(first)
    table.compact(full=True)
    compacted = table.store.latest_snapshot().id
    table.rollback_to(start)
    table.write(second)
    table.compact(full=True)
    (now,) = table.store.live_entries(table.store.latest_snapshot())
    (then,) = table.store.live_entries(table.store.snapshot(compacted))
    assert (now.file.file_size, now.file.max_sequence_number, now.file.level) == (
        then.file.file_size,
        then.file.max_sequence_number,
        then.file.level,
    )  # the two files are alike to the manifest (else this test proves nothing)
    assert table.rollback_to(compacted) is not None
    assert _rows(table.read()) == _model(first)
    assert table.rollback_to(start) is not None  # back again: copies are still told apart
    assert _rows(table.read()) == _model(base)
    assert table.rollback_to(compacted) is not None
    assert table.rollback_to(compacted) is None  # a copy of the same bytes holds it
    assert _rows(table.read()) == _model(first)


def test_a_rolled_back_copy_keeps_its_own_file_index(catalog: Catalog, warehouse: Path) -> None:
    """A file that a newer snapshot deleted comes back as a copy with its extra ``.index``
    file copied beside it under the copy's name: once expiry removes the original and its
    index, the copy's index is still there and holds the copy's values."""
    from lakeops.format.file_index import read_container

    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        options={
            "bucket": "-1",
            "file-index.bloom-filter.columns": "id",
            "file-index.in-manifest-threshold": "1 b",
        },
    )
    table.write(_kv(list(range(20)), "a"))
    table.write(_kv(list(range(20, 30)), "b"))
    first = table.store.latest_snapshot().id - 1
    table.compact(full=True)  # deletes both files
    assert table.rollback_to(first) is not None
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    (entry,) = table.store.live_entries(table.store.latest_snapshot())
    (extra,) = entry.file.extra_files
    assert extra == entry.file.file_name + ".index"
    index = warehouse / "db.db" / "t" / "bucket-0" / extra
    assert "id" in read_container(index.read_bytes())
    assert _rows(table.read()) == _model(_kv(list(range(20)), "a"))
    assert _rows(oracle_read(warehouse, "db.t")) == _model(_kv(list(range(20)), "a"))
