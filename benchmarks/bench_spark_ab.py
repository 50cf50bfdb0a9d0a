"""``lakeops.spark.write``'s native path of two lakeops checkouts against the same work done by
hand in Spark, interleaved in every round of one ``local[2]`` session (an A/B of a change to
``lakeops/spark/native.py`` on a shared machine, where single runs vary by a fifth).

Run from the repository root::

    git worktree add /tmp/base <commit>          # the checkout to compare with
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_spark_ab.py \\
        --base /tmp/base --rows 20000000 --rounds 3

The data is :mod:`bench_spark`'s (keys: 64-bit hashes in no order, unique; ``s``: 24 hex digits
of a hash), cached. After one untimed warm-up round (the JVM compiles as it goes), each round
runs by hand (``repartition(4, id)``, ``sortWithinPartitions(id)``, ``df.write.parquet`` at zstd
level 1), then the base checkout's ``write_native`` and this checkout's (in turn first and
second from round to round), each into a new table with 4 buckets
(the base's ``native.py`` is loaded beside this checkout's package, so both use this
checkout's other modules). Printed per round: wall seconds and CPU seconds (the driver, the JVM
and its Python workers) of each, then each checkout's ratio to the hand-made write of the same
round.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_spark import SCHEMA, realistic_frame
from bench_spark_stages import _cpu_seconds, local_session

from lakeops import Catalog


def _base_native(tree: str) -> Any:
    """The base checkout's ``lakeops/spark/native.py`` as a module of its own."""
    spec = importlib.util.spec_from_file_location(
        "base_native", os.path.join(tree, "lakeops", "spark", "native.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_native"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the checkout to compare with")
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import lakeops.spark.native as this_native

    base_native = _base_native(args.base)
    spark = local_session()
    df = realistic_frame(spark, args.rows, args.rows).cache()
    df.count()
    tmp = tempfile.mkdtemp()

    def table() -> Any:
        catalog = Catalog(f"{tmp}/wh{time.monotonic_ns()}")
        catalog.create_database("db")
        return catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
        )

    def by_hand() -> None:
        (
            df.repartition(4, "id")
            .sortWithinPartitions("id")
            .write.mode("overwrite")
            .option("compression", "zstd")
            .option("parquet.compression.codec.zstd.level", "1")
            .parquet(f"{tmp}/hand")
        )

    runs = {
        "by hand": by_hand,
        "base": lambda: base_native.write_native(df, table(), overwrite=False),
        "this": lambda: this_native.write_native(df, table(), overwrite=False),
    }
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    took: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    try:
        for run in runs.values():
            run()
        for round_ in range(args.rounds):
            order = ["by hand", "base", "this"] if round_ % 2 == 0 else ["by hand", "this", "base"]
            for name in order:
                cpu = _cpu_seconds(jvm)
                start = time.perf_counter()
                runs[name]()
                took[name].append((time.perf_counter() - start, _cpu_seconds(jvm) - cpu))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.rows:,} rows, local[2], {args.rounds} interleaved rounds after a warm-up")
    for name, times in took.items():
        walls = " ".join(f"{w:6.2f}" for w, _ in times)
        cpus = " ".join(f"{c:6.2f}" for _, c in times)
        print(f"  {name:8s} wall {walls}   CPU {cpus}")
    for name in ("base", "this"):
        pairs = list(zip(took[name], took["by hand"], strict=True))
        walls = " ".join(f"{a[0] / b[0]:.2f}" for a, b in pairs)
        cpus = " ".join(f"{a[1] / b[1]:.2f}" for a, b in pairs)
        print(f"  {name} / by hand: wall {walls}   CPU {cpus}")
    print(f"  1-minute load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
