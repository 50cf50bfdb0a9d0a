"""Parallel flush (``TableWrite.flush`` on a thread pool): for random upserts into several
partitions and buckets (fixed and dynamic buckets, with a changelog producer, small buffers so a
write flushes and compacts many times), parallelism 4 writes exactly the files of parallelism 1
(the serial path: same rows in each file in order, same sequence numbers, same levels), the same
snapshots and changelog, and a table whose rows equal a plain last-write-wins model. A failure
in any worker commits nothing and leaves no data file behind. A write to many partitions (far
more buckets than pool tasks) puts every row in the partition and bucket a model computes."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError
from lakeops.format.manifest import ManifestEntry
from lakeops.table.primary_key import Table
from lakeops.write import table_write
from tests.format.test_bucket_hash import reference_murmur3

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("s", pa.string())])

#: (bucket, changelog producer, extra options)
CASES = [
    ("4", "input", {"write-buffer-size": "64 kb", "num-sorted-run.compaction-trigger": "2"}),
    ("-1", "lookup", {"dynamic-bucket.target-row-num": "300"}),
    ("3", "none", {"write-buffer-size": "32 kb", "commit.force-compact": "true"}),
]


def batches(seed: int, rounds: int = 3, rows: int = 1500) -> Iterator[pa.Table]:
    """Random upserts of 600 keys in 3 partitions, with 12-character random strings."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(rounds):
        ids = [rng.randrange(600) for _ in range(rows)]
        yield pa.table(
            {
                "p": [f"p{i % 3}" for i in ids],
                "id": ids,
                "s": ["".join(rng.choices(letters, k=12)) for _ in ids],
            },
            schema=SCHEMA,
        )


def create(catalog: Catalog, name: str, bucket: str, producer: str, extra: dict[str, str]) -> Table:
    return catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": bucket, "changelog-producer": producer, **extra},
    )


def _file(table: Table, e: ManifestEntry) -> tuple[Any, ...]:
    """A data file's metadata (less its random name and its size) and its rows, in order."""
    ctx = table.context
    path = ctx.locations.data_file(
        ctx.bucket_path(e.partition, e.bucket), e.file.file_name, e.file.external_path
    )
    f = e.file
    meta = (e.partition, e.bucket, f.level, f.row_count, f.min_key, f.max_key)
    seqs = (f.min_sequence_number, f.max_sequence_number, f.file_source)
    return (*meta, *seqs, f.file_name.split("-")[0], pq.read_table(path).to_pylist())


def layout(table: Table) -> dict[str, Any]:
    """Everything a write or compaction produced that does not depend on random file names:
    per snapshot its kind and record counts, its changelog files, and the live files."""
    store = table.store
    snapshots, changelogs = [], []
    for sid in store.snapshot_ids():
        s = store.snapshot(sid)
        snapshots.append(
            (s.commit_kind, s.total_record_count, s.delta_record_count, s.changelog_record_count)
        )
        changelogs.append(sorted(_file(table, e) for e in store.changelog_entries(s)))
    live = sorted(_file(table, e) for e in store.live_entries(store.latest_snapshot()))
    return {"snapshots": snapshots, "changelog": changelogs, "live": live}


def model(seed: int) -> dict[tuple[str, int], str]:
    """The table a plain last-write-wins model expects."""
    rows: dict[tuple[str, int], str] = {}
    for batch in batches(seed):
        for r in batch.to_pylist():
            rows[(r["p"], r["id"])] = r["s"]
    return rows


def rows_of(table: Table) -> dict[tuple[str, int], str]:
    return {(r["p"], r["id"]): r["s"] for r in table.read().to_pylist()}


def write_all(table: Table, seed: int, parallelism: int) -> None:
    for batch in batches(seed):
        table.write(batch, parallelism=parallelism)


@pytest.mark.parametrize(("bucket", "producer", "extra"), CASES)
def test_parallel_write_is_the_serial_write(
    catalog: Catalog, bucket: str, producer: str, extra: dict[str, str]
) -> None:
    layouts = []
    for parallelism in (1, 4):
        table = create(catalog, f"t{parallelism}", bucket, producer, extra)
        write_all(table, 11, parallelism)
        assert rows_of(table) == model(11)
        layouts.append(layout(table))
    serial, parallel = layouts
    assert len({(f[0], f[1]) for f in serial["live"]}) >= 3  # several buckets in play
    assert parallel == serial


