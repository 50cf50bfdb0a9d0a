"""Health metrics (:mod:`lakeops.compact.health`) checked against what is measured: space
amplification against the bytes of a really fully compacted copy, the live-key estimate against
a plain count of distinct keys, write amplification against the data files each commit put on
disk (read from the file system, not from lakeops' manifests)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.compact.health import DEFAULT_WINDOW

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids: list[int] | range, seed: int) -> pa.Table:
    """Rows with a 32-character pseudo-random payload (so data, not file overhead, dominates)."""
    rng = np.random.default_rng(seed)
    payload = [bytes(r).hex() for r in rng.integers(0, 256, size=(len(ids), 16), dtype=np.uint8)]
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": payload}, schema=SCHEMA)


def one_bucket(catalog: Catalog, name: str = "db.t") -> Table:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "write-only": "true"},
    )


def test_space_amplification_is_stored_over_fully_merged_bytes(
    catalog: Catalog, warehouse: Path, tmp_path: Path
) -> None:
    table = one_bucket(catalog)
    table.write(batch(range(1000), 1))  # 1000 keys
    table.write(batch(range(1000, 2000), 2))  # 1000 new keys
    table.write(batch(range(1000), 3))  # 1000 upserts of the first 1000
    (b,) = table.health().buckets
    assert b.sorted_runs == 3 and b.rows == 3000
    assert b.live_rows == 2000  # the distinct keys written

    # the merged size, measured: a copy of the warehouse, fully compacted
    copy_dir = tmp_path / "copy"
    shutil.copytree(warehouse, copy_dir)
    copy = Catalog(str(copy_dir)).get_table("db.t")
    copy.compact(full=True)
    (merged,) = copy.splits()
    assert sum(f.row_count for f in merged.files) == 2000
    live_bytes = sum(os.path.getsize(copy_dir / "db.db" / "t" / "bucket-0" / f.file_name)
                     for f in merged.files)  # fmt: skip
    stored_bytes = sum(p.stat().st_size for p in (warehouse / "db.db/t/bucket-0").iterdir())
    assert b.total_bytes == stored_bytes
    truth = stored_bytes / live_bytes
    assert 1.3 < truth < 1.7  # the scenario: 3000 rows stored for 2000 keys
    assert abs(b.space_amplification - truth) <= 0.2 * truth
    assert table.health().space_amplification == pytest.approx(b.space_amplification)


@pytest.mark.parametrize("seed", range(4))
def test_live_rows_estimate_bounds_the_distinct_keys(catalog: Catalog, seed: int) -> None:
    """Random batches (overlapping, disjoint, interleaved key sets, evenly spread): the
    estimate is at least the largest run and at most the distinct keys (up to the rounding of
    spreading a file's rows evenly over its key range)."""
    rng = random.Random(seed)
    table = one_bucket(catalog)
    seen: set[int] = set()
    sizes = []
    for i in range(4):
        start = rng.choice([0, 100, 500, max(seen, default=0) + 1])
        step = rng.choice([1, 2, 3])
        ids = sorted({start + step * k for k in range(rng.randint(50, 300))})
        table.write(batch(ids, seed * 10 + i))
        seen.update(ids)
        sizes.append(len(ids))
    (b,) = table.health().buckets
    assert max(sizes) <= b.live_rows <= len(seen) * 1.05
    assert b.space_amplification >= 0.95


def test_partly_overlapping_ranges_are_spread_evenly(catalog: Catalog) -> None:
    """Each write: 400 keys, 100 beyond the last one's; 900 distinct keys of 2400 rows."""
    table = one_bucket(catalog)
    for i in range(6):
        table.write(batch(range(i * 100, i * 100 + 400), i))
    (b,) = table.health().buckets
    assert b.rows == 2400
    assert abs(b.live_rows - 900) <= 10
    assert b.space_amplification == pytest.approx(2400 / 900, rel=0.1)


def test_text_keys_overlapping_count_the_largest_run(catalog: Catalog) -> None:
    """Where no length can be measured (string keys) overlapping runs count as upserts."""
    table = catalog.create_table(
        "db.s", schema=pa.schema([("k", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "1", "write-only": "true"},
    )  # fmt: skip
    table.write(pa.table({"k": [f"a{i:04d}" for i in range(300)], "v": range(300)}))
    table.write(pa.table({"k": [f"a{i:04d}" for i in range(0, 300, 3)], "v": range(100)}))
    table.write(pa.table({"k": [f"b{i:04d}" for i in range(200)], "v": range(200)}))
    (b,) = table.health().buckets
    assert b.rows == 600 and b.live_rows == 500  # exact: upserts, then keys beyond


def test_disjoint_runs_are_not_amplified(catalog: Catalog) -> None:
    table = one_bucket(catalog)
    for k in range(3):
        table.write(batch(range(k * 500, (k + 1) * 500), k))
    (b,) = table.health().buckets
    assert b.live_rows == b.rows == 1500
    assert b.space_amplification == pytest.approx(1.0)


def _data_files(table_dir: Path) -> dict[str, int]:
    if not (table_dir / "bucket-0").is_dir():
        return {}
    return {
        p.name: p.stat().st_size
        for p in (table_dir / "bucket-0").iterdir()
        if p.name.startswith("data-")
    }


def test_write_amplification_survives_expiry(catalog: Catalog, warehouse: Path) -> None:
    """Ingest, full compaction, ingest, full compaction, ingest; bytes each commit wrote are
    read from the file system. The window that starts after a compaction gives the same figure
    before and after the snapshots before it expire."""
    table = one_bucket(catalog)
    table_dir = warehouse / "db.db" / "t"
    written: list[tuple[str, int]] = []  # (kind, bytes new on disk) per commit

    def commit(action: str) -> None:
        before = _data_files(table_dir)
        if action == "compact":
            table.compact(full=True)
        else:
            n = len(written)
            table.write(batch(range(n * 50, n * 50 + 200), n))
        new = sum(size for name, size in _data_files(table_dir).items() if name not in before)
        written.append((action, new))

    for action in ["write"] * 4 + ["compact"] + ["write"] * 4 + ["compact"] + ["write"] * 2:
        commit(action)
    assert [s.commit_kind for s in table.snapshots()].count("COMPACT") == 2

    def model(first: int) -> float:
        """Compacted ÷ ingested bytes of snapshots ``first``.. (1-based ids)."""
        window = written[first - 1 :]
        compacted = sum(n for kind, n in window if kind == "compact")
        return compacted / sum(n for kind, n in window if kind == "write")

    everything = table.health()
    assert (everything.window_first_snapshot, everything.window_last_snapshot) == (1, 12)
    assert everything.write_amplification == pytest.approx(model(1))
    # the last 8 snapshots start at the first compaction (5): its input was ingested before
    recent = table.health(recent_snapshots=8)
    assert (recent.window_first_snapshot, recent.window_last_snapshot) == (6, 12)
    assert recent.write_amplification == pytest.approx(model(6))

    table.expire_snapshots(retain_min=1, retain_max=8)
    assert table.store.earliest_snapshot_id() == 5
    after = table.health()
    assert (after.window_first_snapshot, after.window_last_snapshot) == (6, 12)
    assert after.write_amplification == pytest.approx(recent.write_amplification)
    assert after.to_dict()["write_amplification"] == recent.to_dict()["write_amplification"]


def test_write_amplification_without_ingest_is_unknown(catalog: Catalog) -> None:
    table = one_bucket(catalog)
    assert table.health().write_amplification is None  # no snapshot
    table.write(batch(range(10), 0))
    table.write(batch(range(10), 1))
    table.compact(full=True)
    # the window of the last snapshot is only the compaction, whose input came before it
    h = table.health(recent_snapshots=1)
    assert h.write_amplification is None and h.window_first_snapshot is None
    assert table.health(recent_snapshots=DEFAULT_WINDOW).write_amplification is not None
