"""The write path: buffer flushing, rolling files, sequence numbers, level-0 file layout."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.parquet as pq

from lakeops import Catalog
from lakeops.format.kv import KIND, SEQ

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def _data(ids: range, v: int = 0) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids), "s": [f"s{i}" for i in ids]})


def test_data_file_layout_and_sorting(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [3, 1, 2, 1], "v": [30, 10, 20, 11], "s": ["c", "a", "b", "a2"]}))
    (entry,) = table.store.live_entries(table.latest_snapshot())
    data = pq.read_table(f"{table.root}/bucket-0/{entry.file.file_name}")
    assert data.column_names == ["_KEY_id", SEQ, KIND, "id", "v", "s"]
    assert data.schema.field("_KEY_id").nullable is False
    # merged in the write buffer: one row per key, sorted by key, the later duplicate wins
    assert data.column("id").to_pylist() == [1, 2, 3]
    assert data.column("v").to_pylist() == [11, 20, 30]
    assert data.column(SEQ).to_pylist() == [3, 2, 0]
    assert entry.file.min_sequence_number == 0 and entry.file.max_sequence_number == 3
    assert entry.file.level == 0 and entry.file.row_count == 3


def test_small_buffer_flushes_many_level0_files_and_reads_merge(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "write-buffer-size": "16 kb", "target-file-size": "8 kb"},
    )
    writer = table.new_write()
    for round_ in range(5):
        writer.write(_data(range(0, 2000), v=round_))
    messages = writer.prepare_commit()
    files = [f for m in messages for f in m.new_files]
    assert len(files) > 10  # flushed many times, rolled into several files each time
    assert all(f.level == 0 for f in files)
    assert pickle.loads(pickle.dumps(messages)) == messages
    table.commit(messages)
    result = table.read().sort_by("id")
    assert result.num_rows == 2000
    assert set(result.column("v").to_pylist()) == {4}


def test_sequence_numbers_continue_per_bucket(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(_data(range(10)))
    table.write(_data(range(5), v=1))
    entries = sorted(
        table.store.live_entries(table.latest_snapshot()), key=lambda e: e.file.min_sequence_number
    )
    assert [(e.file.min_sequence_number, e.file.max_sequence_number) for e in entries] == [
        (0, 9),
        (10, 14),
    ]
    assert table.read(filter=[("id", "<", 5)]).column("v").to_pylist() == [1] * 5


def test_two_writers_commit_together_as_one_snapshot(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
    )
    w1, w2 = table.new_write(), table.new_write()
    w1.write(_data(range(0, 100)))
    w2.write(_data(range(100, 200)))
    snapshot = table.commit(w1.prepare_commit() + w2.prepare_commit())
    assert snapshot is not None and snapshot.id == 1 and snapshot.total_record_count == 200
    assert table.read().num_rows == 200


def test_empty_write_makes_no_snapshot(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    assert table.write(SCHEMA.empty_table()) is None
    assert table.snapshots() == []
