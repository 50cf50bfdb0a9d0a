"""Append tables (no primary key) through Spark: the data source's reads and writes, the
first write creating the table, ``lakeops.spark.write`` (unaware bucket without a shuffle,
fixed bucket one writer per bucket in order), time travel, ``incremental-between``, pushdown,
distributed compaction, overwrite, and the streaming sink and source — against a plain model
of the rows written and against pypaimon 2.1 (tests/interop/oracle.py) both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeops.spark as ls
from lakeops import Catalog
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.spark.compaction import compact as spark_compact
from lakeops.table.append import AppendTable
from tests.interop.oracle import oracle_script

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("seq", pa.int64()), ("v", pa.string())]
)
DDL = "dt string, id long, seq long, v string"
#: layout -> (partition keys, table options)
LAYOUTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "unaware-partitioned": (["dt"], {}),
    "fixed": ([], {"bucket": "2", "bucket-key": "id"}),
}

Row = tuple[str, int | None, int, str]


def _rows(n: int, start: int) -> list[Row]:
    """``n`` rows whose ``seq`` numbers them in write order from ``start``; some have a null
    ``id`` (a bucket key may be null in an append table)."""
    return [
        (f"d{i % 2}", None if i % 7 == 6 else i % 5, start + i, f"v{start + i}") for i in range(n)
    ]


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA
    )


def _collect(df: Any) -> list[Row]:
    """The DataFrame's rows in the order Spark returns them (splits in order)."""
    return [tuple(r) for r in df.collect()]


def _by_seq(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: r[2])


def _assert_order_per_key(rows: list[Row]) -> None:
    """A fixed bucket keeps its rows in write order: rows of one bucket key (of one
    partition) come in ``seq`` order (a plain model: the key pins the bucket, whatever the
    hash)."""
    for key in {r[:2] for r in rows}:
        seqs = [r[2] for r in rows if r[:2] == key]
        assert seqs == sorted(seqs), f"rows of id {key} out of order: {seqs}"


