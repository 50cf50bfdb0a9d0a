"""Distributed compaction (lakeops.spark.compaction): the result against a plain model and
pypaimon, a failing task, and how buckets are dealt into tasks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeops.spark as ls
from lakeops import Catalog, Table
from lakeops.compact.planner import BucketJob
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.spark.compaction import deal_tasks

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())]
)


def _table(catalog: Catalog, name: str) -> Table:
    """3 partitions x 4 buckets, written 4 times without compaction: every bucket holds 4
    overlapping sorted runs; returns the table and the model of its rows."""
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op", "write-only": "true"},
    )


def _fill(t: Table) -> dict[tuple[str, int], tuple[Any, ...]]:
    model: dict[tuple[str, int], tuple[Any, ...]] = {}
    rng = random.Random(17)
    for _ in range(4):
        rows = [
            (f"d{i % 3}", rng.randrange(200), rng.randrange(1000), rng.choice(["+I", "+U", "-D"]))
            for i in range(600)
        ]
        t.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows]))
        for r in rows:  # deduplicate: the last row of a key wins, a delete removes it
            if r[3] == "-D":
                model.pop((r[0], r[1]), None)
            else:
                model[(r[0], r[1])] = r
    return model


def _files(t: Table) -> set[str]:
    return {str(p.relative_to(t.root)) for p in Path(t.root).rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.interop
def test_result_reads_as_the_model_and_as_pypaimon_reads_it(spark: Any, catalog: Catalog) -> None:
    from tests.interop.oracle import oracle_read

    t = _table(catalog, "db.c")
    model = _fill(t)
    snapshot = ls.compact(spark, t.root, full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    live = t.store.live_entries(snapshot)
    assert {e.file.level for e in live} == {5}
    assert len({(e.partition, e.bucket) for e in live}) == 12
    expected = sorted(model.values())
    assert sorted(tuple(r.values()) for r in t.read().to_pylist()) == expected
    oracle = oracle_read(Path(t.root).parents[1], "db.c")
    assert sorted(tuple(r[n] for n in SCHEMA.names) for r in oracle.to_pylist()) == expected
    # the data files on disk: the compaction's and the inputs (until expiry), nothing else
    names = {p.rsplit("/", 1)[-1] for p in _files(t) if p.endswith(".parquet")}
    previous = {e.file.file_name for e in t.store.live_entries(t.snapshots()[-2])}
    assert names == previous | {e.file.file_name for e in live}


@pytest.mark.slow
@pytest.mark.spark
def test_level0_flush_of_a_deletion_vector_table_marks_on_the_executors(
    spark: Any, catalog: Catalog
) -> None:
    """The executors compact with the vectors the driver planned: a level-0 flush over files
    it keeps marks the rows it supersedes (one index file per bucket) and reads as the model."""
    t = catalog.create_table(
        "db.dv",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={
            "bucket": "2",
            "rowkind.field": "op",
            "write-only": "true",
            "deletion-vectors.enabled": "true",
        },
    )
    base = [{"dt": "d", "id": k, "v": k, "op": "+I"} for k in range(2000)]
    t.write(pa.Table.from_pylist(base, schema=SCHEMA))
    t.flush_level0()
    update = [{"dt": "d", "id": k, "v": -k, "op": "+U"} for k in range(0, 2000, 7)]
    update += [{"dt": "d", "id": k, "v": 0, "op": "-D"} for k in (1, 2, 3)]
    t.write(pa.Table.from_pylist(update, schema=SCHEMA))
    snapshot = ls.compact(spark, t.root, force_level0=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    model = {k: k for k in range(2000) if k not in (1, 2, 3)}
    model.update({k: -k for k in range(0, 2000, 7)})
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == model
    vectors = [
        e for e in t.store.index_entries(snapshot) if e.file.index_type == "DELETION_VECTORS"
    ]
    ranges = [r for e in vectors for r in dict(e.file.extra)["_DELETIONS_VECTORS_RANGES"]]
    assert len({e.bucket for e in vectors}) == len(vectors) == 2
    assert sum(r["_CARDINALITY"] for r in ranges) == len(range(0, 2000, 7)) + 3


@pytest.mark.slow
@pytest.mark.spark
def test_a_failing_task_commits_nothing_and_leaves_no_file(spark: Any, catalog: Catalog) -> None:
    t = _table(catalog, "db.f")
    _fill(t)
    snapshots = [s.id for s in t.snapshots()]
    # one bucket's task fails (a data file is gone); the others compact and write files
    victim = next(e for e in t.store.live_entries(t.latest_snapshot()) if e.bucket == 2)
    victim_path = next(Path(t.root).rglob(victim.file.file_name))
    victim_path.unlink()
    before = _files(t)
    with pytest.raises(Exception, match=victim.file.file_name):
        ls.compact(spark, t.root, full=True)
    assert [s.id for s in t.snapshots()] == snapshots
    assert _files(t) == before


def _job(bucket: int, size: int) -> BucketJob:
    meta = DataFileMeta(
        f"data-{bucket}.parquet", size, 1, b"", b"", SimpleStats(), SimpleStats(), 0, 0, 0, 0
    )
    return BucketJob(b"", bucket, 8, (meta,))


@pytest.mark.parametrize(
    ("per_task", "expected"),
    [
        (1, [[3], [1], [0], [2]]),  # one bucket per task, the largest first
        (2, [[3, 0], [1, 2]]),  # dealt round-robin by size: 40+20 and 30+10
        (8, [[3, 1, 0, 2]]),
    ],
)
def test_buckets_are_dealt_largest_first(per_task: int, expected: list[list[int]]) -> None:
    jobs = [_job(0, 20), _job(1, 30), _job(2, 10), _job(3, 40)]
    assert [[j.bucket for j in task] for task in deal_tasks(jobs, per_task)] == expected


@pytest.mark.slow
@pytest.mark.spark
def test_postpone_tables_are_written_and_moved_through_spark(spark: Any, catalog: Catalog) -> None:
    """A ``bucket = -2`` table: Spark's write lands in ``bucket-postpone`` (invisible to batch
    reads, as in Paimon), and the distributed compaction first moves the postponed rows into
    ``postpone.default-bucket-num`` real buckets; the result reads as the model."""
    t = catalog.create_table(
        "db.pp",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={
            "bucket": "-2",
            "rowkind.field": "op",
            "postpone.default-bucket-num": "2",
            "postpone.batch-write-fixed-bucket": "false",  # the Spark write stays postponed
        },
    )
    rows = [(f"d{i % 2}", i % 50, i, "+I") for i in range(120)]
    ls.write(spark.createDataFrame(rows, "dt string, id long, v long, op string"), t.root)
    assert {e.bucket for e in t.store.live_entries(t.latest_snapshot())} == {-2}
    assert t.read().num_rows == 0
    snapshot = ls.compact(spark, t.root)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    live = t.store.live_entries(t.latest_snapshot())
    assert {e.total_buckets for e in live} == {2} and {e.bucket for e in live} <= {0, 1}
    # one writer task may not hold every row of a key: the model is per-key last by v only
    # when the whole input went through one writer, so compare the key set and the values
    expected = {(r[0], r[1]) for r in rows}
    got = t.read().to_pylist()
    assert {(r["dt"], r["id"]) for r in got} == expected
    assert all(r["v"] % 50 == r["id"] and r["v"] >= 0 for r in got)


@pytest.mark.slow
@pytest.mark.spark
def test_a_compaction_overtaken_by_another_jobs_compaction_and_expiry_is_a_conflict(
    spark: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the driver planned the buckets, another job compacts them and expires the planned
    snapshot: the executors find their input files gone. A lost race (``CommitConflictError``,
    nothing committed, no file of it left), not ``MissingDataFileError`` and its advice to
    restore or roll back; a compaction after it succeeds and the rows are the model's."""
    import lakeops.spark.compaction as spark_compaction
    from lakeops.errors import CommitConflictError

    t = _table(catalog, "db.o")
    model = _fill(t)
    real = spark_compaction.deal_tasks

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        other = catalog.get_table("db.o")
        other.compact(full=True)
        other.expire_snapshots(retain_min=1, retain_max=1)
        return real(*args, **kwargs)

    monkeypatch.setattr(spark_compaction, "deal_tasks", overtaken)
    with pytest.raises(CommitConflictError, match="run the compaction again"):
        ls.compact(spark, t.root, full=True)
    monkeypatch.undo()
    latest = catalog.get_table("db.o")
    live = {e.file.file_name for e in latest.store.live_entries(latest.latest_snapshot())}
    on_disk = {p.name for p in Path(t.root).rglob("data-*")}
    assert on_disk == live  # none of the failed compaction's files left
    t.write(pa.Table.from_pylist([{"dt": "d0", "id": 1, "v": 5, "op": "+I"}], schema=SCHEMA))
    model[("d0", 1)] = ("d0", 1, 5, "+I")
    assert ls.compact(spark, t.root, full=True) is not None
    rows = catalog.get_table("db.o").read().to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == sorted(model.values())
