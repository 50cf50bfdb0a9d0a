"""Flushing many small buckets together (``flush_buckets``), judged against flushing each bucket
alone (``flush_bucket``, the per-bucket path) and against a plain model: for every merge engine,
with and without an input changelog, every bucket gets byte-identical files and the same
metadata (file names and creation times aside), and its data file holds the model's rows. A
failure deletes every file of every bucket of the batch; the table writer batches only a
flush of many small Parquet buckets, with the result of the serial per-bucket flush."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND, SEQ, RowKind
from lakeops.kv import writer as kv_writer
from lakeops.kv.writer import RUN_ROWS_MAX
from lakeops.table.primary_key import Table
from lakeops.write import flush, lifecycle, table_write
from lakeops.write.buffer import BucketBuffer
from lakeops.write.flush import FlushSettings, flush_bucket, flush_buckets, runs_fit
from lakeops.write.records import to_records

SCHEMA = pa.schema(
    [
        pa.field("p", pa.int32(), False),
        pa.field("id", pa.int64(), False),
        ("s", pa.string()),
        ("city", pa.string()),
        ("v", pa.int64()),
        ("x", pa.float64()),
    ]
)

ENGINES: list[tuple[str, dict[str, str]]] = [
    ("deduplicate", {}),
    ("deduplicate", {"changelog-producer": "input"}),
    ("deduplicate", {"sequence.field": "v"}),
    # file indexes: small ones embedded in the metadata, large ones as .index files
    (
        "deduplicate",
        {
            "file-index.bloom-filter.columns": "s, city",
            "file-index.bloom-filter.s.items": "50",
            "file-index.bloom-filter.city.items": "50",
            "file-index.in-manifest-threshold": "1 mb",
        },
    ),
    (
        "deduplicate",
        {"file-index.bloom-filter.columns": "s", "file-index.in-manifest-threshold": "10 b"},
    ),
    ("partial-update", {"partial-update.remove-record-on-delete": "true"}),
    ("aggregation", {"fields.v.aggregate-function": "sum", "fields.x.aggregate-function": "max"}),
    ("first-row", {}),
]


def _table(catalog: Catalog, engine: str, options: dict[str, str]) -> Table:
    return catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "1", "merge-engine": engine, **options},
    )


def _buckets(table: Table, count: int, seed: int) -> list[list[pa.Table]]:
    """``count`` buckets of random upserts (repeated keys, nulls, retractions where the engine
    takes them), each taken from a buffer of two or three batches."""
    rng = random.Random(seed)
    cities = [f"city-{i}" for i in range(6)]
    retracts = table.options.merge_engine in ("deduplicate", "partial-update")
    out = []
    for b in range(count):
        buffer = BucketBuffer(rng.randrange(0, 1000))
        for _ in range(rng.randrange(2, 4)):
            n = rng.randrange(1, 40)
            # buckets 2 and 3 (of every 4) hold one key, the same: neighbours in the batch
            one_key = b % 4 in (2, 3)
            ids = [7 if one_key else rng.randrange(30) for _ in range(n)]
            batch = pa.table(
                {
                    "p": [0 if one_key else b % 7] * n,
                    "id": ids,
                    "s": [
                        None if rng.random() < 0.1 else f"{rng.getrandbits(48):012x}" for _ in ids
                    ],
                    "city": [rng.choice(cities) for _ in ids],
                    "v": [None if rng.random() < 0.1 else rng.randrange(100) for _ in ids],
                    "x": [rng.choice([0.5, -0.0, 0.0, float("nan"), 2.0]) for _ in ids],
                },
                schema=SCHEMA,
            )
            records = table.context.engine.prepare(to_records(batch, table.schema, table.options))
            if retracts:
                kinds = np.array(
                    [rng.choice([0, 0, 0, 1, 3]) for _ in range(records.num_rows)], np.int8
                )
                at = records.schema.get_field_index(KIND)
                records = records.set_column(at, records.schema.field(at), pa.array(kinds))
            buffer.append(records)
        out.append(buffer.take())
    return out


def _renamed(extra: tuple[str, ...], old: DataFileMeta, new: DataFileMeta) -> tuple[str, ...]:
    """``extra`` (files named after ``old``) named after ``new``."""
    return tuple(name.replace(old.file_name, new.file_name) for name in extra)


def _same(a: DataFileMeta, b: DataFileMeta) -> None:
    """``a`` and ``b`` are one file's metadata written twice (names and times aside)."""
    assert replace(a, file_name="", creation_time_millis=0) == replace(
        b, file_name="", creation_time_millis=0
    )


