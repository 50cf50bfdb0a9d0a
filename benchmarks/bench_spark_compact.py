"""Distributed full compaction through Spark against in-process compaction and a floor.

One table is built (``--buckets`` buckets, ``--keys`` keys in 6 overlapping sorted runs per
bucket: all keys, then 5 updates of a fifth of them, ``write-only``), copied once per phase, and
fully compacted by each phase in a fresh process:

* ``inprocess``: ``table.compact(full=True)`` (its buckets on the process's cores,
  :mod:`lakeops.parallel`);
* ``local[2]`` and ``local-cluster[2,1,1024]``: ``lakeops.spark.compact(spark, path,
  full=True)`` with two executor cores (a session started, and its Python workers warmed with
  one import of lakeops, before the clock starts);
* ``floor``: the least work that produces the same result: pyarrow reads each bucket's files,
  sorts by (key, sequence), keeps the last row per key and writes one Parquet file (zstd), two
  buckets at once on two threads.

Reported per phase: wall seconds of the timed call, CPU seconds of the whole process tree during
it (the driver, its JVM, executors and Python workers) divided by the wall time = cores used, and
peak RSS: of the process for in-process phases; of the driver and of each Spark Python worker
(``VmHWM``, sampled every 0.5 s until the session stops) for the Spark phases. Every phase must
produce ``--keys`` rows. The machine's 1-minute load average is printed before and after each
phase (other work on the machine shows there).

Usage: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_spark_compact.py [--keys 1000000]
[--buckets 4] [--repeat 1] [--source DIR]
[--phases "inprocess;local[2];local-cluster[2,1,1024];floor"] [--json]``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
PHASES = ("inprocess", "local[2]", "local-cluster[2,1,1024]", "floor")


def _rows(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids),
            "v": pa.array(rng.integers(0, 10**9, len(ids))),
            "f": pa.array(rng.random(len(ids))),
            "s": pc.binary_join_element_wise(
                "s", pc.cast(pa.array(ids % 100_000), pa.string()), ""
            ),
        },
        schema=SCHEMA,
    )


def build(warehouse: str, keys: int, buckets: int) -> None:
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": str(buckets), "write-only": "true"},
    )
    rng = np.random.default_rng(3)
    table.write(_rows(rng.permutation(keys), rng))
    for _ in range(5):
        table.write(_rows(rng.choice(keys, size=keys // 5, replace=False), rng))


# ------------------------------------------------------------------- process-tree accounting
def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (its waited-for children included)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / ticks


def _status(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Tree:
    """CPU and peak memory of this process and everything below it, sampled every 0.5 s (and
    at start and stop: Spark's JVMs and Python workers live until the session stops, and
    ``VmHWM`` keeps a process's peak, so the samples lose nothing but short-lived processes;
    sampling rarely keeps the sampler's own CPU out of the figures)."""

    def __init__(self) -> None:
        self.peak_kib: dict[int, int] = {}
        self.cpu: dict[int, float] = {}
        self.kind: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        for pid in _descendants(os.getpid()):
            hwm = _status(pid, "VmHWM")
            if hwm:
                self.peak_kib[pid] = max(self.peak_kib.get(pid, 0), hwm)
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), _cpu_seconds(pid))
            if pid not in self.kind:
                self.kind[pid] = self._kind(pid)

    def _kind(self, pid: int) -> str:
        """driver, jvm, python-daemon (pyspark.daemon, forks the workers) or python (a
        worker: forked by a daemon, so the same command line, but a daemon's child)."""
        if pid == os.getpid():
            return "driver"
        cmd = _cmdline(pid)
        if "java" in cmd.split(" ", 1)[0]:
            return "jvm"
        if "pyspark.daemon" in cmd and "pyspark.daemon" not in _cmdline(_parent(pid)):
            return "python-daemon"
        return "python"

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            self.sample()

    def start(self) -> dict[int, float]:
        self.sample()
        self._thread.start()
        return dict(self.cpu)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def cpu_by_kind(self, before: dict[int, float]) -> dict[str, float]:
        """CPU seconds spent since ``before`` (a :meth:`start` result), by process kind."""
        spent: dict[str, float] = {}
        for pid, seconds in self.cpu.items():
            kind = self.kind.get(pid, "python")
            spent[kind] = spent.get(kind, 0.0) + seconds - before.get(pid, 0.0)
        return {k: round(v, 2) for k, v in sorted(spent.items())}


def _load() -> float:
    return os.getloadavg()[0]


# ------------------------------------------------------------------------------------ phases
def _rows_out(warehouse: str) -> int:
    table = Catalog(warehouse).get_table("db.t")
    return sum(e.file.row_count for e in table.store.live_entries(table.latest_snapshot()))


def phase_inprocess(warehouse: str) -> dict[str, Any]:
    table = Catalog(warehouse).get_table("db.t")
    tree = Tree()
    before = tree.start()
    start = time.perf_counter()
    snapshot = table.compact(full=True)
    seconds = time.perf_counter() - start
    tree.stop()
    assert snapshot is not None
    cpu = sum(tree.cpu.values()) - sum(before.values())
    cpu_by_kind = tree.cpu_by_kind(before)
    return {
        "seconds": seconds,
        "cores_used": cpu / seconds,
        "cpu_seconds": cpu,
        "cpu_seconds_by_process": cpu_by_kind,
        "driver_peak_mib": _status(os.getpid(), "VmHWM") / 1024,
        "rows_out": _rows_out(warehouse),
    }


