"""Compaction end to end: same reads before and after, levels, upgrades, deletes, expiry,
conflicts, in-writer compaction and lookups."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, CommitConflictError, Table

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("v", pa.int64()),
        ("s", pa.string()),
        ("op", pa.string()),
    ]
)


def _random_commits(table: Table, commits: int, seed: int = 7, keys: int = 400) -> None:
    rng = random.Random(seed)
    for c in range(commits):
        rows = []
        for _ in range(rng.randint(20, 120)):
            k = rng.randrange(keys)
            op = rng.choice(["+I", "+U", "+U", "-D"])
            rows.append(
                {
                    "dt": f"d{k % 2}",
                    "id": k,
                    "v": rng.randrange(1000),
                    "s": f"s{c}-{k}" * rng.randint(1, 3),
                    "op": op,
                }
            )
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))


def _state(table: Table) -> list[dict]:
    return sorted(table.read().to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _files(table: Table) -> list:
    return [e.file for e in table.store.live_entries(table.latest_snapshot())]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op", "write-only": "true"},
    )
    _random_commits(t, 20)
    return t


def test_universal_then_full_compaction_keep_the_rows(table: Table) -> None:
    before = _state(table)
    assert all(f.level == 0 for f in _files(table))
    snapshot = table.compact()
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert _state(table) == before
    _random_commits(table, 3, seed=99)  # fresh level-0 runs on top of the compacted levels
    before = _state(table)
    assert any(f.level == 0 for f in _files(table)) and any(f.level > 0 for f in _files(table))
    snapshot = table.compact(full=True)
    assert snapshot is not None
    assert _state(table) == before
    files = _files(table)
    assert {f.level for f in files} == {5}  # everything at the max level
    assert all(f.delete_row_count == 0 for f in files)  # -D dropped at the highest level
    assert table.compact(full=True) is None  # one max-level run: nothing to do
    assert table.read(snapshot_id=snapshot.id - 2) is not None


def test_compaction_of_one_partition(table: Table) -> None:
    before = _state(table)
    table.compact(full=True, partitions=[{"dt": "d1"}])
    levels = {
        (e.partition, f.level)
        for e in table.store.live_entries(table.latest_snapshot())
        for f in [e.file]
    }
    assert {lv for _, lv in levels} == {0, 5}
    assert _state(table) == before


def test_large_non_overlapping_files_are_upgraded_not_rewritten(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.up",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={
            "bucket": "1",
            "rowkind.field": "op",
            "write-only": "true",
            "target-file-size": "1 kb",
        },
    )
    rows = [{"dt": "d", "id": i, "v": i, "s": "x" * 50, "op": "+I"} for i in range(400)]
    t.write(pa.Table.from_pylist(rows, schema=SCHEMA))  # one L0 run, many files over 1 kb
    names = {f.file_name for f in _files(t)}
    t.compact(full=True)
    after = _files(t)
    assert {f.file_name for f in after} == names  # same bytes, new level
    assert {f.level for f in after} == {5}


def test_small_files_are_rewritten_together(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.small",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "rowkind.field": "op", "write-only": "true"},
    )
    for i in range(6):
        t.write(
            pa.Table.from_pylist(
                [{"dt": "d", "id": i, "v": i, "s": "x", "op": "+I"}], schema=SCHEMA
            )
        )
    t.compact(full=True)
    (only,) = _files(t)
    assert only.level == 5 and only.row_count == 6


def test_record_level_expiry(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    now = int(time.time())
    t = catalog.create_table(
        "db.ttl",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "write-only": "true",
            "record-level.expire-time": "1 h",
            "record-level.time-field": "ts",
        },
    )
    t.write(pa.table({"id": [1, 2, 3], "ts": [now, now - 7200, None]}))
    t.write(pa.table({"id": [4], "ts": [now - 10]}))
    t.compact(full=True)
    assert sorted(t.read().column("id").to_pylist()) == [1, 3, 4]


def test_compaction_conflict_fails_cleanly(table: Table) -> None:
    from lakeops.compact.planner import plan_compaction

    before = _state(table)
    plan = plan_compaction(table.context, full=True)
    assert table.compact(full=True) is not None  # another job wins first
    from lakeops.commit.committer import Committer

    with pytest.raises(CommitConflictError):
        Committer(table.context).commit(plan.messages)
    for path in plan.written:
        table.file_io.delete(path)
    assert _state(table) == before
    # appends still go through
    table.write(
        pa.Table.from_pylist(
            [{"dt": "d0", "id": 10_000, "v": 1, "s": "n", "op": "+I"}], schema=SCHEMA
        )
    )
    assert len(_state(table)) == len(before) + 1


def test_in_writer_compaction_bounds_sorted_runs(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.w",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    _random_commits(t, 30, seed=3)
    health = t.health()
    assert health.max_sorted_runs <= 8  # num-sorted-run.stop-trigger
    assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
    assert health.write_amplification > 0
    reference = catalog.create_table(
        "db.ref",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op", "write-only": "true"},
    )
    _random_commits(reference, 30, seed=3)
    assert _state(t) == _state(reference)


def test_lookup_matches_read(table: Table) -> None:
    rng = random.Random(1)
    ids = sorted(rng.sample(range(400), 40))
    keys = pa.table({"dt": [f"d{k % 2}" for k in ids], "id": ids})
    expected = [r for r in _state(table) if r["id"] in set(ids)]
    got = sorted(table.lookup(keys).to_pylist(), key=lambda r: (r["dt"], r["id"]))
    assert got == expected
    table.compact(full=True)
    got = sorted(table.lookup(keys, columns=["id", "v"]).to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": r["id"], "v": r["v"]} for r in sorted(expected, key=lambda r: r["id"])]


def test_lookup_reads_only_files_holding_the_keys(catalog: Catalog, monkeypatch) -> None:
    from lakeops.kv.reader import KeyValueReader

    t = catalog.create_table(
        "db.lk",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "rowkind.field": "op", "write-only": "true"},
    )
    for c in range(5):  # five files with disjoint key ranges
        rows = [{"dt": "d", "id": c * 100 + i, "v": i, "s": "x", "op": "+I"} for i in range(50)]
        t.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    opened: set[str] = set()
    read_units, read_whole = KeyValueReader.read_unit_columns, KeyValueReader.read

    def units(self, path, f, *args, **kwargs):
        opened.add(f.file_name)
        return read_units(self, path, f, *args, **kwargs)

    def whole(self, directory, f, *args, **kwargs):  # a local lookup file is built from it
        opened.add(f.file_name)
        return read_whole(self, directory, f, *args, **kwargs)

    monkeypatch.setattr(KeyValueReader, "read_unit_columns", units)
    monkeypatch.setattr(KeyValueReader, "read", whole)
    assert t.lookup(pa.table({"dt": ["d"], "id": [205]})).column("v").to_pylist() == [5]
    assert len(opened) == 1


def test_health_reports_levels(table: Table) -> None:
    h = table.health()
    assert h.snapshot_id == table.latest_snapshot().id
    assert len(h.buckets) == 8  # 2 partitions x 4 buckets
    assert all(b.level0_files == b.sorted_runs for b in h.buckets)
    table.compact(full=True)
    h = table.health()
    assert all(b.sorted_runs == 1 and b.level0_files == 0 for b in h.buckets)
    assert all(abs(b.space_amplification - 1.0) < 1e-9 for b in h.buckets)
    assert h.to_dict()["buckets"][0]["files_by_level"] == {5: 1}


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_first_row_levels_above_zero_hold_each_key_once(catalog: Catalog, producer: str) -> None:
    """A first-row table's compaction into a level below the files it leaves out drops the
    keys those files hold (Paimon's lookup; Java Paimon and pypaimon read the levels above 0
    of a first-row table without merging them): after random writes that flush many times,
    every key is in one file above level 0, holding the key's first row (a plain model)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("s", pa.string())])
    table = catalog.create_table(
        "db.fr",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "first-row",
            "changelog-producer": producer,
            "write-buffer-size": "4 kb",
            "num-sorted-run.compaction-trigger": "3",
        },
    )
    rng = random.Random(11)
    first: dict[int, str] = {}
    levels_seen: set[int] = set()
    for commit in range(6):
        ids = [rng.randrange(2000) for _ in range(rng.randint(200, 600))]
        rows = [{"id": k, "s": f"c{commit}-{i}-{k}"} for i, k in enumerate(ids)]
        for r in rows:
            first.setdefault(r["id"], r["s"])
        table.write(pa.Table.from_pylist(rows, schema=schema))
        levels_seen |= {f.level for f in _files(table) if f.level > 0}
        held = _keys_above_level0(table)
        assert len(held) == len(set(held))
        assert {r["id"]: r["s"] for r in table.read().to_pylist()} == {k: first[k] for k in held}
    assert len(levels_seen) > 1  # compactions into levels below others ran


