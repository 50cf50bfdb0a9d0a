"""Flushing one bucket's buffer (``flush_bucket``), against a plain model of the buffered rows:
sorted by key, one row per key (the last to arrive wins), every record numbered in arrival
order; with ``changelog-producer = input``, every record once more, as it came."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import SEQ
from lakeops.table.primary_key import Table
from lakeops.write import flush
from lakeops.write.buffer import BucketBuffer
from lakeops.write.flush import FlushSettings, flush_bucket
from lakeops.write.records import to_records

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
Row = tuple[int, int, int]  # (id, v, sequence number)


def _table(catalog: Catalog, producer: str) -> tuple[Table, FlushSettings, str]:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": producer},
    )
    settings = FlushSettings.of(table.context)
    return table, settings, f"{table.root}/bucket-0"


def _buffered(table: Table, first_seq: int) -> tuple[list[pa.Table], list[Row]]:
    """Three batches of random upserts taken from a buffer, and the same rows in order."""
    rng = random.Random(7)
    buffer, rows = BucketBuffer(first_seq), []
    for _ in range(3):
        ids = [rng.randrange(40) for _ in range(30)]
        values = [rng.randrange(1000) for _ in ids]
        rows += [
            (i, v, buffer.next_sequence + n)
            for n, (i, v) in enumerate(zip(ids, values, strict=True))
        ]
        batch = pa.table({"id": ids, "v": values}, schema=SCHEMA)
        buffer.append(to_records(batch, table.schema, table.options))
    return buffer.take(), rows


def _rows(files: tuple[DataFileMeta, ...], directory: str) -> list[Row]:
    data = pa.concat_tables(pq.read_table(f"{directory}/{f.file_name}") for f in files)
    return list(
        zip(data["id"].to_pylist(), data["v"].to_pylist(), data[SEQ].to_pylist(), strict=True)
    )


@pytest.mark.parametrize("producer", ["none", "input"])
def test_flush_writes_the_merged_model(catalog: Catalog, producer: str) -> None:
    table, settings, directory = _table(catalog, producer)
    batches, rows = _buffered(table, first_seq=100)
    flushed = flush_bucket(batches, settings, directory)

    last = {row[0]: row for row in rows}
    expected = [last[k] for k in sorted(last)]
    assert _rows(flushed.files, directory) == expected
    assert all(f.level == 0 for f in flushed.files)
    assert min(f.min_sequence_number for f in flushed.files) == min(r[2] for r in expected)
    assert max(f.max_sequence_number for f in flushed.files) == max(r[2] for r in expected)
    if producer == "input":
        assert _rows(flushed.changelog, directory) == sorted(rows, key=lambda r: (r[0], r[2]))
    else:
        assert flushed.changelog == ()
    names = {f.file_name for f in (*flushed.files, *flushed.changelog)}
    assert {Path(p).name for p in flushed.written} == names
    assert {p.name for p in Path(directory).iterdir()} == names


def test_a_failed_flush_leaves_no_file(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table, settings, directory = _table(catalog, "input")
    batches, _ = _buffered(table, first_seq=0)

    def fail(*args: object) -> pa.Table:
        assert any(Path(directory).iterdir())  # the changelog file is written by now
        raise RuntimeError("merge failed")

    monkeypatch.setattr(flush, "merge_sorted", fail)
    with pytest.raises(RuntimeError, match="merge failed"):
        flush_bucket(batches, settings, directory)
    assert list(Path(directory).iterdir()) == []
