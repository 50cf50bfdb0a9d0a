"""Append tables: append N rows in 100 commits, compact, read — against plain pyarrow.

Phases, each in a fresh process so peak RSS (``ru_maxrss``) belongs to the phase:

* ``append``: 100 ``table.write`` commits of N/100 rows each to an append table (unaware
  bucket by default, ``--bucket 4`` for a fixed-bucket table hashed by ``id``);
  floor: ``pyarrow.parquet.write_table`` of the same 100 batches to 100 files (zstd level 1);
* ``compact``: ``table.compact(full=True)``; floor: read the 100 floor files and write them as
  one Parquet file;
* ``read``: ``table.read()``; floor: ``pyarrow.parquet.read_table`` of the 100 floor files.

Each phase reports wall seconds, CPU seconds (user + system, every thread) and cores used
(CPU / wall); on a shared machine the CPU ratio is the steadier figure.

``--row-tracking``: the table has ``row-tracking.enabled``: its compaction keeps every row's id
(files whose ids follow one another, written with ``_ROW_ID`` / ``_SEQUENCE_NUMBER``), and the
read selects both system columns too. ``--data-evolution``: row tracking and
``data-evolution.enabled``; after the appends (untimed) an ``update_columns`` sets ``f`` of every
tenth row, so every file has an update file of that column; compaction merges each file's
columns with its update's (row-id groups, :func:`lakeops.compact.append.pick_group_bins`).

Usage: ``.venv/bin/python benchmarks/bench_append.py [--rows 10000000] [--bucket 4]
[--row-tracking | --data-evolution] [--json]``;
``--rows 100000 --per-commit 20`` times only commits (ms of CPU and wall per commit). Figures:
``benchmarks/append.md``.
Targets (informational; nothing here fails): append and read at most 1.5x the floor's time,
compaction at most 2x.
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeops import Catalog

SCHEMA = pa.schema(
    [("id", pa.int64()), ("level", pa.string()), ("f", pa.float64()), ("msg", pa.string())]
)
COMMITS = 100
TARGETS = {"append": 1.5, "compact": 2.0, "read": 1.5}


def _batch(i: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
    levels = np.array(["DEBUG", "INFO", "WARN", "ERROR"])[rng.integers(0, 4, rows)]
    msgs = np.char.add("request handled in ms=", (ids % 997).astype(str))
    return pa.table({"id": ids, "level": levels, "f": rng.random(rows), "msg": msgs}, schema=SCHEMA)


def _phase(name: str, wh: str, rows: int, bucket: int, mode: str = "") -> dict[str, float]:
    """One phase in this process (``mode``: "", "row-tracking" or "data-evolution")."""
    tracked = bool(mode)
    per = rows // COMMITS
    batches = [_batch(i, per) for i in range(COMMITS)]  # built before the clock starts
    floor_dir = os.path.join(wh, "floor")
    os.makedirs(floor_dir, exist_ok=True)
    catalog = Catalog(wh)
    cpu_start = _cpu()
    start = time.perf_counter()
    if name == "append":
        catalog.create_database("db", ignore_if_exists=True)
        options = {"bucket": str(bucket), "bucket-key": "id"} if bucket > 0 else {}
        if tracked:
            options["row-tracking.enabled"] = "true"
        if mode == "data-evolution":
            options["data-evolution.enabled"] = "true"
        table = catalog.create_table("db.t", schema=SCHEMA, options=options)
        for b in batches:
            table.write(b)
        if mode == "data-evolution":
            wall, cpu = _update_tenth(table, per * COMMITS)  # not timed
            start, cpu_start = start + wall, cpu_start + cpu
    elif name == "append-floor":
        for i, b in enumerate(batches):
            pq.write_table(
                b,
                os.path.join(floor_dir, f"{i:03d}.parquet"),
                compression="zstd",
                compression_level=1,
            )
    elif name == "compact":
        catalog.get_table("db.t").compact(full=True)
    elif name == "compact-floor":
        files = sorted(glob.glob(os.path.join(floor_dir, "*.parquet")))
        whole = pa.concat_tables([pq.read_table(f) for f in files])
        pq.write_table(
            whole,
            os.path.join(wh, "floor-compacted.parquet"),
            compression="zstd",
            compression_level=1,
        )
    elif name == "read":
        columns = [*SCHEMA.names, "_ROW_ID", "_SEQUENCE_NUMBER"] if tracked else None
        got = catalog.get_table("db.t").read(columns=columns).num_rows
        assert got == per * COMMITS, got
    elif name == "read-floor":
        files = sorted(glob.glob(os.path.join(floor_dir, "*.parquet")))
        got = pa.concat_tables([pq.read_table(f) for f in files]).num_rows
        assert got == per * COMMITS, got
    seconds = time.perf_counter() - start
    cpu = _cpu() - cpu_start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "cores": cpu / seconds,
        "rows_per_s": per * COMMITS / seconds,
        "peak_rss_mb": rss_mb,
    }


def _update_tenth(table: object, rows: int) -> tuple[float, float]:
    """Set ``f`` of every tenth row by row id; the wall and CPU seconds it took (left out of
    the phase)."""
    started, cpu = time.perf_counter(), _cpu()
    ids = np.arange(0, rows, 10, dtype=np.int64)
    data = pa.table({"_ROW_ID": ids, "f": np.full(len(ids), -1.0)})
    table.update_columns(data)  # type: ignore[attr-defined]
    return time.perf_counter() - started, _cpu() - cpu


def _per_commit(rows: int, n: int) -> None:
    """CPU and wall milliseconds per ``table.write`` of ``rows`` rows (an A/B of the commit
    path: run it for each side in fresh processes, interleaved)."""
    batches = [_batch(i, rows) for i in range(n + 5)]
    with tempfile.TemporaryDirectory(prefix="bench-append-commit-") as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        table = catalog.create_table("db.t", schema=SCHEMA)
        for b in batches[:5]:
            table.write(b)
        cpu, wall = _cpu(), time.perf_counter()
        for b in batches[5:]:
            table.write(b)
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    print(json.dumps({"rows": rows, "cpu_ms": cpu / n * 1000, "wall_ms": wall / n * 1000}))


def _cpu() -> float:
    """CPU seconds this process has used (every thread, user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--bucket", type=int, default=-1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--row-tracking", action="store_true")
    parser.add_argument("--data-evolution", action="store_true")
    parser.add_argument(
        "--per-commit",
        type=int,
        metavar="N",
        help="only time N commits of --rows rows each (after 5 warm-up commits): CPU and wall "
        "ms per commit",
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.per_commit:
        _per_commit(args.rows, args.per_commit)
        return
    mode = "data-evolution" if args.data_evolution else "row-tracking" if args.row_tracking else ""
    if args.phase:
        measured = _phase(args.phase, args.warehouse, args.rows, args.bucket, mode)
        print(json.dumps(measured))
        return
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-append-") as wh:
        for phase in ("append", "append-floor", "compact", "compact-floor", "read", "read-floor"):
            cmd = [sys.executable, __file__, "--phase", phase, "--warehouse", wh]
            cmd += ["--rows", str(args.rows), "--bucket", str(args.bucket)]
            cmd += [f"--{mode}"] if mode else []
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results[phase] = json.loads(out.strip().splitlines()[-1])
    ratios = {p: results[p]["seconds"] / results[f"{p}-floor"]["seconds"] for p in TARGETS}
    cpu_ratios = {
        p: results[p]["cpu_seconds"] / results[f"{p}-floor"]["cpu_seconds"] for p in TARGETS
    }
    if args.json:
        print(
            json.dumps(
                {
                    "rows": args.rows,
                    "bucket": args.bucket,
                    "phases": results,
                    "ratios": ratios,
                    "cpu_ratios": cpu_ratios,
                }
            )
        )
        return
    tracking = f", {mode.replace('-', ' ')}" if mode else ""
    print(f"append table, {args.rows:,} rows in {COMMITS} commits, bucket {args.bucket}{tracking}")
    for p, target in TARGETS.items():
        ours, floor = results[p], results[f"{p}-floor"]
        print(
            f"  {p:8s} lakeops {ours['seconds']:7.2f} s ({ours['rows_per_s']:,.0f} rows/s, "
            f"{ours['cpu_seconds']:.2f} CPU s, {ours['cores']:.2f} cores, "
            f"peak {ours['peak_rss_mb']:,.0f} MB)  floor {floor['seconds']:7.2f} s "
            f"({floor['cpu_seconds']:.2f} CPU s, {floor['cores']:.2f} cores, "
            f"peak {floor['peak_rss_mb']:,.0f} MB)  ratio {ratios[p]:.2f}, "
            f"CPU ratio {cpu_ratios[p]:.2f} (target <= {target})"
        )


if __name__ == "__main__":
    main()
