"""A warehouse's tables by name in Spark SQL (``lakeops.spark.register_tables``), judged against
the rows written; partition filters prune what the reader plans; a read schema reads only its
columns."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import EqualTo

import lakeops.spark as ls
from lakeops import Catalog
from lakeops.errors import ConfigurationError, TableAlreadyExistsError
from lakeops.spark.datasource import LakeopsDataSource, SplitPartition

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ORDERS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
EVENTS = pa.schema([("kind", pa.string()), ("n", pa.int32())])
DAYS = ("d0", "d1", "d2", "d3")
#: the plain model: every row written, one per key
ROWS = [{"dt": d, "id": i, "v": (i * 7) % 23} for d in DAYS for i in range(12)]
EVENT_ROWS = [{"kind": k, "n": n} for n, k in enumerate("abcab")]


def _write_warehouse(catalog: Catalog) -> None:
    orders = catalog.create_table(
        "db.orders",
        schema=ORDERS,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    orders.write(pa.Table.from_pylist(ROWS, schema=ORDERS))
    catalog.create_database("ops")
    catalog.create_table("ops.events", schema=EVENTS).write(
        pa.Table.from_pylist(EVENT_ROWS, schema=EVENTS)
    )


def test_tables_by_name_answer_sql_as_the_rows_written(
    spark, catalog: Catalog, warehouse: Path
) -> None:
    _write_warehouse(catalog)
    try:
        assert ls.register_tables(spark, str(warehouse)) == ["db.orders", "ops.events"]
        got = spark.sql("SELECT id, v FROM db.orders WHERE dt = 'd2' AND v > 10").collect()
        assert sorted((r.id, r.v) for r in got) == sorted(
            (r["id"], r["v"]) for r in ROWS if r["dt"] == "d2" and r["v"] > 10
        )
        events = spark.table("ops.events")
        assert sorted(tuple(r) for r in events.collect()) == sorted(
            (r["kind"], r["n"]) for r in EVENT_ROWS
        )
        # the partition filter reached the reader: it planned d2's buckets only
        one_day = spark.table("db.orders").where("dt = 'd2'")
        table = catalog.get_table("db.orders")
        assert one_day.rdd.getNumPartitions() == len(table.splits(filter=[("dt", "=", "d2")]))
        assert one_day.rdd.getNumPartitions() < spark.table("db.orders").rdd.getNumPartitions()
        # by name, Spark SQL reads only: an INSERT is refused, the table unchanged
        with pytest.raises(Exception, match="read-only in Spark SQL"):
            spark.sql("INSERT INTO db.orders VALUES ('d9', 1, 1)")
        assert len(table.snapshots()) == 1
        # registering again is fine; dropping the Spark entry leaves the table
        assert ls.register_tables(spark, str(warehouse), databases=["ops"]) == ["ops.events"]
        spark.sql("DROP TABLE ops.events")
        assert catalog.get_table("ops.events").read().num_rows == len(EVENT_ROWS)
    finally:
        spark.sql("DROP TABLE IF EXISTS db.orders")
        spark.sql("DROP TABLE IF EXISTS ops.events")


def test_a_name_spark_already_has_is_refused(spark, catalog: Catalog, warehouse: Path) -> None:
    _write_warehouse(catalog)
    spark.sql("CREATE DATABASE IF NOT EXISTS ops")
    spark.sql("CREATE OR REPLACE VIEW ops.events AS SELECT 1 AS one")
    try:
        with pytest.raises(TableAlreadyExistsError, match=r"ops\.events"):
            ls.register_tables(spark, str(warehouse))
        assert not spark.catalog.tableExists("db.orders")  # refused before registering any
        with pytest.raises(ConfigurationError, match="credentials"):
            ls.register_tables(spark, str(warehouse), storage_options={"secret": "s"})
    finally:
        spark.sql("DROP VIEW IF EXISTS ops.events")


def test_the_reader_plans_only_the_filtered_partitions_files(catalog: Catalog) -> None:
    """What the reader plans (no Spark job): a filter on the partition column leaves the splits
    of that partition, holding only that partition's files."""
    _write_warehouse(catalog)
    table = catalog.get_table("db.orders")
    source = LakeopsDataSource({"path": table.root})
    reader = source.reader(source.schema())
    assert len(list(reader.pushFilters([EqualTo(("dt",), "d1")]))) == 1  # Spark still applies it
    planned = reader.partitions()
    assert planned and all(isinstance(p, SplitPartition) for p in planned)
    assert {p.split.partition for p in planned} == {("d1",)}
    every = {f.file_name for s in table.splits() for f in s.files}
    files = {f.file_name for p in planned for f in p.split.files}
    assert files and files < every
    assert files <= {p.name for p in (Path(table.root) / "dt=d1").rglob("data-*")}


def test_a_read_schema_reads_only_its_columns(spark, catalog: Catalog) -> None:
    _write_warehouse(catalog)
    root = catalog.get_table("db.orders").root
    df = ls.read(spark, root, columns=["v", "id"])
    assert df.columns == ["v", "id"]
    assert sorted(tuple(r) for r in df.collect()) == sorted((r["v"], r["id"]) for r in ROWS)
    with pytest.raises(Exception, match="'nope' is not a column of the table"):
        spark.read.format("lakeops").schema("id long, nope string").load(root).collect()


def test_a_split_whose_snapshot_expired_before_a_task_read_it_is_no_corruption(
    catalog: Catalog,
) -> None:
    """The driver plans splits; before a task reads its split, another job compacts the table
    and expires the planned snapshot (no Spark job: the reader's calls directly). The task
    raises ``SnapshotExpiredError`` (the table is healthy, read again), not
    ``MissingDataFileError`` and its advice to restore or roll back."""
    from lakeops.errors import SnapshotExpiredError

    _write_warehouse(catalog)
    table = catalog.get_table("db.orders")
    table.write(pa.Table.from_pylist(ROWS, schema=ORDERS))  # a second file in every bucket
    source = LakeopsDataSource({"path": table.root})
    reader = source.reader(source.schema())
    planned = reader.partitions()
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1)
    with pytest.raises(SnapshotExpiredError, match="read again"):
        for partition in planned:
            list(reader.read(partition))
