"""Sort compaction of an append table: N rows in many files, ``compact(order_by=["x", "y"],
strategy="zorder")`` — against plain pyarrow, and what it does to pruning.

Phases, each in a fresh process so peak RSS (``ru_maxrss``) belongs to the phase:

* ``setup`` (not a measured figure): an unaware-bucket append table (``target-file-size``
  ``--target``) written in ``--files`` commits of N/files rows of random ``x``, ``y`` (BIGINT
  in [0, 10^6)), ``f`` (DOUBLE) and ``msg`` (STRING); the same batches as Parquet files (zstd
  level 1) for the floor; and how many files a box filter (``x`` and ``y`` each in a range of
  5 % of theirs) keeps in the scan plan (``table.splits(filter=box)``: the files whose min/max
  statistics overlap the box), and how many a band of ``y`` alone (5 %) keeps;
* ``compact``: ``table.compact(order_by=["x", "y"], strategy=...)``, then (outside the clock)
  the files the same filters keep;
* ``compact-floor``: read the floor files with ``pyarrow.parquet``, ``sort_by([x, y])`` (plain
  lexicographic: pyarrow has no curve order) and write the rows as one Parquet file (zstd 1).

Each phase reports wall seconds, CPU seconds (user + system, every thread), cores used
(CPU / wall) and peak RSS.

Usage: ``.venv/bin/python benchmarks/bench_sort_compact.py [--rows 4000000] [--files 100]
[--target "4 mb"] [--strategy zorder] [--json]``. Figures: ``benchmarks/sort_compact.md``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops import Catalog

SCHEMA = pa.schema(
    [("x", pa.int64()), ("y", pa.int64()), ("f", pa.float64()), ("msg", pa.string())]
)
#: the box a query asks for: 5 % of each axis
BOX = (
    (pc.field("x") >= 400_000)
    & (pc.field("x") < 450_000)
    & (pc.field("y") >= 600_000)
    & (pc.field("y") < 650_000)
)
#: a band of 5 % of y alone (what a lexicographic order on (x, y) cannot prune)
BAND = (pc.field("y") >= 600_000) & (pc.field("y") < 650_000)


def _batch(i: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(i)
    x = rng.integers(0, 1_000_000, rows)
    msgs = np.char.add("event ", (x % 9973).astype(str))
    return pa.table(
        {"x": x, "y": rng.integers(0, 1_000_000, rows), "f": rng.random(rows), "msg": msgs},
        schema=SCHEMA,
    )


def _opened(table: Any, where: pc.Expression = BOX) -> int:
    """The files a scan with filter ``where`` plans to open."""
    return sum(len(s.files) for s in table.splits(filter=where))


def _files(table: Any) -> dict[str, int]:
    """The table's files, and how many of them the box and the band filters open."""
    return {
        "files": sum(len(s.files) for s in table.splits()),
        "opened": _opened(table),
        "opened_band": _opened(table, BAND),
    }


def _phase(name: str, wh: str, args: argparse.Namespace) -> dict[str, Any]:
    per = args.rows // args.files
    floor_dir = os.path.join(wh, "floor")
    catalog = Catalog(wh)
    extra: dict[str, Any] = {}
    cpu_start, start = _cpu(), time.perf_counter()
    if name == "setup":
        os.makedirs(floor_dir, exist_ok=True)
        catalog.create_database("db", ignore_if_exists=True)
        table = catalog.create_table(
            "db.t", schema=SCHEMA, options={"target-file-size": args.target}
        )
        for i in range(args.files):
            batch = _batch(i, per)
            table.write(batch)
            path = os.path.join(floor_dir, f"{i:04d}.parquet")
            pq.write_table(batch, path, compression="zstd", compression_level=1)
        extra = _files(table)
    elif name == "compact":
        table = catalog.get_table("db.t")
        table.compact(order_by=["x", "y"], strategy=args.strategy)
    elif name == "compact-floor":
        files = sorted(glob.glob(os.path.join(floor_dir, "*.parquet")))
        rows = pa.concat_tables([pq.read_table(f) for f in files])
        rows = rows.sort_by([("x", "ascending"), ("y", "ascending")])
        out = os.path.join(wh, "floor-sorted.parquet")
        pq.write_table(rows, out, compression="zstd", compression_level=1)
    seconds = time.perf_counter() - start
    cpu = _cpu() - cpu_start
    if name == "compact":
        extra = _files(catalog.get_table("db.t"))
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "cores": cpu / seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **extra,
    }


def _cpu() -> float:
    """CPU seconds this process has used (every thread, user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--target", default="4 mb", help="the table's target-file-size")
    parser.add_argument("--strategy", default="zorder", choices=["order", "zorder", "hilbert"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args.phase, args.warehouse, args)))
        return
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sort-compact-") as wh:
        for phase in ("setup", "compact", "compact-floor"):
            cmd = [sys.executable, __file__, "--phase", phase, "--warehouse", wh]
            cmd += ["--rows", str(args.rows), "--files", str(args.files)]
            cmd += ["--target", args.target, "--strategy", args.strategy]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results[phase] = json.loads(out.strip().splitlines()[-1])
    compact, floor, setup = results["compact"], results["compact-floor"], results["setup"]
    summary = {
        "rows": args.rows,
        "files": args.files,
        "strategy": args.strategy,
        "phases": results,
        "ratio": compact["seconds"] / floor["seconds"],
        "cpu_ratio": compact["cpu_seconds"] / floor["cpu_seconds"],
        "opened_before": setup["opened"],
        "opened_after": compact["opened"],
        "band_opened_before": setup["opened_band"],
        "band_opened_after": compact["opened_band"],
    }
    if args.json:
        print(json.dumps(summary))
        return
    print(f"{args.rows:,} rows in {setup['files']} files, {args.strategy} on (x, y)")
    for phase in ("compact", "compact-floor"):
        r = results[phase]
        print(
            f"{phase:14s} {r['seconds']:7.2f} s wall  {r['cpu_seconds']:7.2f} s CPU  "
            f"{r['cores']:4.2f} cores  {r['peak_rss_mb']:7.0f} MB peak RSS"
        )
    print(f"ratio to the floor: {summary['ratio']:.2f}x wall, {summary['cpu_ratio']:.2f}x CPU")
    for label, key in (("box (x and y)", "opened"), ("band (y only)", "opened_band")):
        print(
            f"{label} filter opens {setup[key]} of {setup['files']} files before, "
            f"{compact[key]} of {compact['files']} after"
        )


if __name__ == "__main__":
    main()