@pytest.mark.parametrize(("engine", "options"), ENGINES)
def test_buckets_flushed_together_are_each_bucket_flushed_alone(
    catalog: Catalog, tmp_path: Path, engine: str, options: dict[str, str]
) -> None:
    table = _table(catalog, engine, options)
    settings = FlushSettings.of(table.context)
    buckets = _buckets(table, 25, seed=len(options) + len(engine))
    assert all(runs_fit(b, settings) for b in buckets)
    together = [str(tmp_path / "together" / f"bucket-{i}") for i in range(len(buckets))]
    alone = [str(tmp_path / "alone" / f"bucket-{i}") for i in range(len(buckets))]
    got = flush_buckets([(b, d, None) for b, d in zip(buckets, together, strict=True)], settings)
    want = [flush_bucket(b, settings, d) for b, d in zip(buckets, alone, strict=True)]
    assert len(got) == len(want) == len(buckets)
    if options.get("file-index.in-manifest-threshold") == "10 b":
        assert all(f.extra_files and f.embedded_file_index is None for g in got for f in g.files)
    elif "file-index.bloom-filter.columns" in options:
        assert all(f.embedded_file_index and not f.extra_files for g in got for f in g.files)
    for g, w, gd, wd in zip(got, want, together, alone, strict=True):
        for kind in ("files", "changelog"):
            gfiles, wfiles = getattr(g, kind), getattr(w, kind)
            assert len(gfiles) == len(wfiles)
            for gf, wf in zip(gfiles, wfiles, strict=True):
                _same(gf, replace(wf, extra_files=_renamed(wf.extra_files, wf, gf)))
                assert Path(gd, gf.file_name).read_bytes() == Path(wd, wf.file_name).read_bytes()
                for gx, wx in zip(gf.extra_files, wf.extra_files, strict=True):
                    assert Path(gd, gx).read_bytes() == Path(wd, wx).read_bytes()
        assert [Path(p).name for p in g.written] == [
            name for f in (*g.changelog, *g.files) for name in (f.file_name, *f.extra_files)
        ]
        assert {p.name for p in Path(gd).iterdir()} == {Path(p).name for p in g.written}