def _keys_above_level0(table: Table) -> list[int]:
    """The key of every record in the latest snapshot's files above level 0."""
    import pyarrow.parquet as pq

    keys: list[int] = []
    for entry in table.store.live_entries(table.latest_snapshot()):
        if entry.file.level == 0:
            continue
        directory = table.context.locations.bucket_path(entry.partition, entry.bucket)
        keys += pq.read_table(f"{directory}/{entry.file.file_name}").column("_KEY_id").to_pylist()
    return keys


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_a_compaction_whose_files_another_job_compacted_and_expired_is_a_conflict(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """While a compaction runs, another job compacts the same files and expires the snapshots
    that named them (every Paimon writer expires after its commit): the compaction finds its
    input files gone. That is a lost race, not corruption — a ``CommitConflictError`` (was
    ``MissingDataFileError``, whose advice, restore or roll back, would have discarded the
    other job's commits), nothing committed, none of its files left; a compaction after it
    succeeds. A file missing while every snapshot naming it lives is still corruption."""
    import lakeops.compact.append as append_compaction
    import lakeops.compact.planner as planner
    from lakeops.errors import MissingDataFileError

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    keys = ["id"] if kind == "primary-key" else []
    options = {"bucket": "1", "write-only": "true"} if keys else {"bucket": "-1"}
    table = catalog.create_table("db.t", schema=schema, primary_keys=keys, options=options)
    for i in range(5):
        table.write(pa.table({"id": range(i * 50, i * 50 + 100), "v": [i] * 100}, schema=schema))
    root = table.store.root
    module = planner if keys else append_compaction
    real = module.run_jobs
    raced: list[bool] = []

    def overtaken(*args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(True)
            other = catalog.get_table("db.t")
            other.write(pa.table({"id": [10_000], "v": [1]}, schema=schema))
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "run_jobs", overtaken)
    with pytest.raises(CommitConflictError, match="run the compaction again"):
        table.compact(full=True)
    monkeypatch.undo()
    latest = catalog.get_table("db.t")
    on_disk = {p.name for p in Path(str(root).removeprefix("file://")).glob("bucket-*/*")}
    assert on_disk == {f.file_name for f in _files(latest)}  # none of its files left
    rows = latest.read().num_rows
    assert rows == (301 if keys else 501)
    latest.write(pa.table({"id": [20_000], "v": [2]}, schema=schema))
    assert latest.compact(full=True) is not None
    assert latest.read().num_rows == rows + 1
    # a file missing while its snapshot lives is corruption, as before
    latest.write(pa.table({"id": [30_000], "v": [3]}, schema=schema))
    victim = min(_files(latest), key=lambda f: f.row_count)
    latest.file_io.delete(f"{root}/bucket-0/{victim.file_name}")
    with pytest.raises(MissingDataFileError):
        catalog.get_table("db.t").compact(full=True)
