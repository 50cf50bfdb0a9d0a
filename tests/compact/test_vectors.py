"""Deletion-vector primary-key tables written and compacted by lakeops: the vectors mark
exactly the superseded rows, judged against a plain model built from the data files and the
index files' bytes (decoded here with struct and pyroaring, not by lakeops)."""

from __future__ import annotations

import datetime as dt
import random
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyroaring
import pytest

from lakeops import Catalog, Table, UnsupportedFeatureError
from lakeops.io.file_io import FileIO

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
BASE = {"bucket": "2", "rowkind.field": "op", "deletion-vectors.enabled": "true"}


def _table(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={**BASE, **options}
    )


def _batches(seed: int, commits: int, keys: int = 60, deletes: bool = True) -> list[pa.Table]:
    rng = random.Random(seed)
    out = []
    for _ in range(commits):
        rows = []
        for _ in range(rng.randint(10, 40)):
            op = rng.choice(["+I", "+U", "-D"] if deletes else ["+I", "+U"])
            rows.append({"id": rng.randrange(keys), "v": rng.randrange(1, 100), "op": op})
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out


def _dedup_model(batches: list[pa.Table]) -> dict[int, int]:
    state: dict[int, int] = {}
    for b in batches:
        for r in b.to_pylist():
            if r["op"] == "-D":
                state.pop(r["id"], None)
            else:
                state[r["id"]] = r["v"]
    return state


def _sum_model(batches: list[pa.Table]) -> dict[int, int]:
    state: dict[int, int] = {}
    for b in batches:
        for r in b.to_pylist():
            state[r["id"]] = state.get(r["id"], 0) + r["v"]
    return state


def _vectors(root: Path, table: Table) -> dict[str, set[int]]:
    """Deleted positions by data file name, parsed from the index files' bytes (Paimon's
    DeletionVectorsIndexFile layout: version byte, then per vector length, magic, bitmap,
    CRC)."""
    out: dict[str, set[int]] = {}
    for e in table.store.index_entries(table.latest_snapshot()):
        if e.file.index_type != "DELETION_VECTORS":
            continue
        data = (root / "index" / e.file.file_name).read_bytes()
        assert data[0] == 1
        for r in dict(e.file.extra)["_DELETIONS_VECTORS_RANGES"]:
            (n,) = struct.unpack_from(">i", data, r["f1"])
            body = data[r["f1"] + 4 : r["f1"] + 4 + n]
            (crc,) = struct.unpack_from(">I", data, r["f1"] + 4 + n)
            assert crc == zlib.crc32(body)
            if struct.unpack_from(">i", body)[0] == 1581511376:
                assert r["f2"] == n
                bitmap = pyroaring.BitMap.deserialize(body[4:])
            else:
                assert struct.unpack_from("<i", body)[0] == 1681511377
                assert r["f2"] == n + 8 and struct.unpack_from("<q", body, 4)[0] == 1
                bitmap = pyroaring.BitMap.deserialize(body[16:])
            assert r["f0"] not in out
            out[r["f0"]] = set(bitmap)
            assert r["_CARDINALITY"] == len(bitmap)
    return out


def _check_invariant(root: Path, table: Table, model: dict[int, int]) -> dict[int, int]:
    """The plain model of a deletion-vector table: in levels >= 1, a position is deleted
    exactly when a record of the same key with a higher sequence number lies in levels >= 1,
    or the key is deleted (not in ``model``); reading the remaining rows without merging gives
    one row per key. Returns them."""
    vectors = _vectors(root, table)
    rows = []
    live_names = set()
    for e in table.store.live_entries(table.latest_snapshot()):
        if e.file.level == 0:
            continue
        live_names.add(e.file.file_name)
        bucket = root / f"bucket-{e.bucket}" / e.file.file_name
        t = pq.read_table(bucket).to_pylist()
        assert len(t) == e.file.row_count
        rows += [(e.file.file_name, pos, r) for pos, r in enumerate(t)]
    assert set(vectors) <= live_names  # vectors of rewritten files are gone
    newest: dict[int, int] = {}
    for _, _, r in rows:
        k = r["_KEY_id"]
        newest[k] = max(newest.get(k, -1), r["_SEQUENCE_NUMBER"])
    expected: dict[str, set[int]] = {}
    for name, pos, r in rows:
        if r["_SEQUENCE_NUMBER"] < newest[r["_KEY_id"]] or r["_KEY_id"] not in model:
            expected.setdefault(name, set()).add(pos)
    assert {k: v for k, v in vectors.items() if v} == expected
    live = [r for name, pos, r in rows if pos not in vectors.get(name, set())]
    assert all(r["_VALUE_KIND"] in (0, 2) for r in live)  # retractions dropped
    assert len({r["_KEY_id"] for r in live}) == len(live)
    return {r["_KEY_id"]: r["v"] for r in live}


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.bitmap64": "true"}])
def test_writes_and_compactions_mark_exactly_the_superseded_rows(
    catalog: Catalog, warehouse: Path, options: dict[str, str]
) -> None:
    table = _table(catalog, **options)
    root = warehouse / "db.db" / "t"
    batches = _batches(5, 10)
    for i, b in enumerate(batches):
        snap = table.write(b)
        assert snap is not None and snap.commit_kind == "COMPACT"  # level 0 lifted at commit
        assert _check_invariant(root, table, _dedup_model(batches[: i + 1])) == _dedup_model(
            batches[: i + 1]
        )
        if i == 6:
            table.compact(full=True)
            assert _check_invariant(root, table, _dedup_model(batches[: i + 1])) == _dedup_model(
                batches[: i + 1]
            )
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == _dedup_model(batches)
    assert any(_vectors(root, table).values())  # the test exercised marking


