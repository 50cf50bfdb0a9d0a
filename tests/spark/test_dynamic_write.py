"""Spark writes into dynamic-bucket and cross-partition tables: assigners, then one writer per
(partition, bucket), one commit — the same table state as the in-process writer."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import lakeops.spark as ls
from lakeops import Catalog, Table
from lakeops.spark.dynamic import assign_cross_partition

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
USERS = pa.schema([("user_id", pa.int64()), ("city", pa.string()), ("v", pa.int64())])


def _state(t: Table, keys: list[str]) -> list[dict]:
    return sorted(t.read().to_pylist(), key=lambda r: tuple(r[k] for k in keys))


def test_dynamic_bucket_write_matches_in_process(spark, catalog: Catalog) -> None:
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": "50"}
    via_spark, direct = (
        catalog.create_table(
            name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options
        )
        for name in ("db.s", "db.d")
    )
    batches = [
        pa.table(
            {
                "dt": ["a"] * 180 + ["b"] * 20,
                "id": list(range(180)) + list(range(20)),
                "v": [1] * 200,
            },
            schema=SCHEMA,
        ),
        pa.table({"dt": ["a"] * 60, "id": list(range(150, 210)), "v": [2] * 60}, schema=SCHEMA),
    ]
    for batch in batches:
        ls.write(spark.createDataFrame(batch.to_pandas()).repartition(3), via_spark.root)
        direct.write(batch)
    assert _state(via_spark, ["dt", "id"]) == _state(direct, ["dt", "id"])
    assert [s.commit_kind for s in via_spark.snapshots()] == ["APPEND", "APPEND"]
    # buckets of dt=a stay within the target; every (partition, bucket) has one HASH file
    reader = via_spark.split_reader()
    sizes = [reader.read(s, ["id"]).num_rows for s in via_spark.splits() if s.partition == ("a",)]
    assert sum(sizes) == 210 and max(sizes) <= 50
    entries = via_spark.store.index_entries(via_spark.latest_snapshot())
    assert (
        len({(e.partition, e.bucket) for e in entries}) == len(entries) == len(via_spark.splits())
    )


def test_cross_partition_write_matches_in_process(spark, catalog: Catalog) -> None:
    options = {"bucket": "-1", "dynamic-bucket.target-row-num": "20"}
    via_spark, direct = (
        catalog.create_table(
            name, schema=USERS, primary_keys=["user_id"], partition_keys=["city"], options=options
        )
        for name in ("db.us", "db.ud")
    )
    first = pa.table({"user_id": list(range(100)), "city": ["x"] * 100, "v": [1] * 100})
    moves = pa.table(
        {
            "user_id": [*range(0, 100, 3), 500, 501],
            "city": ["y"] * 34 + ["x", "z"],
            "v": [2] * 36,
        }
    )
    for batch in (first, moves):
        batch = batch.cast(USERS)
        ls.write(spark.createDataFrame(batch.to_pandas()).repartition(2), via_spark.root)
        direct.write(batch)
    got = _state(via_spark, ["user_id"])
    assert got == _state(direct, ["user_id"])
    assert len(got) == 102 and sum(r["city"] == "y" for r in got) == 34
    assert via_spark.read(filter=[("city", "=", "x")]).num_rows == 100 - 34 + 1


def test_cross_partition_key_index_reads_deletion_vectors(spark, catalog: Catalog) -> None:
    """On a deletion-vector table a user's move leaves its old row deleted by a vector; the
    Spark assigners' key index reads every file with its vector (it found the user in both
    partitions), so a move back into the old partition removes the newer partition's row."""
    table = catalog.create_table(
        "db.dv",
        schema=USERS,
        primary_keys=["user_id"],
        partition_keys=["city"],
        options={"bucket": "-1", "deletion-vectors.enabled": "true"},
    )

    def frame(user_ids: list[int], cities: list[str], v: int) -> Any:
        batch = pa.table(
            {"user_id": user_ids, "city": cities, "v": [v] * len(user_ids)}, schema=USERS
        )
        return spark.createDataFrame(batch.to_pandas())

    # in process: the move's -D is compacted into a vector of amsterdam's file
    table.write(pa.table({"user_id": [1, 2], "city": ["amsterdam"] * 2, "v": [1, 1]}, schema=USERS))
    table.write(pa.table({"user_id": [1], "city": ["oslo"], "v": [2]}, schema=USERS))
    assert table.store.index_entries(table.latest_snapshot())  # the vector
    # the key index the assigners load: each user once, where its live row is
    back = frame([1], ["amsterdam"], 3)
    _, boot = assign_cross_partition(back, {"path": table.root})
    keys = sorted((r["user_id"], r["city"]) for r in boot.collect())
    boot.unpersist()
    assert keys == [(1, "oslo"), (2, "amsterdam")]
    ls.write(back, table.root)
    assert _state(table, ["user_id"]) == [
        {"user_id": 1, "city": "amsterdam", "v": 3},
        {"user_id": 2, "city": "amsterdam", "v": 1},
    ]
