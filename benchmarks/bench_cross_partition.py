"""Cross-partition upsert: 1,000,000 rows (30% of them moving partition) into a table of
5,000,000 keys, in-process (``table.write``) and through Spark (``lakeops.spark.write``).

Table: ``user_id BIGINT`` (primary key), ``city STRING`` (partition, 50 cities), ``name
STRING``, ``score BIGINT``; ``bucket = -1`` (cross-partition upsert), default target row number.
The upsert updates 700,000 existing users in their city and moves 300,000 to another city
(deduplicate: a retraction into the old city, the row into the new one).

Each phase runs in a fresh process on its own copy of the base table, so its peak RSS is its
own: ``VmHWM`` of the process for in-process, and for Spark the peak of the summed RSS of the
whole process tree (driver, JVM, Python workers), sampled every 0.2 s. The result is checked:
exactly 5,000,000 keys, the moved users only in their new city.

A third phase sizes the global key index alone at ``--index-keys`` (default 20,000,000): the
Arrow bytes it holds, the process's peak RSS, and the time to resolve the same 1,000,000-row
upsert against it.

Usage: ``.venv/bin/python benchmarks/bench_cross_partition.py [--keys 5000000] [--upserts
1000000] [--index-keys 20000000] [--skip-spark] [--json]``; ``--json`` prints one JSON document
with the measured numbers instead of the report (progress still goes to stderr). No target.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np
import pyarrow as pa
from peak_memory import peak_rss_mib

SCHEMA = pa.schema(
    [("user_id", pa.int64()), ("city", pa.string()), ("name", pa.string()), ("score", pa.int64())]
)
CITIES = 50


def _users(ids: np.ndarray, cities: np.ndarray, score: int) -> pa.Table:
    city = pa.array([f"city{c:02d}" for c in range(CITIES)]).take(pa.array(cities))
    name = pa.array([f"user{i}" for i in range(0, 1000)]).take(pa.array(ids % 1000))
    return pa.table(
        {"user_id": ids, "city": city, "name": name, "score": np.full(len(ids), score)},
        schema=SCHEMA,
    )


def _upsert(keys: int, upserts: int) -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(7)
    ids = rng.choice(keys, size=upserts, replace=False).astype(np.int64)
    home = ids % CITIES
    moving = rng.random(upserts) < 0.3
    cities = np.where(moving, (home + 1 + rng.integers(0, CITIES - 1, upserts)) % CITIES, home)
    return _users(ids, cities, 2), ids[moving]


def _build(path: str, keys: int) -> None:
    from lakeops import Catalog

    catalog = Catalog(path)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.users",
        schema=SCHEMA,
        primary_keys=["user_id"],
        partition_keys=["city"],
        options={"bucket": "-1", "write-only": "true"},
    )
    ids = np.arange(keys, dtype=np.int64)
    table.write(_users(ids, ids % CITIES, 1))


def _check(path: str, keys: int, upserts: int) -> None:
    from lakeops import Catalog

    table = Catalog(path).get_table("db.users")
    state = table.read(columns=["user_id", "city"])
    assert state.num_rows == keys, f"{state.num_rows} rows, expected {keys}"
    upsert, moved = _upsert(keys, upserts)
    sample = pa.table({"user_id": moved[:1000]})
    got = state.join(sample, "user_id", join_type="inner")
    expected = dict(zip(upsert["user_id"].to_pylist(), upsert["city"].to_pylist(), strict=True))
    assert all(
        expected[u] == c
        for u, c in zip(got["user_id"].to_pylist(), got["city"].to_pylist(), strict=True)
    )


def _phase_local(path: str, keys: int, upserts: int) -> dict:
    from lakeops import Catalog

    upsert, _ = _upsert(keys, upserts)
    table = Catalog(path).get_table("db.users")
    start = time.perf_counter()
    table.write(upsert)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_rss_mib": peak_rss_mib(),
    }


def _phase_index(index_keys: int, upserts: int) -> dict:
    """A GlobalIndex of ``index_keys`` keys loaded from arrays, then one resolve."""
    from lakeops.bucket.cross_partition import GlobalIndex
    from lakeops.format.schema import TableSchema
    from lakeops.options import TableOptions
    from lakeops.write.records import to_records

    schema = TableSchema.from_arrow(
        SCHEMA, primary_keys=["user_id"], partition_keys=["city"], options={"bucket": "-1"}
    )
    index = GlobalIndex(schema, "deduplicate", 2_000_000)
    step = 5_000_000
    for lo in range(0, index_keys, step):
        ids = np.arange(lo, min(lo + step, index_keys), dtype=np.int64)
        keys = pa.table(
            {
                "user_id": ids,
                "city": pa.array([f"city{c:02d}" for c in range(CITIES)]).take(
                    pa.array(ids % CITIES)
                ),
            }
        )
        index.load(keys, (ids // (CITIES * 2_000_000)).astype(np.int32))
    upsert, _ = _upsert(index_keys, upserts)
    records = to_records(upsert, schema, TableOptions.from_schema(schema))
    start = time.perf_counter()
    index.resolve(records)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "index_mib": index.table.nbytes / 2**20,
        "peak_rss_mib": peak_rss_mib(),
    }


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def _phase_spark(path: str, keys: int, upserts: int) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lakeops.spark as ls

    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(os.getpid()))
            time.sleep(0.2)

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    upsert, _ = _upsert(keys, upserts)
    df = spark.createDataFrame(upsert.to_pandas()).cache()
    df.count()
    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    ls.write(df, f"{path}/db.db/users")
    seconds = time.perf_counter() - start
    stop.set()
    spark.stop()
    return {"seconds": seconds, "peak_rss_mib": peak[0] / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--upserts", type=int, default=1_000_000)
    parser.add_argument("--index-keys", type=int, default=20_000_000)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument("--phase", choices=["local", "spark", "index"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "index":
        print(json.dumps(_phase_index(args.keys, args.upserts)))
        return
    if args.phase:
        run = _phase_local if args.phase == "local" else _phase_spark
        print(json.dumps(run(args.path, args.keys, args.upserts)))
        return

    def say(text: str) -> None:
        """Print a line of the human report (nothing under ``--json``)."""
        if not args.json:
            print(text)

    report: dict[str, Any] = {
        "keys": args.keys,
        "upserts": args.upserts,
        "index_keys": args.index_keys,
        "phases": {},
    }
    tmp = tempfile.mkdtemp(prefix="lakeops-bench-xp-")
    try:
        base = f"{tmp}/base"
        start = time.perf_counter()
        _build(base, args.keys)
        print(f"built {args.keys:,} keys in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        phases = ["local"] if args.skip_spark else ["local", "spark"]
        say(
            f"cross-partition upsert of {args.upserts:,} rows (30% moving) into {args.keys:,} keys:"
        )
        for phase in phases:
            path = f"{tmp}/{phase}"
            shutil.copytree(base, path)
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--phase",
                    phase,
                    "--path",
                    path,
                    "--keys",
                    str(args.keys),
                    "--upserts",
                    str(args.upserts),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            _check(path, args.keys, args.upserts)
            label = (
                "table.write (in-process)" if phase == "local" else "lakeops.spark.write local[2]"
            )
            rate = args.upserts / result["seconds"]
            report["phases"][phase] = {**result, "rows_per_s": rate}
            say(
                f"  {label:30s} {result['seconds']:6.2f} s  {rate:>10,.0f} rows/s  "
                f"peak RSS {result['peak_rss_mib']:,.0f} MiB"
            )
            shutil.rmtree(path, ignore_errors=True)
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--phase",
                "index",
                "--keys",
                str(args.index_keys),
                "--upserts",
                str(args.upserts),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
        report["phases"]["index"] = {**result, "rows_per_s": args.upserts / result["seconds"]}
        if args.json:
            print(json.dumps(report, indent=2))
            return
        print(
            f"global key index of {args.index_keys:,} keys: {result['index_mib']:,.0f} MiB of "
            f"Arrow; resolving the upsert {result['seconds']:.2f} s; peak RSS "
            f"{result['peak_rss_mib']:,.0f} MiB"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