def test_aggregation_merges_the_row_it_marks(catalog: Catalog, warehouse: Path) -> None:
    table = _table(catalog, **{"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    root = warehouse / "db.db" / "t"
    batches = _batches(9, 8, keys=30, deletes=False)
    for i, b in enumerate(batches):
        table.write(b)
        assert _check_invariant(root, table, _sum_model(batches[: i + 1])) == _sum_model(
            batches[: i + 1]
        )
    table.compact(full=True)
    assert _check_invariant(root, table, _sum_model(batches)) == _sum_model(batches)
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == _sum_model(batches)


def test_partial_update_keeps_columns_of_the_marked_row(catalog: Catalog, warehouse: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.string())])
    table = catalog.create_table(
        "db.p",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "partial-update",
            "deletion-vectors.enabled": "true",
        },
    )
    table.write(pa.table({"id": [1, 2], "a": ["a1", "a2"], "b": [None, "b2"]}, schema=schema))
    table.write(pa.table({"id": [1], "a": [None], "b": ["b1"]}, schema=schema))
    table.write(pa.table({"id": [2, 3], "a": ["x2", "a3"], "b": [None, None]}, schema=schema))
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "a": "a1", "b": "b1"},
        {"id": 2, "a": "x2", "b": "b2"},
        {"id": 3, "a": "a3", "b": None},
    ]


@pytest.mark.parametrize(
    "options",
    [{"merge-engine": "first-row"}, {"changelog-producer": "full-compaction"}],
)
def test_combinations_paimon_forbids_are_refused(catalog: Catalog, options: dict[str, str]) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors\.enabled"):
        catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["id"], options={**BASE, **options}
        )
    assert not catalog.table_exists("db.t")


