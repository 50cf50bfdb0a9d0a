"""In-writer compaction in the background (``lakeops.write.cadence``): a bucket's compaction runs
while the writer accepts data, the writer waits for it at the bucket's next flush
(back-pressure), sorted runs stay bounded by ``num-sorted-run.stop-trigger``, and a failed
background compaction commits nothing and leaves no file. Tables are judged against a plain
last-write-wins model of the input."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.compact import task as compact_task
from lakeops.compact.levels import level_runs
from lakeops.errors import LakeopsError
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.table.primary_key import Table
from lakeops.write import cadence

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
#: how long a test waits for an event before it fails (never reached when the code is right)
TIMEOUT = 120


def batch(seed: int, rows: int = 2000) -> pa.Table:
    rng = random.Random(seed)
    ids = [rng.randrange(5000) for _ in range(rows)]
    strings = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=12)) for _ in ids]
    return pa.table({"id": ids, "s": strings}, schema=SCHEMA)


def model(batches: list[pa.Table]) -> dict[int, str]:
    rows: dict[int, str] = {}
    for b in batches:
        for r in b.to_pylist():
            rows[r["id"]] = r["s"]
    return rows


def create(catalog: Catalog, name: str, **options: str) -> Table:
    return catalog.create_table(
        f"db.{name}",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "num-sorted-run.compaction-trigger": "2", **options},
    )


def rows_of(table: Table) -> dict[int, str]:
    return {r["id"]: r["s"] for r in table.read().to_pylist()}


def files_under(table: Table) -> list[Path]:
    return sorted(p for p in Path(table.root).rglob("*") if p.is_file())


def in_pool() -> bool:
    return threading.current_thread().name.startswith("lakeops")


def test_compaction_runs_while_the_writer_accepts_data_and_holds_it_at_the_next_flush(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(catalog, "t")
    inputs = [batch(i) for i in range(3)]
    table.write(inputs[0])  # a level-0 run to compact with
    started, gate, waiting = threading.Event(), threading.Event(), threading.Event()
    real_compact, real_sync = cadence.BucketLsm.compact, cadence.BucketLsm.sync

    def gated_compact(self: cadence.BucketLsm, stop_trigger: int, full: bool = False) -> None:
        if in_pool():
            started.set()
            assert gate.wait(TIMEOUT)
        real_compact(self, stop_trigger, full)

    def watched_sync(self: cadence.BucketLsm) -> None:
        if self.pending is not None and not self.pending.done():
            waiting.set()
        real_sync(self)

    monkeypatch.setattr(cadence.BucketLsm, "compact", gated_compact)
    monkeypatch.setattr(cadence.BucketLsm, "sync", watched_sync)
    writer = table.new_write(parallelism=2)
    writer.write(inputs[1])
    writer.flush()  # level 0 written; the bucket's compaction starts and is held at the gate
    assert started.wait(TIMEOUT)
    writer.write(inputs[2])  # the writer accepts data meanwhile
    assert not waiting.is_set()
    second_flush = threading.Thread(target=writer.flush)
    second_flush.start()
    assert waiting.wait(TIMEOUT)  # the next flush of the bucket waits for the compaction
    gate.set()
    second_flush.join(TIMEOUT)
    assert not second_flush.is_alive()
    messages = writer.prepare_commit()
    assert any(m.compact_before for m in messages)  # the held compaction's result is committed
    table.commit(messages)
    assert rows_of(table) == model(inputs)


def test_sorted_runs_stay_bounded_by_the_stop_trigger(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(
        catalog,
        "t",
        **{
            "write-buffer-size": "16 kb",
            "num-sorted-run.compaction-trigger": "2",
            "num-sorted-run.stop-trigger": "3",
        },
    )
    seen: list[tuple[int, int]] = []  # (runs after the flush's files were added, their count)
    real = cadence.CompactionCadence.after_flush

    def watched(self: Any, lsm: cadence.BucketLsm, files: Any, executor: Any) -> None:
        files = list(files)
        real(self, lsm, files, executor)
        seen.append((len(level_runs([*lsm.live])), len(files)))

    monkeypatch.setattr(cadence.CompactionCadence, "after_flush", watched)
    inputs = [batch(i, 6000) for i in range(2)]
    for b in inputs:
        table.write(b, parallelism=2)
    assert len(seen) > 8  # many flushes
    # the writer never holds more than stop-trigger runs plus the newest flush's files
    assert all(runs <= 3 + new for runs, new in seen)
    assert rows_of(table) == model(inputs)
    latest = table.store.live_entries(table.store.latest_snapshot())
    assert len(level_runs([e.file for e in latest])) <= 3


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_failed_background_compaction_commits_nothing_and_leaves_no_file(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, parallelism: int
) -> None:
    table = create(catalog, "t", **{"write-buffer-size": "16 kb"})
    table.write(batch(0, 6000), parallelism=parallelism)
    before, latest = files_under(table), table.store.latest_snapshot_id()
    real: Callable[..., None] = compact_task.CompactTask._rewrite_impl
    rewrites: list[int] = []

    def failing(self: compact_task.CompactTask, sections: Any) -> None:
        real(self, sections)  # this rewrite's files are written ...
        rewrites.append(len(self.result.written))
        raise OSError("disk full")  # ... and the task fails after them

    monkeypatch.setattr(compact_task.CompactTask, "_rewrite_impl", failing)
    with pytest.raises(OSError, match="disk full"):
        table.write(batch(1, 6000), parallelism=parallelism)
    assert rewrites and rewrites[0] > 0
    assert table.store.latest_snapshot_id() == latest
    assert files_under(table) == before
    assert rows_of(table) == model([batch(0, 6000)])


def test_a_failed_writer_can_only_be_aborted(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = create(catalog, "t", **{"write-buffer-size": "16 kb"})
    table.write(batch(0, 6000))
    before = files_under(table)

    def failing(self: compact_task.CompactTask, sections: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(compact_task.CompactTask, "_rewrite_impl", failing)
    writer = table.new_write(parallelism=2)
    with pytest.raises(OSError, match="disk full"):
        writer.write(batch(1, 6000))
        writer.prepare_commit()
    with pytest.raises(LakeopsError, match=r"failed earlier .*call abort"):
        writer.prepare_commit()
    with pytest.raises(LakeopsError, match="failed earlier"):
        writer.write(batch(2))
    writer.abort()
    assert files_under(table) == before


def first_rows(batches: list[pa.Table]) -> dict[int, str]:
    rows: dict[int, str] = {}
    for b in batches:
        for r in b.to_pylist():
            rows.setdefault(r["id"], r["s"])
    return rows


def rows_block(low: int, high: int, tag: str) -> pa.Table:
    ids = list(range(low, high))
    return pa.table({"id": ids, "s": [f"{tag}{i:06d}" * 3 for i in ids]}, schema=SCHEMA)


def test_a_file_moved_up_a_level_then_compacted_again_in_one_write_is_kept(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first flush of a write into an empty first-row table is moved up to the top level
    (Paimon's lookup compaction; nothing above it to look its keys up in); a later flush of
    the same write with the same keys rewrites it. The moved file is the one the commit's
    APPEND adds, so it must stay on disk (it was deleted, and every such write failed with
    MissingCommitFileError)."""
    table = create(
        catalog,
        "t",
        **{
            "merge-engine": "first-row",
            "write-buffer-size": "2 kb",
        },
    )
    inputs: list[pa.Table] = []
    results: list[cadence.CompactResult] = []
    real_apply = cadence.BucketLsm.apply

    def watched(self: cadence.BucketLsm, result: cadence.CompactResult) -> None:
        results.append(result)
        real_apply(self, result)

    monkeypatch.setattr(cadence.BucketLsm, "apply", watched)
    # several flushes: the later ones hold the earlier ones' keys again
    inputs.append(pa.concat_tables([rows_block(5000, 5200, "b"), rows_block(5000, 5200, "c")]))
    table.write(inputs[0])
    moved = {
        f.file_name
        for r in results
        for f in r.after
        if f.file_name in {b.file_name for b in r.before}
    }
    replaced = {f.file_name for r in results for f in r.before if f.level > 0}
    assert moved & replaced  # the path under test ran: a moved file was compacted again
    assert rows_of(table) == first_rows(inputs)
    for snapshot in table.snapshots():  # every file every snapshot references exists
        for entry in table.store.live_entries(snapshot):
            directory = table.context.locations.bucket_path(entry.partition, entry.bucket)
            assert Path(directory, entry.file.file_name).is_file()


