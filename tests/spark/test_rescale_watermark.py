"""The Spark jobs' ``rescale`` entry (:func:`lakeops.spark.rescale`) and the ``watermark`` a
Spark write passes through.

``rescale`` reads and writes on Spark tasks, the driver plans and commits; it is judged by the
plain model of the rows (the last row per key), by the bucket count every live file records,
and by its refusal when another job changed the partitions after the snapshot it read. The
watermark is judged by the snapshot's ``watermark`` field: the value passed, as
``Table.commit`` stores it, on the Python writer's and the native path's commits alike, and
refused by a native write of a partition still holding the old bucket count."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import lakeops.spark as ls
from lakeops import Catalog
from lakeops.bucket.counts import BucketCountMismatchError
from lakeops.errors import CommitConflictError
from lakeops.format.schema_change import SetOption
from lakeops.spark import jobs

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _table(catalog: Catalog) -> Any:
    table = catalog.create_table(
        "db.r",
        schema=SCHEMA,
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    rows = [{"id": i % 30, "dt": f"d{i % 3}", "v": i} for i in range(120)]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    return table, {(r["id"], r["dt"]): r["v"] for r in rows}


@pytest.fixture
def job_session(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The job runs in this process on the suite's shared session, which it must not stop."""
    monkeypatch.setattr(jobs, "_session", lambda master: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    yield spark


@pytest.mark.slow
@pytest.mark.spark
def test_rescale_job_rewrites_the_partitions(job_session: Any, catalog: Catalog) -> None:
    table, model = _table(catalog)
    summary = jobs.main(
        ["rescale", "--table", table.root, "--bucket", "4", "--partitions", '[{"dt": "d1"}]']
    )
    assert summary["bucket"] == 4 and summary["partitions"] == ["dt=d1"]
    assert summary["commit_kind"] == "OVERWRITE" and summary["rows"] == 10
    summary = jobs.main(["rescale", "--table", table.root])
    assert sorted(summary["partitions"]) == ["dt=d0", "dt=d2"]
    reopened = catalog.get_table("db.r")
    assert {e.total_buckets for e in reopened.store.live_entries(reopened.latest_snapshot())} == {4}
    got = {(r["id"], r["dt"]): r["v"] for r in reopened.read().to_pylist()}
    assert got == model


@pytest.mark.slow
@pytest.mark.spark
def test_rescale_refuses_when_the_partitions_changed_after_its_read(
    spark: Any, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another job writes into the partition between the rescale's read and its commit: the
    overwrite would drop that row, so it is refused and the table keeps every row."""
    table, model = _table(catalog)
    table.rescale_buckets(bucket=3, partitions=[{"dt": "d0"}])  # d0 takes writes again
    real = ls.api._write

    def write_then_race(df: Any, path: str, **kwargs: Any) -> Any:
        catalog.get_table("db.r").write(pa.table({"id": [99], "dt": ["d0"], "v": [5]}, SCHEMA))
        return real(df, path, **kwargs)

    monkeypatch.setattr(ls.api, "_write", write_then_race)
    # the driver's commit raises inside Spark, which hands it on wrapped (as for ls.write)
    with pytest.raises(Exception, match="another job changed") as info:
        ls.rescale(spark, table.root, partitions=[{"dt": "d0"}])
    assert info.type is CommitConflictError or "CommitConflictError" in str(info.value)
    model[(99, "d0")] = 5
    reopened = catalog.get_table("db.r")
    assert {(r["id"], r["dt"]): r["v"] for r in reopened.read().to_pylist()} == model


@pytest.mark.slow
@pytest.mark.spark
def test_spark_writes_carry_the_watermark_and_refuse_old_count_partitions(
    spark: Any, catalog: Catalog
) -> None:
    table, _ = _table(catalog)
    df = spark.createDataFrame([(1, "d0", 7)], "id bigint, dt string, v bigint")
    assert ls.write(df, table.root, watermark=1_700_000_000_000) == "python"
    assert catalog.get_table("db.r").latest_snapshot().watermark == 1_700_000_000_000
    assert ls.write(df, table.root, via="native", watermark=1_700_000_000_500) == "native"
    assert catalog.get_table("db.r").latest_snapshot().watermark == 1_700_000_000_500

    table.alter(SetOption("bucket", "3"))
    before = table.store.latest_snapshot_id()
    for via in ("python", "native"):
        with pytest.raises(Exception, match=r"partition dt=d0 .*new bucket count 3") as info:
            ls.write(df, table.root, via=via)
        assert info.type is BucketCountMismatchError or "BucketCountMismatchError" in str(
            info.value
        )
    assert table.store.latest_snapshot_id() == before
