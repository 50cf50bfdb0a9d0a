"""Spark: writing through the lakeops data source vs ``df.write.parquet``; the distributed
compaction job vs the in-process ``table.compact``.

* write: 2,000,000 rows x 4 columns (id: a 64-bit hash, in no order; v, f; s: 24 hex digits of
  a hash), cached first (``--repeats F``: a fraction F of the rows repeat an earlier key; the
  write keeps each key's last row), written (a) with ``df.write.parquet`` at the codec lakeops
  tables use (zstd level 1), (b) with
  ``lakeops.spark.write`` into a 4-bucket table on its native path (Spark computes the Paimon
  columns, shuffles by bucket, sorts, writes the Parquet files; the driver commits them), (c)
  with ``lakeops.spark.write(via="python")``: the same shuffle into the ``lakeops`` data source
  (one Python writer per bucket), and (d) for reference, Spark's own floor for any Python writer
  behind that shuffle: the same repartition into a Python ``DataSourceArrowWriter`` that only
  counts rows, and (e) the same physical work done by hand (issue 39, item 6): repartition by
  the key into the bucket count, sort within partitions, ``df.write.parquet`` at zstd level 1.
  The five run interleaved in every round; best of ``--repeat``.
* compaction: a ``write-only`` 4-bucket table built from 4 commits of 500,000 upserts, fully
  compacted by ``lakeops.spark.compact`` (buckets on executors) and, on an identical copy, by
  ``table.compact(full=True)`` in the driver process.

Usage: ``.venv/bin/python benchmarks/bench_spark.py [--rows 2000000] [--repeat 2] [--json]
[--repeats 0.1] [--no-compaction]``
(local[2] on this 2-core machine); ``--json`` prints one JSON document with the measured numbers
instead of the report. Target: the lakeops write at most 1.5x ``df.write.parquet`` (informational;
nothing here fails). The compaction comparison has no target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa

from lakeops import Catalog


def _null_sink() -> type:
    """A Python data source whose writer only counts rows (Spark's transport cost)."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class CountingWriter(DataSourceArrowWriter):
        def write(self, iterator):  # type: ignore[no-untyped-def]
            sum(batch.num_rows for batch in iterator)
            return WriterCommitMessage()

    class NullSink(DataSource):
        @classmethod
        def name(cls) -> str:
            return "lakeops_bench_null"

        # Spark calls writer(schema, overwrite); a sink that only counts needs neither
        def writer(self, schema, overwrite):  # type: ignore[no-untyped-def]  # noqa: ARG002
            return CountingWriter()

    return NullSink


SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
TARGET_WRITE_RATIO = 1.5
#: issue 39, item 6: lakeops.spark.write against the same physical work done by hand in Spark
TARGET_BY_HAND_RATIO = 1.3


def _print_write(
    rows: int,
    repeat: int,
    parquet_s: float,
    native_s: float,
    lakeops_s: float,
    floor_s: float,
    sort_floor_s: float,
    by_hand_s: float,
) -> None:
    """The human-readable write report."""
    print(f"write {rows:,} rows x 4 columns (local[2], best of {repeat}, zstd 1):")
    print(f"  df.write.parquet        {parquet_s:6.2f} s  {rows / parquet_s:>11,.0f} rows/s")
    print(
        f"  bucketed by hand        {by_hand_s:6.2f} s  {rows / by_hand_s:>11,.0f} rows/s   "
        f"(repartition(4, id), sortWithinPartitions(id), parquet); lakeops native "
        f"{native_s / by_hand_s:.2f}x, Python writer {lakeops_s / by_hand_s:.2f}x of it "
        f"(target <= {TARGET_BY_HAND_RATIO:g}x)"
    )
    print(
        f"  lakeops native path     {native_s:6.2f} s  {rows / native_s:>11,.0f} "
        f"rows/s   ratio {native_s / parquet_s:.2f}x (target <= {TARGET_WRITE_RATIO:g}x)"
    )
    print(
        f"  lakeops data source     {lakeops_s:6.2f} s  {rows / lakeops_s:>11,.0f} "
        f"rows/s   ratio {lakeops_s / parquet_s:.2f}x (via='python')"
    )
    print(
        f"  shuffle + Python sink   {floor_s:6.2f} s  {rows / floor_s:>11,.0f} "
        f"rows/s   ratio {floor_s / parquet_s:.2f}x (Spark's floor, nothing written)"
    )
    print(
        f"  shuffle + sort, noop    {sort_floor_s:6.2f} s  {rows / sort_floor_s:>11,.0f} "
        f"rows/s   ratio {sort_floor_s / parquet_s:.2f}x (the native path's floor: its bucket, "
        "shuffle and sort, nothing written)"
    )


def native_floor(df, table):  # type: ignore[no-untyped-def]
    """The native path's bucket, shuffle, sort and Paimon columns without the write."""
    from lakeops.spark.native import _plan

    return _plan(df, table, 0)


def realistic_frame(spark: Any, rows: int, keys: int) -> Any:
    """``rows`` rows of ``SCHEMA``: ``id`` 64-bit hashes of ``keys`` distinct values in no order,
    ``v``, ``f`` random, ``s`` 24 hex digits of a hash (high entropy)."""
    return spark.range(rows).selectExpr(
        f"xxhash64(id % {keys}) as id",
        "id * 7 % 1000003 as v",
        "rand(1) as f",
        "substr(sha2(cast(id as string), 256), 1, 24) as s",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not cache the DataFrame (both writers then compute it)",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument("--no-compaction", action="store_true", help="measure the writes only")
    parser.add_argument(
        "--repeats",
        type=float,
        default=0.0,
        help="fraction of rows whose key an earlier row already has (default 0: unique keys)",
    )
    args = parser.parse_args()
    keys = args.rows - int(args.rows * args.repeats)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lakeops.spark as ls

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    ls.register(spark)
    spark.dataSource.register(_null_sink())
    df = realistic_frame(spark, args.rows, keys)
    if not args.no_cache:
        df = df.cache()
        df.count()
    tmp = tempfile.mkdtemp()
    try:
        parquet_s = native_s = lakeops_s = floor_s = sort_floor_s = by_hand_s = float("inf")
        load = []
        for i in range(args.repeat):
            load.append(os.getloadavg()[0])
            start = time.perf_counter()
            (
                df.write.mode("overwrite")
                .option("compression", "zstd")
                .option("parquet.compression.codec.zstd.level", "1")
                .parquet(f"{tmp}/plain{i}")
            )
            parquet_s = min(parquet_s, time.perf_counter() - start)
            start = time.perf_counter()
            (
                df.repartition(4, "id")
                .sortWithinPartitions("id")
                .write.mode("overwrite")
                .option("compression", "zstd")
                .option("parquet.compression.codec.zstd.level", "1")
                .parquet(f"{tmp}/hand{i}")
            )
            by_hand_s = min(by_hand_s, time.perf_counter() - start)
            catalog = Catalog(f"{tmp}/wh{i}")
            catalog.create_database("db")
            native = catalog.create_table(
                "db.n", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
            )
            start = time.perf_counter()
            took = ls.write(df, native.root, via="native")
            native_s = min(native_s, time.perf_counter() - start)
            assert took == "native", took
            table = catalog.create_table(
                "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
            )
            start = time.perf_counter()
            ls.write(df, table.root, via="python")
            lakeops_s = min(lakeops_s, time.perf_counter() - start)
            start = time.perf_counter()
            df.repartition(4, "id").write.format("lakeops_bench_null").mode("append").save()
            floor_s = min(floor_s, time.perf_counter() - start)
            start = time.perf_counter()
            native_floor(df, native).write.format("noop").mode("overwrite").save()
            sort_floor_s = min(sort_floor_s, time.perf_counter() - start)
            assert native.read(columns=["id"]).num_rows == keys
            assert table.read(columns=["id"]).num_rows == keys
            shutil.rmtree(f"{tmp}/wh{i}", ignore_errors=True)
            shutil.rmtree(f"{tmp}/plain{i}", ignore_errors=True)
            shutil.rmtree(f"{tmp}/hand{i}", ignore_errors=True)
        load.append(os.getloadavg()[0])
        if not args.json:
            _print_write(
                args.rows,
                args.repeat,
                parquet_s,
                native_s,
                lakeops_s,
                floor_s,
                sort_floor_s,
                by_hand_s,
            )
            print(
                f"  1-minute load average during the rounds: {', '.join(f'{x:.2f}' for x in load)}"
            )
        write_report = {
            "parquet_s": parquet_s,
            "native_s": native_s,
            "lakeops_s": lakeops_s,
            "shuffle_python_sink_s": floor_s,
            "shuffle_sort_noop_s": sort_floor_s,
            "bucketed_by_hand_s": by_hand_s,
            "native_by_hand_ratio": native_s / by_hand_s,
            "python_by_hand_ratio": lakeops_s / by_hand_s,
            "native_ratio": native_s / parquet_s,
            "ratio": lakeops_s / parquet_s,
            "sink_ratio": floor_s / parquet_s,
            "target_max_ratio": TARGET_WRITE_RATIO,
            "load_average_1m": load,
        }
        if args.no_compaction:
            if args.json:
                print(json.dumps({"rows": args.rows, "write": write_report}, indent=2))
            return
        catalog = Catalog(f"{tmp}/cwh")
        catalog.create_database("db")
        table = catalog.create_table(
            "db.c",
            schema=SCHEMA,
            primary_keys=["id"],
            options={"bucket": "4", "write-only": "true"},
        )
        for k in range(4):
            ls.write(df.where(f"pmod(id, 4) = {k}").limit(500_000), table.root)
        shutil.copytree(f"{tmp}/cwh", f"{tmp}/cwh2")
        start = time.perf_counter()
        ls.compact(spark, table.root, full=True)
        job_s = time.perf_counter() - start
        copy = Catalog(f"{tmp}/cwh2").get_table("db.c")
        start = time.perf_counter()
        copy.compact(full=True)
        local_s = time.perf_counter() - start
        rows = table.read(columns=["id"]).num_rows
        if args.json:
            report = {
                "rows": args.rows,
                "repeat": args.repeat,
                "cache": not args.no_cache,
                "write": write_report,
                "compaction": {"rows": rows, "spark_job_s": job_s, "in_process_s": local_s},
            }
            print(json.dumps(report, indent=2))
            return
        print(f"full compaction of 4 x 500,000 rows ({rows:,} keys, 4 buckets):")
        print(f"  Spark job (executors)   {job_s:6.2f} s")
        print(f"  table.compact in-process {local_s:5.2f} s")
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