def test_a_base_file_moved_up_then_replaced_in_one_write_stays_on_disk(
    catalog: Catalog,
) -> None:
    """The published snapshot references a base file a write's compaction moves up a level and
    a later one rewrites: the file stays on disk (the commit removes it from the table, as it
    removes any replaced file); a file the write's own compaction wrote and a later one
    replaced is deleted at once."""
    table = create(catalog, "t")
    directory = Path(table.root, "bucket-0")
    directory.mkdir(parents=True)
    for name in ("data-base.parquet", "data-mid.parquet", "data-out.parquet"):
        (directory / name).write_bytes(b"x")
    base = _meta("data-base.parquet", 3)
    lsm = cadence.BucketLsm([base], None, table.file_io, table.context.locations, str(directory))
    lsm.apply(cadence.CompactResult([base], [_meta("data-base.parquet", 5)]))  # moved up
    mid = _meta("data-mid.parquet", 4)
    lsm.apply(cadence.CompactResult([], [mid], [str(directory / "data-mid.parquet")]))
    out = _meta("data-out.parquet", 5)
    lsm.apply(
        cadence.CompactResult(
            [_meta("data-base.parquet", 5), mid], [out], [str(directory / "data-out.parquet")]
        )
    )
    assert (directory / "data-base.parquet").is_file()
    assert not (directory / "data-mid.parquet").exists()
    assert list(lsm.before) == [("data-base.parquet", 3)]
    assert list(lsm.after) == [("data-out.parquet", 5)]
    assert [(f.file_name, f.level) for f in lsm.live] == [("data-out.parquet", 5)]


def _meta(name: str, level: int) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=1,
        row_count=1,
        min_key=b"",
        max_key=b"",
        key_stats=SimpleStats(),
        value_stats=SimpleStats(),
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=level,
    )