def test_a_failing_flush_commits_nothing_and_leaves_no_file(
    catalog: Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(catalog, "t", "4", "input", {})
    first = next(batches(3))
    table.write(first, parallelism=4)
    before = sorted(p for p in Path(table.root).rglob("*") if p.is_file())
    real = table_write.flush_bucket
    calls = []

    def failing(batches: Any, settings: Any, directory: str, external: Any = None) -> Any:
        calls.append(directory)
        if directory.endswith("bucket-2") and "p=p1" in directory:
            raise OSError("disk full")
        return real(batches, settings, directory, external)

    monkeypatch.setattr(table_write, "flush_bucket", failing)
    with pytest.raises(OSError, match="disk full"):
        table.write(first, parallelism=4)
    assert len(calls) > 4  # the other buckets ran (and wrote) before the failure surfaced
    assert table.store.latest_snapshot_id() == 1
    assert sorted(p for p in Path(table.root).rglob("*") if p.is_file()) == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_parallelism_must_be_a_positive_integer(catalog: Catalog, bad: Any) -> None:
    table = create(catalog, "t", "2", "none", {})
    with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
        table.write(next(batches(1)), parallelism=bad)
    with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
        table.compact(parallelism=bad)
    assert table.store.latest_snapshot_id() is None


def _model_bucket(key: int, buckets: int) -> int:
    """Paimon's bucket of a BIGINT key, computed without lakeops: MurmurHash3 (seed 42) of the
    key's BinaryRow (an 8-byte null-bit header, then the value, little-endian), ``abs(hash %
    buckets)`` with Java's truncating remainder."""
    return abs(reference_murmur3(bytes(8) + struct.pack("<q", key))) % buckets


def many_partitions(seed: int, partitions: int, rows: int) -> pa.Table:
    """Upserts of ``rows`` random keys over ``partitions`` partitions (repeated keys too)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, rows // 2, rows)
    letters = np.frombuffer(b"abcdefghijklmnop", dtype=np.uint8)
    s = letters[rng.integers(0, 16, (rows, 10))].reshape(-1).view("S10").astype(str)
    return pa.table(
        {"p": [f"p{int(v)}" for v in ids % partitions], "id": ids, "s": s}, schema=SCHEMA
    )


def test_a_many_partition_write_puts_every_row_in_its_partition_and_bucket(
    catalog: Catalog,
) -> None:
    """60 partitions x 4 buckets: far more buckets than pool tasks, so the flush packs many
    buckets into each task. Model: every row of every data file lies in the directory of its
    partition (its ``p`` value) and of its bucket (Paimon's hash of its key, computed here
    without lakeops); the table holds the last write of every key; and the files are those of
    the serial write (same rows, order, sequence numbers and levels) — the second write
    compacts the buckets the first one wrote, in background compactions started in batches."""
    inputs = [many_partitions(seed, 60, 3000) for seed in (1, 2)]
    expected: dict[tuple[str, int], str] = {}
    for batch in inputs:
        for p, i, s in zip(*(batch.column(c).to_pylist() for c in ("p", "id", "s")), strict=True):
            expected[(p, i)] = s
    layouts = []
    for parallelism in (1, 2):
        table = create(
            catalog, f"t{parallelism}", "4", "none", {"num-sorted-run.compaction-trigger": "2"}
        )
        for batch in inputs:
            table.write(batch, parallelism=parallelism)
        assert rows_of(table) == expected
        files = sorted(Path(table.root).glob("p=*/bucket-*/*.parquet"))
        assert len({f.parent for f in files}) > 200
        for f in files:
            partition = f.parent.parent.name.removeprefix("p=")
            bucket = int(f.parent.name.removeprefix("bucket-"))
            rows = pq.read_table(f).to_pydict()
            assert set(rows["p"]) == {partition}
            assert {_model_bucket(i, 4) for i in rows["id"]} == {bucket}
        layouts.append(layout(table))
    assert layouts[0] == layouts[1]
    assert any(f[2] > 0 for f in layouts[0]["live"])  # compacted files
