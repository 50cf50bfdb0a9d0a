"""Rollback is a commit: a new snapshot holding an older one's files, published exclusively
like every write. Checked against a plain model and pypaimon, with a writer racing it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog, Table
from lakeops.format.deletion_vector import deletion_files
from lakeops.read.deletions import DeletionVectorReader
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


@pytest.mark.parametrize(
    "options",
    [
        {"bucket": "-1", "dynamic-bucket.target-row-num": "20"},
        {"bucket": "1", "deletion-vectors.enabled": "true"},
    ],
    ids=["hash-index", "deletion-vectors"],
)
def test_expiry_after_a_rollback_keeps_the_index_files_the_rollback_restored(
    catalog: Catalog, options: dict[str, str]
) -> None:
    """A rollback restores the target's index files (a dynamic bucket's key index, a bucket's
    deletion vectors) that later snapshots replaced. Expiry deletes the index files of the
    snapshots it expires that the first snapshot it keeps does not hold: were the restored
    files added back under their names, expiring the snapshots between their replacement and
    the rollback would delete them under the latest snapshot (the next write of a dynamic
    bucket failed; a vector's file went missing)."""
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    first, second = _kv(list(range(30)), "a"), _kv([1, 2, 40], "b")
    table.write(first)
    table.write(second)  # marks vectors of the first file; adds a key to the index
    target = table.latest_snapshot().id
    table.write(_kv([3, 50, 60], "c"))  # replaces the index files
    table.compact(full=True)
    table.rollback_to(target)
    # first down to the snapshot before the rollback's, which holds none of the restored files
    table.expire_snapshots(retain_max=2, retain_min=1)
    assert table.check().ok
    table.expire_snapshots(retain_max=1, retain_min=1)
    assert table.check().ok
    assert _rows(table.read()) == _model(first, second)
    last = _kv([2, 70], "d")
    table.write(last)  # a dynamic bucket's write reads its key index
    assert table.check().ok
    assert _rows(table.read()) == _model(first, second, last)


def _rolled_back_over_a_compaction(catalog: Catalog) -> tuple[Table, dict[int, str]]:
    """A deletion-vector table rolled back to a snapshot with a vector, over a full
    compaction that replaced the vector's data file; and the rows it holds (the model)."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    first, second = _kv(list(range(10)), "a"), _kv([1, 2], "b")
    table.write(first)
    table.write(second)  # a vector on the first file
    target = table.latest_snapshot().id
    table.write(_kv([3], "c"))
    table.compact(full=True)
    table.rollback_to(target)
    return table, _model(first, second)


def test_a_rolled_back_deletion_vector_names_the_copy_of_its_data_file(
    catalog: Catalog,
) -> None:
    """A data file that a compaction replaced after the rollback's target comes back as a
    copy under a new name; the target's deletion vector of that file must name the copy.
    Paimon's readers read a deletion-vector table's files without merging them, with each
    file's vector: judged here as they read, every live file minus its vector's rows, against
    the model."""
    table, expected = _rolled_back_over_a_compaction(catalog)
    latest = table.latest_snapshot()
    locations = table.context.locations
    index = table.store.index_entries(latest)
    vectors = {
        name: DeletionVectorReader(table.file_io).positions(df)
        for (_, _, name), df in deletion_files(
            index,
            {
                e.file.file_name: locations.index_entry_path(e.partition, e.bucket, e.file)
                for e in index
            },
        ).items()
    }
    live = {e.file.file_name: e for e in table.store.live_entries(latest)}
    assert vectors
    assert set(vectors) <= set(live)
    raw: dict[int, str] = {}
    for name, e in live.items():
        if e.file.level == 0:
            continue
        path = locations.entry_path(e.partition, e.bucket, name, e.file.external_path)
        deleted = set(vectors.get(name, np.array([], dtype=np.uint64)).tolist())
        for position, row in enumerate(pq.read_table(path, columns=["id", "v"]).to_pylist()):
            if position not in deleted:
                assert row["id"] not in raw  # one row per key across the files
                raw[row["id"]] = row["v"]
    assert raw == expected


@pytest.mark.interop
def test_pypaimon_reads_a_rolled_back_deletion_vector_table(
    catalog: Catalog, warehouse: Path
) -> None:
    """pypaimon reads a deletion-vector table's files without merging them: after a rollback
    over a compaction it must see each key once (it saw the superseded rows of the copied
    file, whose vector named the original)."""
    _, expected = _rolled_back_over_a_compaction(catalog)
    got = oracle_read(warehouse, "db.t")
    assert got.num_rows == 10
    assert _rows(got) == expected