def test_a_kill_before_the_compaction_publishes_leaves_the_table_unchanged(
    catalog: Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog)
    root = warehouse / "db.db" / "t"
    batches = _batches(3, 4)
    for b in batches[:3]:
        table.write(b)
    table.new_write()  # nothing pending
    before_id = table.store.latest_snapshot_id()
    before_index = sorted(p.name for p in (root / "index").iterdir())
    write = table.new_write()
    write.write(batches[3])
    messages = write.prepare_commit()
    original = FileIO.publish_exclusive
    published: list[str] = []

    def kill(self: FileIO, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path and published:
            raise KeyboardInterrupt("killed before the compaction's publish")
        ok = original(self, path, data)
        if "/snapshot/snapshot-" in path:
            published.append(path)
        return ok

    monkeypatch.setattr(FileIO, "publish_exclusive", kill)
    with pytest.raises(KeyboardInterrupt):
        table.commit(messages)
    monkeypatch.undo()
    reopened = catalog.get_table("db.t")
    # the APPEND landed, its level-0 compaction did not: readers see the table as before it
    assert reopened.store.latest_snapshot_id() == before_id + 1
    assert reopened.latest_snapshot().commit_kind == "APPEND"
    assert _check_invariant(root, reopened, _dedup_model(batches[:3])) == _dedup_model(batches[:3])
    assert {r["id"]: r["v"] for r in reopened.read().to_pylist()} == _dedup_model(batches[:3])
    reopened.flush_level0()  # the next flush lifts the data
    assert _check_invariant(root, reopened, _dedup_model(batches)) == _dedup_model(batches)
    assert before_index  # the table had index files


def test_expiry_and_orphan_cleanup_keep_the_live_index_files(
    catalog: Catalog, warehouse: Path
) -> None:
    table = _table(catalog)
    root = warehouse / "db.db" / "t"
    batches = _batches(11, 6)
    for b in batches:
        table.write(b)
    table.expire_snapshots(retain_min=1, retain_max=1)
    table.remove_orphan_files(older_than=dt.timedelta(seconds=-1), force=True)
    live = {e.file.file_name for e in table.store.index_entries(table.latest_snapshot())}
    assert live and {p.name for p in (root / "index").iterdir()} == live
    assert _check_invariant(root, table, _dedup_model(batches)) == _dedup_model(batches)
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == _dedup_model(batches)


def test_merge_on_read_shows_level_zero(catalog: Catalog) -> None:
    """``write-only`` leaves writes in level 0: a deletion-vector read skips it, unless
    ``deletion-vectors.merge-on-read`` (then level 0 is merged in)."""
    batches = _batches(4, 2)
    mor = _table(catalog, **{"write-only": "true", "deletion-vectors.merge-on-read": "true"})
    plain = _table_without(catalog)
    for table in (mor, plain):
        table.write(batches[0])
        table.flush_level0()
        table.write(batches[1])
    assert {r["id"]: r["v"] for r in mor.read().to_pylist()} == _dedup_model(batches)
    assert {r["id"]: r["v"] for r in plain.read().to_pylist()} == _dedup_model(batches[:1])


def _table_without(catalog: Catalog) -> Table:
    options = {**BASE, "write-only": "true"}
    return catalog.create_table("db.u", schema=SCHEMA, primary_keys=["id"], options=options)


def test_distributed_jobs_carry_the_bucket_vectors(catalog: Catalog, warehouse: Path) -> None:
    """Spark's compaction ships the planned jobs to executors (pickled) and commits their
    messages: the jobs carry each bucket's vectors, so the executors mark and replace them."""
    import pickle

    from lakeops.compact.planner import compact_jobs, plan_buckets

    table = _table(catalog, **{"write-only": "true"})
    root = warehouse / "db.db" / "t"
    big = [{"id": k, "v": k, "op": "+I"} for k in range(3000)]
    batches = [pa.Table.from_pylist(big, schema=SCHEMA), *_batches(21, 2)]
    table.write(batches[0])
    table.flush_level0()
    for b in batches[1:]:
        table.write(b)
    jobs = pickle.loads(pickle.dumps(plan_buckets(table.store, table.schema)))
    assert any(j.vectors for j in jobs) or not any(_vectors(root, table).values())
    plan = compact_jobs(table.context, jobs, force_level0=True)
    table.commit_compaction(plan.messages, written=plan.written)
    assert _check_invariant(root, table, _dedup_model(batches)) == _dedup_model(batches)
    assert any(_vectors(root, table).values())


def test_a_retraction_free_level0_file_is_upgraded_and_still_marks(
    catalog: Catalog, warehouse: Path
) -> None:
    """Deduplicate without sequence fields: Paimon upgrades a level-0 file without deletes
    instead of rewriting it; its keys' older rows are marked all the same."""
    table = _table(catalog, bucket="1")
    root = warehouse / "db.db" / "t"
    base = pa.Table.from_pylist([{"id": k, "v": k, "op": "+I"} for k in range(3000)], SCHEMA)
    update = pa.Table.from_pylist([{"id": k, "v": -k, "op": "+U"} for k in (5, 70, 900)], SCHEMA)
    table.write(base)
    table.write(update)
    append = table.store.snapshot(table.latest_snapshot().id - 1)
    (appended,) = [e.file for e in table.store.delta_entries(append)]
    live = {e.file.file_name: e.file for e in table.store.live_entries(table.latest_snapshot())}
    assert appended.file_name in live and live[appended.file_name].level > 0  # upgraded
    assert _vectors(root, table) == {
        next(n for n, f in live.items() if f.row_count == 3000): {5, 70, 900}
    }
    model = _dedup_model([base, update])
    assert _check_invariant(root, table, model) == model


def test_force_compact_on_commit_compacts_fully(catalog: Catalog, warehouse: Path) -> None:
    """``commit.force-compact``: the compaction after each commit is a full one (one sorted
    run per bucket, no vector left: every file was rewritten)."""
    table = _table(catalog, **{"commit.force-compact": "true"})
    root = warehouse / "db.db" / "t"
    batches = _batches(8, 3)
    for b in batches:
        table.write(b)
    assert all(b.sorted_runs <= 1 for b in table.health().buckets)
    assert not any(_vectors(root, table).values())
    assert _check_invariant(root, table, _dedup_model(batches)) == _dedup_model(batches)
