"""Full compaction and lookup flush of two lakeops checkouts against the compaction floor, in
interleaved fresh processes on one prebuilt table (an A/B of a change on a shared machine).

Run from the repository root::

    git worktree add /tmp/base <commit>          # the checkout to compare with
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_compact_ab.py \\
        --trees /tmp/base,$PWD --rows 8000000 --rounds 3

Once per ``--rows`` (kept in ``--work``), the data of :mod:`bench_scaling` (key ``id`` int64;
``v`` int64, ``f`` float64, ``s`` random 12-character strings; ``--buckets`` fixed buckets) is
written by this checkout into two tables, as that benchmark's ``insert`` and ``upsert`` steps
leave them: ``t`` (defaults) and ``l`` (``write-only``, ``changelog-producer=lookup``); and the
plain Parquet files of its floor. Then each round runs, each in a fresh process: the floor's
full compaction (plain pyarrow on a thread pool of all cores: read each bucket's files, sort by
key and file, keep the last row of each key, write one zstd Parquet file), and for every tree
``table.compact(full=True, parallelism=p)`` of a copy of ``t`` and
``flush_level0(parallelism=p)`` of a copy of ``l``. Printed per run: wall seconds, CPU seconds
(process user + system), cores used (CPU / wall), peak RSS of the process and the load average;
then the medians per step and tree, and their ratio to the floor's median.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_scaling import SCHEMA, _merged, _write_buckets, cores, inputs
from peak_memory import peak_rss_mib


def build(work: Path, rows: int, buckets: int) -> None:
    from lakeops import Catalog

    insert, upsert = inputs(rows)
    catalog = Catalog(str(work / "lakeops"))
    catalog.create_database("bench")
    options = {"bucket": str(buckets)}
    table = catalog.create_table("bench.t", schema=SCHEMA, primary_keys=["id"], options=options)
    lookup_options = {**options, "write-only": "true", "changelog-producer": "lookup"}
    lookup = catalog.create_table(
        "bench.l", schema=SCHEMA, primary_keys=["id"], options=lookup_options
    )
    for t in (table, lookup):
        t.write(insert)
        t.write(upsert)
    floor = work / "floor"
    floor.mkdir()
    _write_buckets(insert, buckets, floor, "insert")
    _write_buckets(upsert, buckets, floor, "upsert")


def measure(step: str, work: Path, buckets: int, parallelism: int) -> dict[str, Any]:
    """One step in this (fresh) process, on a copy of the prebuilt data."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    scratch = Path(tempfile.mkdtemp(prefix="lakeops-ab-", dir=work))
    try:
        if step == "floor":
            floor = work / "floor"

            def one(b: int) -> None:
                pq.write_table(_merged(floor, b), scratch / f"b{b}.parquet", compression="zstd")

            def run() -> None:
                with ThreadPoolExecutor(cores()) as pool:
                    list(pool.map(one, range(buckets)))

        else:
            from lakeops import Catalog

            shutil.copytree(work / "lakeops", scratch / "lakeops")
            catalog = Catalog(str(scratch / "lakeops"))
            if step == "compact":
                table = catalog.get_table("bench.t")

                def run() -> None:
                    table.compact(full=True, parallelism=parallelism)

            else:
                table = catalog.get_table("bench.l")

                def run() -> None:
                    table.flush_level0(parallelism=parallelism)

        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu0 = usage.ru_utime + usage.ru_stime
        start = time.perf_counter()
        run()
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime - cpu0
        return {
            "s": wall,
            "cpu": cpu,
            "cores": cpu / wall,
            "rss_mib": peak_rss_mib(),
            "load": os.getloadavg()[0],
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", required=True, help="checkouts, comma-separated")
    parser.add_argument("--rows", type=int, default=8_000_000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--parallelism", type=int, default=cores())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", default="compact,lookup")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "lakeops-ab"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = Path(args.work) / f"{args.rows}x{args.buckets}"
    if args.child == "build":
        build(work, args.rows, args.buckets)
        print(json.dumps({"built": str(work)}))
        return
    if args.child:
        print(json.dumps(measure(args.child, work, args.buckets, args.parallelism)))
        return
    trees = args.trees.split(",")
    me = Path(__file__).resolve()
    common = ["--rows", str(args.rows), "--buckets", str(args.buckets), "--work", args.work]
    common += ["--parallelism", str(args.parallelism), "--trees", args.trees]

    def child(step: str, tree: str) -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": tree}
        proc = subprocess.run(
            [sys.executable, str(me), "--child", step, *common],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))

    if not work.exists():
        work.mkdir(parents=True)
        try:
            child("build", str(me.parent.parent))
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    print(
        f"rows={args.rows:,} buckets={args.buckets} p={args.parallelism} cores={cores()} "
        f"load average={os.getloadavg()[0]:.2f}"
    )
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    runs = [("floor", "floor", trees[-1])]
    runs += [(step, tree, tree) for step in args.steps.split(",") for tree in trees]
    print(f"{'step':8} {'tree':40} {'s':>7} {'cpu s':>7} {'cores':>6} {'RSS MiB':>8} {'load':>6}")
    for _ in range(args.rounds):
        for step, name, tree in runs:
            r = child(step, tree)
            results.setdefault((step, name), []).append(r)
            print(
                f"{step:8} {name:40} {r['s']:7.2f} {r['cpu']:7.2f} {r['cores']:6.2f} "
                f"{r['rss_mib']:8.0f} {r['load']:6.2f}",
                flush=True,
            )
    floor = statistics.median(r["s"] for r in results[("floor", "floor")])
    print("medians:")
    for (step, name), rs in results.items():
        s = statistics.median(r["s"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        rss = max(r["rss_mib"] for r in rs)
        print(
            f"{step:8} {name:40} {s:7.2f} s  /floor {s / floor:5.2f}  cpu {cpu:6.2f} s  "
            f"{rss:.0f} MiB"
        )


if __name__ == "__main__":
    main()
