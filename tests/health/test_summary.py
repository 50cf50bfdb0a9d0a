"""The per-table figures of the index, checked against a plain model of the writes made and
against the files on disk and the snapshot files themselves (read as JSON, not by lakeops)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import lakeops.health.summary as hs
from lakeops import Catalog
from lakeops.health.summary import run_state, summarize_table, summarize_tables

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(dts: list[str], n: int, tag: str = "v") -> pa.Table:
    return pa.table(
        {
            "dt": [d for d in dts for _ in range(n)],
            "id": list(range(n)) * len(dts),
            "v": [tag * 16] * (n * len(dts)),
        },
        schema=SCHEMA,
    )


def disk_data_files(root: Path) -> list[Path]:
    """Every data file under the table's partition/bucket directories."""
    return [p for p in root.rglob("bucket-*/*") if p.is_file()]


def snapshot_json(root: Path, snapshot_id: int) -> dict[str, object]:
    return dict(json.loads((root / "snapshot" / f"snapshot-{snapshot_id}").read_text()))


@pytest.mark.parametrize(
    ("runs", "trigger", "state"),
    [(1, 5, "ok"), (3, 5, "ok"), (4, 5, "near"), (5, 5, "over"), (9, 5, "over"),
     (7, 10, "ok"), (8, 10, "near"), (1, 1, "over"), (1, 2, "ok"), (2, 2, "over"),
     (1, 3, "ok"), (2, 3, "near"), (2, 4, "ok"), (3, 4, "near")],
)  # fmt: skip
def test_run_state(runs: int, trigger: int, state: str) -> None:
    assert run_state(runs, trigger) == state


def test_primary_key_table_figures_follow_the_writes(catalog: Catalog, warehouse: Path) -> None:
    """One bucket per partition: every write is one level-0 file (one sorted run) in each
    partition it touches, so the model of runs and files is the count of writes per partition;
    the bytes are the data files on disk (nothing was compacted or expired)."""
    table = catalog.create_table(
        "db.pk",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "write-only": "true"},
    )
    writes = [["a", "b"], ["a"], ["a", "c"], ["a"], ["b"], ["a"], ["a"]]
    started = time.time()
    for dts in writes:
        table.write(rows(dts, 30))
    model_runs = {d: sum(d in w for w in writes) for d in "abc"}
    root = warehouse / "db.db" / "pk"
    s = summarize_table("c", "db.pk", table)
    assert s.primary_key and s.error is None
    assert s.snapshot_id == len(writes)
    assert s.snapshot_millis == snapshot_json(root, len(writes))["timeMillis"]
    assert s.max_sorted_runs == max(model_runs.values()) == 6
    assert (s.trigger, s.stop_trigger, s.state) == (5, 8, "over")
    assert s.buckets == 3
    assert s.live_files == sum(len(w) for w in writes) == len(disk_data_files(root))
    assert s.total_bytes == sum(p.stat().st_size for p in disk_data_files(root))
    assert s.oldest_level0_age_s is not None
    assert 0 <= s.oldest_level0_age_s <= time.time() - started + 1
    assert s.last_compaction_millis is None and s.history_from_first
    assert s.compaction_search_complete and s.compaction_searched == len(writes)
    # every partition holds the same 30 keys rewritten: the merged size is one write's
    assert s.space_amplification is not None
    assert s.space_amplification == pytest.approx(s.live_files / 3, rel=0.1)

    table.compact(full=True, partitions=[{"dt": "a"}])
    compact_id = len(writes) + 1
    table.write(rows(["b"], 30))
    after = summarize_table("c", "db.pk", table)
    assert after.last_compaction_snapshot == compact_id
    assert after.last_compaction_millis == snapshot_json(root, compact_id)["timeMillis"]
    assert after.max_sorted_runs == model_runs["b"] + 1 == 3
    assert after.state == "ok"


def test_last_compaction_lookback_is_bounded(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table(
        "db.pk", schema=SCHEMA, primary_keys=["dt", "id"], options={"bucket": "1"}
    )
    table.write(rows(["a"], 5))
    table.compact(full=True)
    for i in range(3):
        table.write(rows(["a"], 5, str(i)))
    monkeypatch.setattr(hs, "COMPACTION_LOOKBACK", 2)
    s = summarize_table("c", "db.pk", table)
    assert s.last_compaction_millis is None
    assert (s.compaction_searched, s.compaction_search_complete) == (2, False)
    monkeypatch.setattr(hs, "COMPACTION_LOOKBACK", 4)
    assert summarize_table("c", "db.pk", table).last_compaction_snapshot == 2


def test_triggers_come_from_the_table_options(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.pk",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        options={
            "bucket": "1",
            "write-only": "true",
            "num-sorted-run.compaction-trigger": "3",
            "num-sorted-run.stop-trigger": "6",
        },
    )
    for i in range(2):
        table.write(rows(["a"], 5, str(i)))
    s = summarize_table("c", "db.pk", table)
    assert (s.max_sorted_runs, s.trigger, s.stop_trigger, s.state) == (2, 3, 6, "near")


def test_append_table_figures(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.log", schema=SCHEMA, partition_keys=["dt"])
    for dts in (["a", "b"], ["a"], ["c"]):
        table.write(rows(dts, 20))
    root = warehouse / "db.db" / "log"
    s = summarize_table("c", "db.log", table)
    assert not s.primary_key and s.error is None
    assert s.snapshot_id == 3
    assert s.live_files == len(disk_data_files(root)) == 4
    assert s.total_bytes == sum(p.stat().st_size for p in disk_data_files(root))
    assert s.max_sorted_runs is None and s.state is None and s.space_amplification is None
    assert s.oldest_level0_age_s is None


def test_empty_table(catalog: Catalog) -> None:
    table = catalog.create_table("db.e", schema=SCHEMA, primary_keys=["id"])
    s = summarize_table("c", "db.e", table)
    assert s.snapshot_id is None and s.live_files == 0 and s.max_sorted_runs is None


def test_many_tables_in_parallel_in_order_and_one_broken(catalog: Catalog, warehouse: Path) -> None:
    """The tables are read at once (every opener waits at a barrier that only releases when
    all have started), the results keep the given order, and a table whose manifest is gone
    gets an error line while the others are summarised."""
    names = [f"t{i}" for i in range(6)]
    for i, name in enumerate(names):
        t = catalog.create_table(
            f"db.{name}",
            schema=SCHEMA,
            primary_keys=["dt", "id"],
            options={"bucket": "1", "write-only": "true"},
        )
        for j in range(i + 1):
            t.write(rows(["a"], 5, str(j)))
    for manifest in (warehouse / "db.db" / "t3" / "manifest").glob("manifest-*"):
        if not manifest.name.startswith("manifest-list"):
            manifest.unlink()
    barrier = threading.Barrier(len(names), timeout=30)

    def opener(name: str) -> object:
        def open_table() -> object:
            barrier.wait()
            return catalog.get_table(f"db.{name}")

        return open_table

    got = summarize_tables([("c", f"db.{n}", opener(n)) for n in names], threads=len(names))
    assert [s.identifier for s in got] == [f"db.{n}" for n in names]
    assert got[3].error is not None and got[3].snapshot_id is None
    assert [s.max_sorted_runs for i, s in enumerate(got) if i != 3] == [1, 2, 3, 5, 6]
