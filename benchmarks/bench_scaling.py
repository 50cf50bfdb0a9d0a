"""Scaling benchmark: how lakeops' write, upsert, merged read and full compaction use the cores.

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_scaling.py               # 1M rows
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_scaling.py --rows 8000000

For each parallelism (1, 2 and all cores by default; ``--parallelism 1,4,16``) a fresh Python
process (this script with the hidden ``--child``) creates a table of ``--buckets`` fixed
buckets (key ``id`` int64; ``v`` int64, ``f`` float64, ``s`` random 12-character strings) and
measures, each step timed alone:

1. ``insert``: ``table.write(data, parallelism=p)`` of ``--rows`` rows, one commit (with the
   in-writer compaction Paimon's defaults ask for, in the background);
2. ``insert-wo``: the same insert into a second table with ``write-only=true`` and
   ``changelog-producer=lookup`` (no in-writer compaction: the bound for ``insert``);
3. ``upsert``: ``table.write`` of 30 % of the keys with new values (the same upsert then goes,
   untimed, into the second table);
4. ``read``: ``table.read()`` of the merged table (must hold ``--rows`` rows);
5. ``compact``: ``table.compact(full=True, parallelism=p)``;
6. ``lookup``: ``flush_level0(parallelism=p)`` of the second table: its level-0 files are
   compacted with lookups into the levels below and the changelog is produced (its floor is the
   compaction floor).

A plain-pyarrow floor runs in its own process, on a thread pool of all cores: split the rows by
``id % buckets``, sort each bucket by ``id`` and write it as one zstd Parquet file (insert,
upsert); read every file back and keep the last row of each key per bucket (read); read, merge
and write each bucket again (compact).

Printed per step: seconds, rows/s, cores used (process CPU time / wall time of the step) and
the process's peak RSS after the step (``ru_maxrss``: a running maximum over the steps of one
process).

Figures on the 2-core development machine (shared and loaded: load average 1.75-2.6),
1M and 8M rows, 8 buckets, 2026-11-26: see ``benchmarks/scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SEED = 20261126
STEPS = ("insert", "insert-wo", "upsert", "read", "compact", "lookup")
#: the floor step each step is measured against
FLOOR_OF = {"insert-wo": "insert", "lookup": "compact"}
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
    ]
)


def cores() -> int:
    return len(os.sched_getaffinity(0))


def strings(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random 12-character lowercase strings, built without per-row Python."""
    codes = rng.integers(97, 123, size=n * 12, dtype=np.uint8)
    offsets = np.arange(0, n * 12 + 1, 12, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(codes.tobytes()))


def data(rows: int, seed: int, ids: np.ndarray | None = None) -> pa.Table:
    rng = np.random.default_rng(seed)
    if ids is None:
        ids = rng.permutation(rows).astype(np.int64)
    n = len(ids)
    return pa.table(
        [
            pa.array(ids),
            pa.array(rng.integers(0, 1 << 40, n)),
            pa.array(rng.random(n)),
            strings(rng, n),
        ],
        schema=SCHEMA,
    )


