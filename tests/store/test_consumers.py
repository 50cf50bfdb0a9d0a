"""Paimon consumers (``consumer/consumer-<id>``) against plain models: reads that remember where
they stopped (``read_changes(consumer_id=…)`` of both table kinds, the Spark stream source's
commit), ``reset_consumer`` / ``clear_consumers`` with Paimon's semantics, the ``$consumers``
table, and expiry (``consumer.expiration-time`` by the file's modification time: an expired
consumer is deleted, a live one keeps the snapshots it has still to read)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeops.airflow.consumer as airflow_consumer
import lakeops.store.consumers as store_consumers
from lakeops import AppendTable, Catalog, Table
from lakeops.errors import (
    ConfigurationError,
    CorruptMetadataError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from lakeops.format.schema_change import SetOption
from lakeops.store.keep_alive import consumer_floor

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def _batch(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _pk(catalog: Catalog, name: str = "db.t", **options: str) -> Table:
    t = catalog.create_table(
        name, schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", **options}
    )
    assert isinstance(t, Table)
    return t


def _file(table: Table | AppendTable, consumer_id: str) -> Path:
    return Path(table.root) / "consumer" / f"consumer-{consumer_id}"


def _rows(changes: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in changes.to_pylist()]


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


# ------------------------------------------------------------------------ reads that remember
@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_reads_resume_exactly_after_the_last_one(catalog: Catalog, kind: str) -> None:
    """Writes interleaved with reads of one consumer: every written row is read exactly once,
    and after each read the consumer holds the snapshot after the last one it read."""
    if kind == "primary-key":
        table: Table | AppendTable = _pk(catalog)
    else:
        table = catalog.create_table("db.a", schema=SCHEMA)
    written: list[tuple[Any, ...]] = []
    read: list[tuple[Any, ...]] = []
    for step in range(5):
        for k in range(step % 3):  # 0, 1 or 2 commits between reads
            batch = _batch(range(step * 10 + k * 3, step * 10 + k * 3 + 3), f"s{step}k{k}-")
            table.write(batch)
            written += [("+I", *r.values()) for r in batch.to_pylist()]
        read += _rows(table.read_changes(consumer_id="job"))
        latest = table.store.latest_snapshot_id() or 0
        assert json.loads(_file(table, "job").read_text()) == {"nextSnapshot": latest + 1}
    assert sorted(read) == sorted(written) and len(read) == len(set(read))


def test_the_consumer_file_is_paimons_and_from_snapshot_only_places_a_new_one(
    catalog: Catalog,
) -> None:
    t = _pk(catalog)
    for n in range(4):
        t.write(_batch(range(n * 10, n * 10 + 2), f"w{n}-"))
    # a new consumer starts after from_snapshot (exclusive), reads up to to_snapshot
    first = t.read_changes(1, 2, consumer_id="job")
    assert _rows(first) == _rows(t.read_changes(1, 2))
    # Jackson's pretty printer, byte for byte as Java Paimon writes it
    assert _file(t, "job").read_bytes() == b'{\n  "nextSnapshot" : 3\n}'
    # the consumer's position wins over from_snapshot (Paimon's consumer-id startup)
    rest = t.read_changes(0, consumer_id="job")
    assert _rows(rest) == _rows(t.read_changes(2, 4))
    assert store_consumers.read_next_snapshot(t.store, "job") == 5
    # nothing new: an empty read, same position (rewritten: the file stays fresh)
    assert t.read_changes(consumer_id="job").num_rows == 0
    assert store_consumers.read_next_snapshot(t.store, "job") == 5
    # a consumer ahead of to_snapshot reads nothing and stays where it is
    assert t.read_changes(0, 2, consumer_id="job").num_rows == 0
    assert store_consumers.read_next_snapshot(t.store, "job") == 5
    # the other modes resume the same way
    t.write(_batch(range(90, 92), "late-"))
    diff = t.read_changes(consumer_id="job", mode="diff", columns=["id"])
    assert diff.to_pylist() == [{"_row_kind": "+I", "id": 90}, {"_row_kind": "+I", "id": 91}]
    assert store_consumers.read_next_snapshot(t.store, "job") == 6


def test_a_failed_read_leaves_the_consumer_and_an_expired_one_is_named(catalog: Catalog) -> None:
    t = _pk(catalog)
    for n in range(5):
        t.write(_batch(range(n, n + 1), "x"))
    t.reset_consumer("job", next_snapshot=2)
    with pytest.raises(ConfigurationError, match="unknown column"):
        t.read_changes(consumer_id="job", columns=["nope"])
    assert store_consumers.read_next_snapshot(t.store, "job") == 2
    # expiry keeps what it has not read; snapshots taken from under it by other hands make
    # the read refuse (nothing is skipped silently) until a reset moves it
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert t.store.snapshot_ids() == [2, 3, 4, 5]  # the consumer held snapshot 2
    (Path(t.root) / "snapshot" / "snapshot-2").unlink()  # gone by other hands
    (Path(t.root) / "snapshot" / "EARLIEST").write_text("3")
    with pytest.raises(SnapshotExpiredError, match="consumer 'job' reads snapshot 2 next"):
        t.read_changes(consumer_id="job")
    assert store_consumers.read_next_snapshot(t.store, "job") == 2
    t.reset_consumer("job", next_snapshot=3)
    assert [r["id"] for r in t.read_changes(consumer_id="job").to_pylist()] == [2, 3, 4]


def test_consumer_ids_are_checked(catalog: Catalog) -> None:
    t = _pk(catalog)
    for bad in ("", "../x", "a/b", "-x", "x.tmp", "a b", "x" * 201):
        with pytest.raises(ConfigurationError, match="consumer id"):
            t.read_changes(consumer_id=bad)
        with pytest.raises(ConfigurationError, match="consumer id"):
            t.reset_consumer(bad, next_snapshot=1)
    assert not (Path(t.root) / "consumer").exists()


def test_a_branch_keeps_its_own_consumers(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write(_batch(range(3), "a"))
    t.create_tag("t1")
    t.create_branch("b", from_tag="t1")
    branch = t.branch("b")
    branch.write(_batch(range(10, 12), "b"))
    read = branch.read_changes(consumer_id="job")
    assert sorted(r["id"] for r in read.to_pylist()) == [0, 1, 2, 10, 11]
    assert (Path(t.root) / "branch/branch-b/consumer/consumer-job").is_file()
    assert t.metadata_table("consumers").num_rows == 0
    assert branch.metadata_table("consumers").to_pylist() == [
        {"consumer_id": "job", "next_snapshot_id": 3}
    ]


# ---------------------------------------------------------------------------- reset and clear
def test_reset_consumer_sets_or_deletes(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.reset_consumer("new", next_snapshot=1)  # an empty table: 1 is the one after the latest
    for n in range(3):
        t.write(_batch(range(n, n + 1), "x"))
    t.reset_consumer("job", next_snapshot=2)
    assert json.loads(_file(t, "job").read_text()) == {"nextSnapshot": 2}
    t.reset_consumer("job", next_snapshot=4)  # the latest + 1: everything read
    for missing in (5, 99):
        with pytest.raises(SnapshotNotFoundError, match="nothing was changed"):
            t.reset_consumer("job", next_snapshot=missing)
    with pytest.raises(ConfigurationError, match=">= 1"):
        t.reset_consumer("job", next_snapshot=0)
    assert store_consumers.read_next_snapshot(t.store, "job") == 4
    t.reset_consumer("job")  # no next snapshot: deleted
    assert not _file(t, "job").exists()
    t.reset_consumer("job")  # deleting a missing consumer does nothing
    assert t.metadata_table("consumers").to_pylist() == [
        {"consumer_id": "new", "next_snapshot_id": 1}
    ]


def _consumers(t: Table, ids: list[str]) -> None:
    for i in ids:
        t.reset_consumer(i, next_snapshot=1)


def test_clear_consumers_matches_whole_ids(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write(_batch(range(2), "x"))
    ids = ["flink-a", "flink-b", "spark-a", "x-flink-a", "flink"]
    _consumers(t, ids)

    def left() -> list[str]:
        return t.metadata_table("consumers").column("consumer_id").to_pylist()

    # Java's Matcher.matches: the whole id ('x-flink-a' does not match 'flink-.*')
    assert t.clear_consumers(including="flink-.*", excluding=".*-b") == ["flink-a"]
    assert left() == ["flink", "flink-b", "spark-a", "x-flink-a"]
    assert t.clear_consumers(including="flink") == ["flink"]
    assert t.clear_consumers(excluding="spark-.*|flink-b") == ["x-flink-a"]
    # a bad pattern refuses before anything is deleted
    with pytest.raises(ConfigurationError, match="not a regular expression"):
        t.clear_consumers(including=".*", excluding="(")
    assert left() == ["flink-b", "spark-a"]
    assert t.clear_consumers(including="  ") == ["flink-b", "spark-a"]  # blank: every one
    assert left() == [] and t.clear_consumers() == []


# -------------------------------------------------------------------------------- $consumers
def test_consumers_table_lists_every_consumer_file_by_id(catalog: Catalog) -> None:
    t = _pk(catalog)
    directory = Path(t.root) / "consumer"
    directory.mkdir()
    # ids Paimon may have written (any characters), in either JSON layout; temporaries skipped
    (directory / "consumer-zeta job").write_text('{"nextSnapshot": 7}')
    (directory / "consumer-alpha").write_text('{\n  "nextSnapshot" : 3\n}')
    (directory / "consumer-alpha.1f2e.tmp").write_text("{")
    (directory / ".consumer-beta.tmp").write_text("{")
    (directory / "other").write_text("{")
    table = t.metadata_table("consumers")
    assert table.to_pylist() == [
        {"consumer_id": "alpha", "next_snapshot_id": 3},
        {"consumer_id": "zeta job", "next_snapshot_id": 7},
    ]
    assert table.equals(catalog.metadata_table("db.t$consumers"))
    assert store_consumers.list_consumers(t.store) == {"alpha": 3, "zeta job": 7}
    # clear reaches ids lakeops would not write
    assert t.clear_consumers(including="zeta.*") == ["zeta job"]
    (directory / "consumer-bad").write_text('{"nextSnapshot": "x"}')
    with pytest.raises(CorruptMetadataError, match="cannot be read as a Paimon consumer"):
        t.metadata_table("consumers")
    with pytest.raises(CorruptMetadataError, match="consumer-bad"):
        t.read_changes(consumer_id="bad")


def test_the_airflow_module_uses_the_store_implementation() -> None:
    for name in airflow_consumer.__all__:
        assert getattr(airflow_consumer, name) is getattr(store_consumers, name)


# ------------------------------------------------------------------------------------- expiry
def test_expiry_deletes_expired_consumers_and_keeps_what_live_ones_need(
    catalog: Catalog,
) -> None:
    """Model: with ``consumer.expiration-time`` E, a consumer whose file is older than E is
    deleted before snapshots expire (Paimon's ``ConsumerManager.expire``); the snapshots from
    the smallest live ``nextSnapshot`` on stay; without E nothing expires a consumer."""
    t = _pk(catalog)
    for n in range(8):
        t.write(_batch(range(n, n + 1), "x"))
    t.reset_consumer("stale", next_snapshot=2)
    t.reset_consumer("live", next_snapshot=5)
    _age(_file(t, "stale"), 3600)
    # no expiration time: both consumers live, the smallest holds expiry
    assert consumer_floor(t.store, None) == 2
    first = t.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert first.expired_snapshots == (1,)
    assert _file(t, "stale").exists() and _file(t, "live").exists()
    # an hour-old file is past a 10-minute expiration: not live (by its modification time) ...
    t.alter([SetOption("consumer.expiration-time", "10 min")])
    assert consumer_floor(t.store, 600_000) == 5
    t = catalog.get_table("db.t")
    assert isinstance(t, Table)
    second = t.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    # ... and deleted by expiry; the live consumer keeps snapshot 5 and everything after it
    assert not _file(t, "stale").exists() and _file(t, "live").exists()
    assert second.expired_snapshots == (2, 3, 4)
    assert t.store.snapshot_ids()[0] == 5
    # what the live consumer has not read is all still there, exactly once
    rows = t.read_changes(consumer_id="live")
    assert sorted(r["id"] for r in rows.to_pylist()) == [4, 5, 6, 7]
    # a consumer refreshed by its reads never expires while it reads
    assert store_consumers.expire_consumers(t.store, 600_000, time.time() * 1000) == []


# ------------------------------------------------------------------------- Spark stream source
def _reader(table: Table, **options: str) -> Any:
    types = pytest.importorskip("pyspark.sql.types")
    from lakeops.spark.streaming import LakeopsStreamReader

    schema = types.StructType(
        [
            types.StructField("rowkind", types.StringType(), False),
            types.StructField("id", types.LongType(), False),
            types.StructField("v", types.StringType(), True),
        ]
    )
    return LakeopsStreamReader({"path": table.root, "row-kind": "true", **options}, schema)


def _drain(reader: Any, start: dict[str, int], end: dict[str, int]) -> list[tuple[Any, ...]]:
    out = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            out += [tuple(r.values()) for r in batch.to_pylist()]
    return out


def test_the_spark_source_records_its_consumer_when_a_batch_commits(catalog: Catalog) -> None:
    """The source's hooks as Spark calls them (``initialOffset`` once without a checkpoint,
    ``latestOffset``, ``partitions``/``read``, then ``commit`` once the batch is done)."""
    t = _pk(catalog)
    t.write(_batch(range(0, 3), "a"))
    first = _reader(t, **{"consumer-id": "spark-job", "scan.mode": "latest-full"})
    start = first.initialOffset()
    assert start == {"snapshot": -1}  # a new consumer: scan.mode places it
    end = first.latestOffset(start)
    rows = _drain(first, start, end)
    assert sorted(rows) == [("+I", i, f"a{i}") for i in range(3)]
    assert not _file(t, "spark-job").exists()  # not before the batch commits
    first.commit(end)
    assert store_consumers.read_next_snapshot(t.store, "spark-job") == 2

    t.write(_batch(range(3, 5), "b"))
    t.write(_batch(range(0, 1), "c"))
    # a new query (no checkpoint) with the same consumer: the changes after what was committed
    second = _reader(t, **{"consumer-id": "spark-job", "scan.mode": "latest-full"})
    start = second.initialOffset()
    assert start == {"snapshot": 1}
    end = second.latestOffset(start)
    assert sorted(_drain(second, start, end)) == [("+I", 0, "c0"), ("+I", 3, "b3"), ("+I", 4, "b4")]
    second.commit(end)
    assert store_consumers.read_next_snapshot(t.store, "spark-job") == 4
    with pytest.raises(ConfigurationError, match="consumer id"):
        _reader(t, **{"consumer-id": "../x"})


@pytest.mark.slow
@pytest.mark.spark
def test_a_spark_stream_records_its_consumer_when_spark_commits_the_source(
    catalog: Catalog, tmp_path: Path
) -> None:
    """A real stream: Spark commits a batch's offsets to the source when it plans the next
    batch, so the consumer trails the query by one batch; a new query with the same
    ``consumer-id`` (fresh checkpoint) starts after what the consumer recorded."""
    os.environ["PYSPARK_PYTHON"] = __import__("sys").executable
    from pyspark.sql import SparkSession

    from lakeops.spark import register

    # an existing session (the Spark tests' one) is reused and left running
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .getOrCreate()
    )
    register(spark)
    t = _pk(catalog)
    t.write(_batch(range(0, 3), "a"))

    def run(out: Path) -> list[tuple[Any, ...]]:
        query = (
            spark.readStream.format("lakeops")
            .option("row-kind", "true")
            .option("consumer-id", "spark-job")
            .load(t.root)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(out) + "-checkpoint")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None
        return sorted(tuple(r) for r in spark.read.parquet(str(out)).collect())

    a_rows = [("+I", i, f"a{i}") for i in range(3)]
    b_rows = [("+I", 3, "b3"), ("+I", 4, "b4")]
    assert run(tmp_path / "one") == a_rows
    assert store_consumers.read_next_snapshot(t.store, "spark-job") is None  # batch 0 pending
    t.write(_batch(range(3, 5), "b"))
    # the same query restarted: planning batch 1 commits batch 0 (snapshot 1) to the source
    assert run(tmp_path / "one") == sorted(a_rows + b_rows)
    assert store_consumers.read_next_snapshot(t.store, "spark-job") == 2
    # another query with the consumer: from snapshot 2 on (batch 1 again: at least once)
    t.write(_batch(range(5, 6), "c"))
    assert run(tmp_path / "two") == sorted([*b_rows, ("+I", 5, "c5")])
    assert store_consumers.read_next_snapshot(t.store, "spark-job") == 2