def test_deduplicated_buckets_hold_the_last_record_of_each_key(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The plain model: per bucket, the records sorted by key, the last of each key kept
    (a lone retraction too), numbered in arrival order."""
    table = _table(catalog, "deduplicate", {})
    settings = FlushSettings.of(table.context)
    buckets = _buckets(table, 12, seed=5)
    places = [str(tmp_path / f"bucket-{i}") for i in range(len(buckets))]
    got = flush_buckets([(b, d, None) for b, d in zip(buckets, places, strict=True)], settings)
    for batches, flushed, directory in zip(buckets, got, places, strict=True):
        rows = pa.concat_tables(batches).to_pylist()
        last: dict[tuple[int, int], dict[str, Any]] = {}
        for r in sorted(rows, key=lambda r: r[SEQ]):
            last[(r["p"], r["id"])] = r
        expected = [last[k] for k in sorted(last)]
        (data,) = flushed.files
        written = pq.read_table(Path(directory, data.file_name)).to_pylist()
        columns = ("p", "id", "s", "city", "v", SEQ, KIND)
        assert [tuple(r[c] for c in columns) for r in written] == [
            tuple(r[c] for c in columns) for r in expected
        ]
        assert data.row_count == len(expected)
        assert data.min_sequence_number == min(r[SEQ] for r in expected)
        assert data.max_sequence_number == max(r[SEQ] for r in expected)
        retracted = (RowKind.UPDATE_BEFORE, RowKind.DELETE)
        assert data.delete_row_count == sum(r[KIND] in retracted for r in expected)


def test_a_failed_batch_leaves_no_file(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, "deduplicate", {"changelog-producer": "input"})
    settings = FlushSettings.of(table.context)
    buckets = _buckets(table, 10, seed=9)
    places = [str(tmp_path / "out" / f"bucket-{i}") for i in range(len(buckets))]
    real = kv_writer.local_millis
    calls: list[int] = []

    def failing() -> int:
        calls.append(1)
        if len(calls) == 15:  # all changelog files and some data files are written by now
            raise OSError("disk full")
        return real()

    monkeypatch.setattr(kv_writer, "local_millis", failing)
    with pytest.raises(OSError, match="disk full"):
        flush_buckets([(b, d, None) for b, d in zip(buckets, places, strict=True)], settings)
    assert len(calls) == 15
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file()] == []


def test_what_a_batch_takes(catalog: Catalog) -> None:
    table = _table(catalog, "deduplicate", {})
    settings = FlushSettings.of(table.context)
    (batches,) = _buckets(table, 1, seed=1)
    assert runs_fit(batches, settings)
    assert not runs_fit([], settings)
    rows = pa.concat_tables(batches)
    big = rows.take(pa.array(np.arange(RUN_ROWS_MAX + 1) % rows.num_rows))
    assert runs_fit([big.slice(0, RUN_ROWS_MAX)], settings)
    assert not runs_fit([big], settings)  # more than one chunk: a rolling writer's job
    orc = FlushSettings.of(
        catalog.create_table(
            "db.orc",
            schema=SCHEMA,
            primary_keys=["p", "id"],
            options={"bucket": "1", "file.format": "orc"},
        ).context
    )
    assert not runs_fit(batches, orc)
    with pytest.raises(ValueError, match="1 to"):
        flush_buckets([([big], "/nowhere", None)], settings)


def test_the_writer_batches_many_small_buckets_only(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write to 40 partitions x 4 buckets flushes through ``flush_buckets`` (few units, most
    buckets in batches), a write to 2 buckets one bucket at a time; both tables read back the
    model, and the batched write's files are those of a serial write through the per-bucket
    path (rows, order, sequence numbers, key ranges and statistics)."""
    rng = np.random.default_rng(3)
    n = 4000
    data = pa.table(
        {
            "p": pa.array(rng.integers(0, 40, n).astype(np.int32)),
            "id": pa.array(rng.integers(0, 3000, n)),
            "s": pa.array([f"{v:x}" for v in rng.integers(0, 2**40, n)]),
            "city": pa.array([f"c{v}" for v in rng.integers(0, 5, n)]),
            "v": pa.array(rng.integers(0, 10, n)),
            "x": pa.array(rng.random(n)),
        },
        schema=SCHEMA,
    )
    expected = {(r["p"], r["id"]): r for r in data.to_pylist()}
    batched: list[int] = []
    real = table_write.flush_buckets

    def counting(buckets: Any, settings: Any) -> Any:
        batched.append(len(buckets))
        return real(buckets, settings)

    monkeypatch.setattr(table_write, "flush_buckets", counting)
    layouts = []
    for name, parallelism, batching in (("a", 2, True), ("b", 1, False)):
        if not batching:
            monkeypatch.setattr(table_write, "runs_fit", lambda *_: False)
        table = catalog.create_table(
            f"db.{name}",
            schema=SCHEMA,
            primary_keys=["p", "id"],
            partition_keys=["p"],
            options={"bucket": "4"},
        )
        table.write(data, parallelism=parallelism)
        got = {(r["p"], r["id"]): r for r in table.read().to_pylist()}
        assert got == expected
        files = [
            (e.partition, e.bucket, replace(e.file, file_name="", creation_time_millis=0))
            for e in table.store.live_entries(table.store.latest_snapshot())
        ]
        layouts.append(sorted(files, key=lambda t: (t[0], t[1])))
        if batching:
            assert sum(batched) == 160 and len(batched) <= 2 * 8 + 1
    assert layouts[0] == layouts[1]

    small = catalog.create_table(
        "db.small", schema=SCHEMA, primary_keys=["p", "id"], options={"bucket": "2"}
    )
    batched.clear()
    monkeypatch.setattr(table_write, "runs_fit", flush.runs_fit)
    small.write(data.slice(0, 100), parallelism=2)
    assert batched == []


def test_a_unit_holds_a_bounded_share_of_the_buffer(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a small byte bound per unit, the flush cuts the buckets into more units, none
    (but for its last bucket) over the bound, and the table holds the same rows."""
    rng = np.random.default_rng(5)
    n = 3000
    data = pa.table(
        {
            "p": pa.array(rng.integers(0, 30, n).astype(np.int32)),
            "id": pa.array(rng.integers(0, 10**6, n)),
            "s": pa.array([f"{v:x}" for v in rng.integers(0, 2**40, n)]),
            "city": pa.array(["c"] * n),
            "v": pa.array(rng.integers(0, 10, n)),
            "x": pa.array(rng.random(n)),
        },
        schema=SCHEMA,
    )
    sizes: list[list[int]] = []
    real = table_write.flush_buckets

    def recording(buckets: Any, settings: Any) -> Any:
        sizes.append(
            [sum(b.drop_columns([SEQ]).nbytes for b in batches) for batches, _, _ in buckets]
        )
        return real(buckets, settings)

    monkeypatch.setattr(table_write, "flush_buckets", recording)
    monkeypatch.setattr(lifecycle, "_BATCH_BYTES", 8_000)
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "4"},
    )
    table.write(data, parallelism=2)
    assert len(sizes) > 16  # more units than the pool's shares
    # the buffered bytes of a unit's buckets but its last stay in bound
    assert all(sum(s[:-1]) < 8_000 for s in sizes)
    assert any(sum(s) >= 8_000 for s in sizes)  # (the bound did cut units)
    got = {(r["p"], r["id"]): r for r in table.read().to_pylist()}
    assert got == {(r["p"], r["id"]): r for r in data.to_pylist()}
