"""Where the native write path's time goes: the same cached DataFrame written by Spark step by
step, in one local[2] session, each stage interleaved in every round, best of ``--repeat``.

Stages (2,000,000 rows x 4 columns id, v, f, s unless ``--rows``; 4 buckets by ``id``):

* ``parquet_z1`` / ``parquet_z3``: ``df.write.parquet`` at zstd level 1 (Paimon's
  ``file.compression.zstd-level`` default) and at Spark's default level (3);
* ``parquet_z1_nodict``: zstd 1 without dictionary pages;
* ``parquet_z1_cols``: the same plus the Paimon columns (``_KEY_id``, ``_SEQUENCE_NUMBER``,
  ``_VALUE_KIND``), no shuffle;
* ``bucket_noop``: Paimon's bucket (JVM expression) into ``noop``;
* ``shuffle_noop`` / ``shuffle_sort_noop``: repartition by bucket (and sort within
  partitions by bucket, key) into ``noop``;
* ``shuffle_sort_parquet``: the same, written with ``partitionBy(bucket)``, 4 columns;
* ``shuffle_sort_cols_parquet``: the same plus the Paimon columns (the native path without
  the window); ``..._nodict``: without dictionary pages;
* ``native_plan_noop`` / ``native_plan_parquet``: the native path's plan (one task per
  bucket, sorted by key) into ``noop`` / Parquet;
* ``native_write``: ``lakeops.spark.write(via="native")``, ``python_write``: ``via="python"``.

Every stage prints its wall seconds and the CPU seconds of the driver, the JVM and the JVM's
Python workers (robust to other processes' load, unlike wall time; a stage that outlives Python
workers started by an earlier stage can read low, even negative, when they exit unreaped).

Usage: ``nice .venv/bin/python benchmarks/bench_spark_stages.py [--rows N] [--repeat R]
[--only a,b]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])


def _cpu_seconds(jvm_pid: int) -> float:
    """CPU seconds used so far by this (driver) process, the JVM and the JVM's live
    descendants (Python workers) plus the reaped children the JVM waited for: a figure the
    load of other processes on the machine does not inflate the way it inflates wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    total = sum(os.times()[:2])
    todo = [jvm_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / tick
    return total


def local_session() -> Any:
    """The ``local[2]`` session of the Spark benchmarks: 4 shuffle partitions, no UI."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated stage names")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import functions as F

    import lakeops.spark as ls
    from lakeops.format.types import DataType
    from lakeops.spark.bucket_expr import bucket_steps
    from lakeops.spark.native import _plan

    spark = local_session()
    ls.register(spark)
    df = spark.range(args.rows).selectExpr(
        "id",
        "id * 7 % 1000003 as v",
        "rand(1) as f",
        "concat('s', cast(id % 100000 as string)) as s",
    )
    df = df.cache()
    df.count()
    tmp = tempfile.mkdtemp()

    def with_bucket(frame: Any) -> Any:
        steps = bucket_steps(["id"], [DataType.parse("BIGINT NOT NULL")], 4, "b")
        assert steps is not None
        for name, expr in steps:
            frame = frame.withColumn(name, F.expr(expr))
        return frame.drop(*[name for name, _ in steps[:-1]])

    def cols(frame: Any) -> Any:
        return frame.select(
            F.col("id").alias("_KEY_id"),
            F.monotonically_increasing_id().alias("_SEQUENCE_NUMBER"),
            F.lit(0).cast("tinyint").alias("_VALUE_KIND"),
            "id",
            "v",
            "f",
            "s",
            *(["b"] if "b" in frame.columns else []),
        )

    def parquet(
        frame: Any, path: str, level: str = "1", by: tuple[str, ...] = (), dictionary: bool = True
    ) -> None:
        w = frame.write.mode("overwrite").option("compression", "zstd")
        w = w.option("parquet.compression.codec.zstd.level", level)
        if not dictionary:
            w = w.option("parquet.enable.dictionary", "false")
        if by:
            w = w.partitionBy(*by)
        w.parquet(path)

    def noop(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def sorted_frame() -> Any:
        return with_bucket(df).repartition(2, "b").sortWithinPartitions("b", "id")

    def table(name: str) -> Any:
        catalog = Catalog(f"{tmp}/wh_{name}_{time.monotonic_ns()}")
        catalog.create_database("db")
        return catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
        )

    stages: dict[str, Callable[[], None]] = {
        "parquet_z1": lambda: parquet(df, f"{tmp}/p1"),
        "parquet_z3": lambda: parquet(df, f"{tmp}/p3", "3"),
        "parquet_z1_nodict": lambda: parquet(df, f"{tmp}/pn", dictionary=False),
        "parquet_z1_cols": lambda: parquet(cols(df), f"{tmp}/pc"),
        "bucket_noop": lambda: noop(with_bucket(df)),
        "shuffle_noop": lambda: noop(with_bucket(df).repartition(2, "b")),
        "shuffle_sort_noop": lambda: noop(sorted_frame()),
        "shuffle_sort_parquet": lambda: parquet(sorted_frame(), f"{tmp}/ss", by=("b",)),
        "shuffle_sort_cols_parquet": lambda: parquet(cols(sorted_frame()), f"{tmp}/ssc", by=("b",)),
        "shuffle_sort_cols_parquet_nodict": lambda: parquet(
            cols(sorted_frame()), f"{tmp}/sscn", by=("b",), dictionary=False
        ),
        "native_plan_noop": lambda: noop(_plan(df, table("np"), 0)),
        "native_plan_parquet": lambda: parquet(_plan(df, table("npp"), 0), f"{tmp}/npp"),
        "native_plan_parquet_nodict": lambda: parquet(
            _plan(df, table("nppn"), 0), f"{tmp}/nppn", dictionary=False
        ),
        "native_write": lambda: ls.write(df, table("n").root, via="native") and None,
        "python_write": lambda: ls.write(df, table("py").root, via="python") and None,
    }
    chosen = [s for s in args.only.split(",") if s] or list(stages)
    best = {name: float("inf") for name in chosen}
    cpu = {name: float("inf") for name in chosen}
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    load = []
    try:
        for _ in range(args.repeat):
            load.append(os.getloadavg()[0])
            for name in chosen:
                before = _cpu_seconds(jvm)
                start = time.perf_counter()
                stages[name]()
                best[name] = min(best[name], time.perf_counter() - start)
                cpu[name] = min(cpu[name], _cpu_seconds(jvm) - before)
        load.append(os.getloadavg()[0])
        base = best.get("parquet_z1")
        cpu_base = cpu.get("parquet_z1")
        print(f"{args.rows:,} rows, local[2], best of {args.repeat} (wall s, CPU s):")
        for name in chosen:
            ratio = f"  {best[name] / base:5.2f}x" if base else ""
            cpu_ratio = f"  {cpu[name] / cpu_base:5.2f}x" if cpu_base else ""
            print(f"  {name:28s} {best[name]:7.2f} s{ratio}   cpu {cpu[name]:7.2f} s{cpu_ratio}")
        print(f"  1-minute load average: {', '.join(f'{x:.2f}' for x in load)}")
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
