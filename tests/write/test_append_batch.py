"""Flushing many small append buckets together (``AppendWrite._flush_batch`` through
``write_runs``): every (partition, bucket) gets the file the per-bucket flush writes for it —
the same bytes and metadata (names and times aside) — judged against the per-bucket path and
against a plain model of the input (each file holds its partition's rows in input order,
numbered consecutively, with value bounds and null counts counted here). A failure deletes
every file of the batch and commits nothing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.format import binary_row
from lakeops.kv import writer as kv_writer
from lakeops.table.append import AppendTable
from lakeops.write import append_write

SCHEMA = pa.schema([("p", pa.int32()), ("n", pa.int64()), ("s", pa.string()), ("x", pa.float64())])


def data(seed: int, rows: int, partitions: int) -> pa.Table:
    """``n`` numbers the rows in input order; ``s`` has nulls and long strings (truncated
    bounds); ``x`` has NaN in some partitions (no bounds there)."""
    rng = np.random.default_rng(seed)
    strings = np.array(["", "short", "a string longer than sixteen chars", "zz", None], object)
    x = rng.random(rows)
    x[rng.random(rows) < 0.01] = np.nan
    return pa.table(
        {
            "p": pa.array(rng.integers(0, partitions, rows, dtype=np.int32)),
            "n": pa.array(np.arange(seed * rows, (seed + 1) * rows, dtype=np.int64)),
            "s": pa.array(strings[rng.integers(0, len(strings), rows)], pa.string()),
            "x": pa.array(x),
        },
        schema=SCHEMA,
    )


def _create(catalog: Catalog, name: str, bucket: str = "-1") -> AppendTable:
    options = {"bucket": bucket} if bucket == "-1" else {"bucket": bucket, "bucket-key": "n"}
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_keys=["p"], options=options)
    assert isinstance(table, AppendTable)
    return table


def _files(table: AppendTable) -> list[tuple[Any, ...]]:
    """Each live file: (partition, bucket, metadata less name and time, file bytes)."""
    out = []
    store = table.store
    for e in store.live_entries(store.latest_snapshot()):
        ctx = table.context
        path = ctx.locations.data_file(
            ctx.bucket_path(e.partition, e.bucket), e.file.file_name, e.file.external_path
        )
        meta = replace(e.file, file_name="", creation_time_millis=0)
        out.append((e.partition, e.bucket, meta, Path(path).read_bytes()))
    return sorted(out, key=lambda f: (f[0], f[1], f[2].min_sequence_number))


@pytest.mark.parametrize("bucket", ["-1", "3"])
def test_batched_append_files_are_the_per_bucket_files(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, bucket: str
) -> None:
    inputs = [data(seed, 3000, 50) for seed in (1, 2)]
    batched: list[int] = []
    real = append_write.AppendWrite._flush_batch

    def counting(self: Any, unit: Any) -> Any:
        batched.append(len(unit))
        return real(self, unit)

    monkeypatch.setattr(append_write.AppendWrite, "_flush_batch", counting)
    together = _create(catalog, "together", bucket)
    for batch in inputs:
        together.write(batch, parallelism=2)
    buckets = 50 if bucket == "-1" else 150
    assert sum(batched) >= 2 * buckets - 2 * 17  # most buckets of both writes in batches
    monkeypatch.setattr(append_write.AppendWrite, "_joins_batch", lambda *_: False)
    batched.clear()
    alone = _create(catalog, "alone", bucket)
    for batch in inputs:
        alone.write(batch, parallelism=2)
    assert batched == []
    assert _files(together) == _files(alone)

    # the plain model: each file holds its partition's rows in input order
    for partition, _, meta, raw in _files(together):
        (p,) = binary_row.deserialize(partition, [together.schema.fields[0].type])
        rows = pq.read_table(pa.BufferReader(raw)).to_pydict()
        assert set(rows["p"]) == {p}
        assert rows["n"] == sorted(rows["n"])
        assert meta.row_count == len(rows["n"])
        assert meta.max_sequence_number - meta.min_sequence_number + 1 == meta.row_count
        types = [f.type for f in together.schema.fields]
        mins = binary_row.deserialize(meta.value_stats.min_values, types)
        maxs = binary_row.deserialize(meta.value_stats.max_values, types)
        assert (mins[1], maxs[1]) == (min(rows["n"]), max(rows["n"]))
        assert meta.value_stats.null_counts[2] == sum(v is None for v in rows["s"])
        xs = rows["x"]
        if any(v != v for v in xs):
            assert mins[3] is None and maxs[3] is None
        else:
            assert (mins[3], maxs[3]) == (min(xs), max(xs))
    if bucket == "-1":  # numbered from 0 per write: the second write's files start at 0 too
        firsts = sorted(f[2].min_sequence_number for f in _files(together))
        assert firsts.count(0) == 2 * 50


def test_a_failed_batch_deletes_its_files_and_commits_nothing(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _create(catalog, "t")
    calls: list[int] = []
    real = kv_writer.local_millis

    def failing() -> int:
        calls.append(1)
        if len(calls) == 30:
            raise OSError("disk full")
        return real()

    monkeypatch.setattr(kv_writer, "local_millis", failing)
    with pytest.raises(OSError, match="disk full"):
        table.write(data(3, 3000, 50), parallelism=1)
    assert len(calls) == 30
    assert table.store.latest_snapshot_id() is None
    assert list(Path(table.root).rglob("*.parquet")) == []