def inputs(rows: int) -> tuple[pa.Table, pa.Table]:
    """The insert and the upsert (30 % of the keys, new values)."""
    rng = np.random.default_rng(SEED + 1)
    upsert_ids = rng.choice(rows, size=rows * 3 // 10, replace=False).astype(np.int64)
    return data(rows, SEED), data(rows, SEED + 2, upsert_ids)


def timed(run: Callable[[], Any]) -> dict[str, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    return {"s": wall, "cores": cpu / wall if wall else 0.0, "rss_mib": usage.ru_maxrss / 1024}


# ------------------------------------------------------------------------- lakeops
def run_lakeops(rows: int, buckets: int, parallelism: int, root: str) -> dict[str, Any]:
    from lakeops import Catalog

    insert, upsert = inputs(rows)
    catalog = Catalog(root)
    catalog.create_database("bench")
    table = catalog.create_table(
        "bench.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": str(buckets)}
    )
    lookup = catalog.create_table(
        "bench.l",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": str(buckets), "write-only": "true", "changelog-producer": "lookup"},
    )
    out: dict[str, Any] = {}
    out["insert"] = timed(lambda: table.write(insert, parallelism=parallelism))
    out["insert-wo"] = timed(lambda: lookup.write(insert, parallelism=parallelism))
    out["upsert"] = timed(lambda: table.write(upsert, parallelism=parallelism))
    lookup.write(upsert, parallelism=parallelism)
    read: list[pa.Table] = []
    out["read"] = timed(lambda: read.append(table.read()))
    assert read[0].num_rows == rows, read[0].num_rows
    out["compact"] = timed(lambda: table.compact(full=True, parallelism=parallelism))
    out["lookup"] = timed(lambda: lookup.flush_level0(parallelism=parallelism))
    return out


# ------------------------------------------------------------------------- floor
def _split(table: pa.Table, buckets: int) -> list[pa.Table]:
    bucket = pa.array(table["id"].to_numpy() % buckets)
    order = pc.sort_indices(bucket)
    ordered = table.take(order)
    counts = np.bincount(bucket.to_numpy(), minlength=buckets)
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [ordered.slice(int(starts[b]), int(counts[b])) for b in range(buckets)]


def _write_buckets(table: pa.Table, buckets: int, directory: Path, name: str) -> None:
    parts = _split(table, buckets)

    def one(b: int) -> None:
        part = parts[b].sort_by("id")
        (directory / f"b{b}").mkdir(exist_ok=True)
        pq.write_table(part, directory / f"b{b}" / f"{name}.parquet", compression="zstd")

    with ThreadPoolExecutor(cores()) as pool:
        list(pool.map(one, range(buckets)))


def _merged(directory: Path, b: int) -> pa.Table:
    files = sorted((directory / f"b{b}").glob("*.parquet"))
    parts = [pq.read_table(f) for f in files]
    tagged = [
        p.append_column("_seq", pa.array(np.full(p.num_rows, i, dtype=np.int64)))
        for i, p in enumerate(parts)
    ]
    table = pa.concat_tables(tagged).sort_by([("id", "ascending"), ("_seq", "ascending")])
    ids = table["id"].to_numpy()
    last = np.ones(len(ids), dtype=bool)
    last[:-1] = ids[1:] != ids[:-1]
    return table.filter(pa.array(last)).drop_columns(["_seq"])


def run_floor(rows: int, buckets: int, root: str) -> dict[str, Any]:
    insert, upsert = inputs(rows)
    directory = Path(root)
    out: dict[str, Any] = {}
    out["insert"] = timed(lambda: _write_buckets(insert, buckets, directory, "insert"))
    out["upsert"] = timed(lambda: _write_buckets(upsert, buckets, directory, "upsert"))

    def read() -> None:
        with ThreadPoolExecutor(cores()) as pool:
            merged = list(pool.map(lambda b: _merged(directory, b), range(buckets)))
        assert sum(t.num_rows for t in merged) == rows

    out["read"] = timed(read)

    def compact() -> None:
        def one(b: int) -> None:
            merged = _merged(directory, b)
            pq.write_table(merged, directory / f"b{b}" / "compacted.pq", compression="zstd")

        with ThreadPoolExecutor(cores()) as pool:
            list(pool.map(one, range(buckets)))

    out["compact"] = timed(compact)
    return out


# ------------------------------------------------------------------------- driver
def child(args: argparse.Namespace) -> None:
    root = tempfile.mkdtemp(prefix="lakeops-scaling-")
    try:
        if args.child == "floor":
            result = run_floor(args.rows, args.buckets, root)
        else:
            result = run_lakeops(args.rows, args.buckets, int(args.child), root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--parallelism", default=f"1,2,{cores()}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    runs = ["floor", *dict.fromkeys(args.parallelism.split(","))]
    print(
        f"rows={args.rows:,} buckets={args.buckets} cores={cores()} "
        f"load average={os.getloadavg()[0]:.2f}"
    )
    results: dict[str, dict[str, Any]] = {}
    for run in runs:
        cmd = [sys.executable, __file__, "--child", run, "--rows", str(args.rows)]
        cmd += ["--buckets", str(args.buckets)]
        proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
        results[run] = json.loads(proc.stdout.strip().splitlines()[-1])
    header = ("step", "run", "s", "rows/s", "/floor", "cores", "RSS MiB")
    print("{:8} {:>8} {:>7} {:>10} {:>7} {:>6} {:>8}".format(*header))
    for step in STEPS:
        n = args.rows if step != "upsert" else args.rows * 3 // 10
        for run in runs:
            if run == "floor" and step in FLOOR_OF:
                continue
            r = results[run][step]
            ratio = r["s"] / results["floor"][FLOOR_OF.get(step, step)]["s"]
            name = run if run == "floor" else f"p={run}"
            print(
                f"{step:8} {name:>8} {r['s']:7.2f} {n / r['s']:10,.0f} {ratio:7.2f} "
                f"{r['cores']:6.2f} {r['rss_mib']:8.0f}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