@pytest.mark.interop
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_append_table_through_spark(spark: Any, catalog: Catalog, warehouse: Path, layout: str):
    partition_keys, options = LAYOUTS[layout]
    name = layout.replace("-", "_")
    root = str(warehouse / "db.db" / name)
    fixed = "bucket" in options
    batches = [_rows(40, 0), _rows(30, 100), _rows(30, 200)]
    if fixed:  # created up front; lakeops.spark.write routes each bucket to one writer
        catalog.create_table(
            f"db.{name}", schema=SCHEMA, partition_keys=partition_keys, options=options
        )
    else:  # the first write creates an append table (no primary-key option)
        writer = spark.createDataFrame(batches[0], DDL).write.format("lakeops").mode("append")
        if partition_keys:
            writer = writer.option("partition", ",".join(partition_keys))
        writer.save(root)
    table = catalog.get_table(f"db.{name}")
    assert isinstance(table, AppendTable)
    assert list(table.schema.partition_keys) == partition_keys
    for i, rows in enumerate(batches):
        if fixed or i > 0:  # one input partition: its order is the write order
            ls.write(spark.createDataFrame(rows, DDL).coalesce(1), root)
    model = [r for b in batches for r in b]
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 3
    if fixed:  # one writer per bucket (null keys routed with their bucket): a file per bucket
        assert all(table.commit_stats(s.id).files_added <= 2 for s in table.snapshots())

    df = spark.read.format("lakeops").load(root)
    got = _collect(df)
    assert _by_seq(got) == model
    if fixed:
        _assert_order_per_key(got)
    # time travel and the appends between two snapshots (+I each)
    table.create_tag("first", 1)
    key, value = ("versionAsOf", "1") if fixed else ("scan.tag-name", "first")
    old = spark.read.format("lakeops").option(key, value).load(root)
    assert _by_seq(_collect(old)) == batches[0]
    between = spark.read.format("lakeops").option("incremental-between", "1,3").load(root)
    assert sorted((tuple(r) for r in between.collect()), key=lambda r: r[3]) == [
        ("+I", *r) for r in batches[1] + batches[2]
    ]
    if not fixed:  # changelog / diff modes are a primary-key table's: refused on the driver
        changelog = spark.read.format("lakeops").option("incremental-between", "1,3")
        with pytest.raises(Exception, match="is an append table"):
            changelog.option("incremental-between-scan-mode", "changelog").load(root).collect()
    # filters: exact rows; a partition filter prunes splits
    one = df.filter("dt = 'd1' AND seq >= 100")
    assert _by_seq(_collect(one)) == [r for r in model if r[0] == "d1" and r[2] >= 100]
    if partition_keys:
        assert one.rdd.getNumPartitions() < df.rdd.getNumPartitions()

    # distributed compaction: one COMPACT snapshot, the same rows, a fixed bucket in order
    files_before = len(table.metadata_table("files"))
    snapshot = ls.compact(spark, root, full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert len(table.metadata_table("files")) < files_before
    got = _collect(spark.read.format("lakeops").load(root))
    assert _by_seq(got) == model
    if fixed:
        _assert_order_per_key(got)

    # pypaimon reads what Spark wrote and compacted, then appends; Spark reads that
    extra = _rows(20, 300)
    theirs, *_ = oracle_script(
        warehouse,
        [
            {"op": "read", "table": f"db.{name}"},
            {"op": "write", "table": f"db.{name}", "data": _arrow(extra)},
        ],
    )
    assert _by_seq([tuple(r.values()) for r in theirs.to_pylist()]) == model
    model += extra
    assert _by_seq(_collect(spark.read.format("lakeops").load(root))) == model

    # overwrite: of one partition, or of the whole table
    new = [("d0", 9, 900, "new"), ("d0", 9, 901, "new")]
    if partition_keys:
        ls.write(
            spark.createDataFrame(new, DDL),
            root,
            mode="overwrite",
            overwrite_partitions=[{"dt": "d0"}],
        )
        model = [r for r in model if r[0] != "d0"] + new
    else:
        spark.createDataFrame(new, DDL).write.format("lakeops").mode("overwrite").save(root)
        model = new
    assert table.latest_snapshot().commit_kind == "OVERWRITE"
    assert _by_seq(_collect(spark.read.format("lakeops").load(root))) == _by_seq(model)


def test_primary_key_notions_are_refused_before_spark_runs(catalog: Catalog) -> None:
    """A level-0 flush and a changelog stream are a primary-key table's: refused on the driver
    (no SparkSession needed), nothing written."""
    from pyspark.sql.types import StringType, StructField, StructType

    from lakeops.spark.streaming import LakeopsStreamReader

    t = catalog.create_table("db.flush", schema=SCHEMA)
    t.write(_arrow(_rows(5, 0)))
    with pytest.raises(UnsupportedFeatureError, match="append table"):
        spark_compact(None, {"path": t.root}, force_level0=True)
    schema = StructType([StructField("rowkind", StringType()), StructField("dt", StringType())])
    with pytest.raises(ConfigurationError, match="an append table's stream"):
        LakeopsStreamReader({"path": t.root, "changes.mode": "changelog"}, schema)
    assert len(t.snapshots()) == 1


def test_stream_from_one_append_table_into_another(
    spark: Any, catalog: Catalog, warehouse: Path, tmp_path: Path
) -> None:
    """The source emits +I rows of APPEND snapshots (the starting state first; COMPACT and
    OVERWRITE snapshots emit nothing); the sink commits each micro-batch once, as APPEND."""
    src = catalog.create_table(
        "db.src", schema=SCHEMA, partition_keys=["dt"], options={"compaction.min.file-num": "2"}
    )
    dst = catalog.create_table("db.dst", schema=SCHEMA)
    first, second, third = _rows(10, 0), _rows(6, 100), _rows(4, 200)
    src.write(_arrow(first))
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> None:
        query = (
            spark.readStream.format("lakeops")
            .option("row-kind", "true")
            .load(src.root)
            .filter("rowkind = '+I'")  # every row of an append stream is +I
            .drop("rowkind")
            .writeStream.format("lakeops")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(dst.root)
        )
        query.awaitTermination()
        assert query.exception() is None

    run()
    src.write(_arrow(second))
    assert src.compact(full=True) is not None  # COMPACT: rewrites, adds no rows
    src.write(_arrow(third))
    run()  # restarted from the checkpoint
    expected = first + second + third
    assert _by_seq([tuple(r.values()) for r in dst.read().to_pylist()]) == expected
    assert {s.commit_kind for s in dst.snapshots()} == {"APPEND"}
    assert len(dst.snapshots()) == 2
    src.write(_arrow([("d0", 1, 999, "x")]), overwrite=True)  # an OVERWRITE emits nothing
    run()
    assert len(dst.snapshots()) == 2  # an empty micro-batch commits nothing
    (theirs,) = oracle_script(warehouse, [{"op": "read", "table": "db.dst"}])
    assert _by_seq([tuple(r.values()) for r in theirs.to_pylist()]) == expected


def test_a_failing_compaction_task_commits_nothing_and_leaves_no_file(
    spark: Any, catalog: Catalog
) -> None:
    """One window's task fails (a data file is gone) while the others rewrite theirs: nothing
    is committed and every file the job wrote is deleted (found by the job's name token)."""
    t = catalog.create_table(
        "db.fails", schema=SCHEMA, options={"bucket": "4", "bucket-key": "seq"}
    )
    for start in (0, 100, 200):
        t.write(_arrow(_rows(40, start)))
    snapshots = [s.id for s in t.snapshots()]
    victim = next(e for e in t.store.live_entries(t.latest_snapshot()) if e.bucket == 2)
    next(Path(t.root).rglob(victim.file.file_name)).unlink()
    before = sorted(p.name for p in Path(t.root).rglob("data-*"))
    with pytest.raises(Exception, match=victim.file.file_name):
        ls.compact(spark, t.root, full=True)
    assert [s.id for s in t.snapshots()] == snapshots
    assert sorted(p.name for p in Path(t.root).rglob("data-*")) == before


def test_distributed_compaction_applies_and_retires_deletion_vectors(
    spark: Any, catalog: Catalog
) -> None:
    """Rows Paimon's DELETE marked (deletion vectors, built by the test model of Paimon's
    layout) stay deleted through a Spark compaction, and the compacted files' vectors leave
    the index, as in-process compaction does."""
    from lakeops.format.deletion_vector import deletion_files
    from tests.table.test_append import SCHEMA as DV_SCHEMA
    from tests.table.test_append import _add_vectors, _bag, _batch, _model_without

    t = catalog.create_table(
        "db.dv",
        schema=DV_SCHEMA,
        partition_keys=["dt"],
        options={"deletion-vectors.enabled": "true"},
    )
    t.write(_batch(0, 9))
    t.write(_batch(1, 9))
    names = sorted(e.file.file_name for e in t.store.live_entries(t.latest_snapshot()))
    deletes = {names[0]: [0, 2], names[-1]: [1]}
    _add_vectors(t, deletes)
    model = _model_without(t, deletes)
    assert isinstance(t, AppendTable)
    assert ls.compact(spark, t.root, full=True) is not None
    assert _bag(t.read()) == _bag(model)
    live = {e.file.file_name for e in t.store.live_entries(t.latest_snapshot())}
    vectors = deletion_files(t.store.index_entries(t.latest_snapshot()))
    assert not set(deletes) & live  # every file with a vector was compacted away ...
    assert all(name in live for (_, _, name) in vectors)  # ... and so were their vectors