def phase_spark(warehouse: str, master: str) -> dict[str, Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lakeops.spark as ls

    tree = Tree()
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-spark-compact")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
        .getOrCreate()
    )
    cores = spark.sparkContext.defaultParallelism

    def warm(_: int) -> int:
        import lakeops.compact.planner
        import lakeops.spark.tables

        del lakeops  # imported as a first compaction would, nothing more

        return os.getpid()

    spark.sparkContext.parallelize(range(cores), cores).map(warm).collect()
    table = Catalog(warehouse).get_table("db.t")
    before = tree.start()
    start = time.perf_counter()
    snapshot = ls.compact(spark, table.root, full=True)
    seconds = time.perf_counter() - start
    tree.stop()
    spark.stop()
    assert snapshot is not None
    cpu = sum(tree.cpu.values()) - sum(before.get(p, 0.0) for p in tree.cpu)
    cpu_by_kind = tree.cpu_by_kind(before)
    workers = sorted(
        (kib / 1024 for pid, kib in tree.peak_kib.items() if tree.kind.get(pid) == "python"),
        reverse=True,
    )
    return {
        "seconds": seconds,
        "executor_cores": cores,
        "cores_used": cpu / seconds,
        "cpu_seconds": cpu,
        "cpu_seconds_by_process": cpu_by_kind,
        "driver_peak_mib": _status(os.getpid(), "VmHWM") / 1024,
        "python_worker_peak_mib": workers,
        "rows_out": _rows_out(warehouse),
    }


def phase_floor(warehouse: str, out: str) -> dict[str, Any]:
    paths = sorted(glob.glob(f"{warehouse}/db.db/t/bucket-*/*.parquet"))
    buckets = sorted({p.split("bucket-")[1].split("/")[0] for p in paths})

    def one(bucket: str) -> int:
        files = [p for p in paths if f"bucket-{bucket}/" in p]
        data = pa.concat_tables([pq.read_table(p) for p in files])
        order = pc.sort_indices(
            data, sort_keys=[("_KEY_id", "ascending"), ("_SEQUENCE_NUMBER", "ascending")]
        )
        data = data.take(order)
        key = data.column("_KEY_id").to_numpy()
        merged = data.filter(pa.array(np.append(key[1:] != key[:-1], True)))
        pq.write_table(
            merged, f"{out}/bucket-{bucket}.parquet", compression="zstd", compression_level=1
        )
        return int(merged.num_rows)

    tree = Tree()
    before = tree.start()
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        rows = sum(pool.map(one, buckets))
    seconds = time.perf_counter() - start
    tree.stop()
    cpu = sum(tree.cpu.values()) - sum(before.values())
    cpu_by_kind = tree.cpu_by_kind(before)
    return {
        "seconds": seconds,
        "cores_used": cpu / seconds,
        "cpu_seconds": cpu,
        "cpu_seconds_by_process": cpu_by_kind,
        "driver_peak_mib": _status(os.getpid(), "VmHWM") / 1024,
        "rows_out": rows,
    }


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-4000:])
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--phases", default=";".join(PHASES), help="phases, separated by ;")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--source", help="keep the built table in this directory and reuse it on later runs"
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        if args.phase == "inprocess":
            result = phase_inprocess(args.warehouse)
        elif args.phase == "floor":
            result = phase_floor(args.warehouse, args.out)
        else:
            result = phase_spark(args.warehouse, args.phase)
        print(json.dumps(result))
        return
    phases = [p for p in args.phases.split(";") if p]
    results: dict[str, list[dict[str, Any]]] = {p: [] for p in phases}
    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or os.path.join(tmp, "source")
        if not os.path.exists(os.path.join(source, "db.db", "t")):
            build(source, args.keys, args.buckets)
        data_mib = (
            sum(os.path.getsize(p) for p in glob.glob(f"{source}/db.db/t/bucket-*/*.parquet"))
            / 2**20
        )
        print(
            f"{args.keys:,} keys, 6 overlapping runs x {args.buckets} buckets "
            f"({args.keys * 2:,} input rows, {data_mib:.0f} MiB), cores here: "
            f"{len(os.sched_getaffinity(0))}",
            file=sys.stderr,
        )
        for run in range(args.repeat):
            for phase in phases:  # interleaved: each repeat runs every phase once
                warehouse = os.path.join(tmp, f"run{run}-{len(results[phase])}-{phase[:5]}")
                shutil.copytree(source, warehouse)
                out = os.path.join(tmp, "floor-out")
                os.makedirs(out, exist_ok=True)
                load_before = _load()
                result = _child(["--phase", phase, "--warehouse", warehouse, "--out", out])
                result["load_before"], result["load_after"] = load_before, _load()
                assert result["rows_out"] == args.keys, (phase, result)
                results[phase].append(result)
                shutil.rmtree(warehouse)
                shutil.rmtree(out)
                print(f"{phase}: {json.dumps(result)}", file=sys.stderr)
    if args.json:
        print(json.dumps({"keys": args.keys, "buckets": args.buckets, "results": results}))
        return
    print(
        f"{'phase':26} {'best s':>7} {'all s':>20} {'CPU s':>6} {'cores used':>10} "
        f"{'driver MiB':>10} "
        f"{'worker peak MiB':>22} {'load 1m':>12}"
    )
    for phase, runs in results.items():
        best = min(runs, key=lambda r: r["seconds"])
        workers = best.get("python_worker_peak_mib")
        times = " ".join(f"{r['seconds']:.2f}" for r in runs)
        print(
            f"{phase:26} {best['seconds']:>7.2f} "
            f"{times:>20} "
            f"{best['cpu_seconds']:>6.2f} {best['cores_used']:>10.2f} "
            f"{best['driver_peak_mib']:>10.0f} "
            f"{' '.join(f'{w:.0f}' for w in workers) if workers else '-':>22} "
            f"{best['load_before']:>5.2f}->{best['load_after']:<5.2f}"
        )


if __name__ == "__main__":
    main()
