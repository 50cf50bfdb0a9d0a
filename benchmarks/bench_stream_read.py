"""Streaming read benchmark: rows/s and peak RSS of ``table.to_batches()`` on tables several
times larger than the read's memory budget, next to ``table.read()``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_stream_read.py                  # tables 4x and 8x the budget
    .venv/bin/python benchmarks/bench_stream_read.py --multiples 4 8 16 --json

The budget is what :mod:`lakeops.read.stream` bounds: ``parallelism * (QUEUE_DEPTH + 2) *
batch_rows`` merged rows in memory, here converted to bytes with the Arrow size of one record
(the read columns plus ``_KEY_id``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``). For each multiple
``m`` a table of ``m * budget`` bytes is written (one insert commit, then an upsert of 10% of
the keys: every bucket is one section of two overlapping runs, merged by the streaming k-way
merge), and then each read runs in a fresh Python process (this script, re-run with the hidden
``--phase`` argument) so that its peak RSS (``VmHWM``) is its own:

* ``stream``: ``for batch in table.to_batches(batch_rows=…, parallelism=…)`` counting rows;
* ``read``: ``table.read(parallelism=…)`` (the whole table in memory, for comparison).

The streaming peak must stay flat as the table grows; the whole read grows with it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from peak_memory import peak_rss_mib

SEED = 20261126
BUCKETS = 4
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
    ]
)
#: Arrow bytes of one record as merged: id, v, f (8 each), s (8 chars + 4 offset), _KEY_id (8),
#: _SEQUENCE_NUMBER (8), _VALUE_KIND (1), validity bits rounded up
RECORD_BYTES = 8 + 8 + 8 + 12 + 8 + 8 + 1 + 1


def budget_rows(batch_rows: int, parallelism: int) -> int:
    from lakeops.read.stream import QUEUE_DEPTH

    return parallelism * (QUEUE_DEPTH + 2) * batch_rows


def _data(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": ids,
            "v": rng.integers(0, 1 << 40, n),
            "f": rng.random(n),
            "s": pa.array([f"s{i:07d}" for i in rng.integers(0, 10_000_000, n)]),
        },
        schema=SCHEMA,
    )


def write_table(root: Path, rows: int) -> None:
    from lakeops import Catalog

    catalog = Catalog(str(root))
    catalog.create_database("bench")
    table = catalog.create_table(
        "bench.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": str(BUCKETS)}
    )
    rng = np.random.default_rng(SEED)
    ids = rng.permutation(rows).astype(np.int64)
    step = 2_000_000
    writer = table.new_write()
    for start in range(0, rows, step):
        writer.write(_data(ids[start : start + step], rng))
    table.commit(writer.prepare_commit())
    table.write(_data(rng.choice(rows, rows // 10, replace=False).astype(np.int64), rng))


def run_phase(args: argparse.Namespace) -> dict[str, Any]:
    from lakeops import Catalog

    table = Catalog(args.workdir).get_table("bench.t")
    rss_before = peak_rss_mib()
    start = time.perf_counter()
    if args.phase == "stream":
        rows = 0
        for batch in table.to_batches(batch_rows=args.batch_rows, parallelism=args.parallelism):
            rows += batch.num_rows
    else:
        rows = table.read(parallelism=args.parallelism).num_rows
    seconds = time.perf_counter() - start
    return {
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "rss_before_mib": rss_before,
        "peak_rss_mib": peak_rss_mib(),
        "arrow_peak_mib": pa.default_memory_pool().max_memory() / 2**20,
    }


def spawn(args: argparse.Namespace, phase: str, workdir: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--phase",
        phase,
        "--workdir",
        str(workdir),
        "--batch-rows",
        str(args.batch_rows),
        "--parallelism",
        str(args.parallelism),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{phase} child failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--multiples", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="runs per read (best time)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", choices=("stream", "read"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(run_phase(args)))
        return
    budget = budget_rows(args.batch_rows, args.parallelism)
    budget_mib = budget * RECORD_BYTES / 2**20
    results = []
    root = Path(tempfile.mkdtemp(prefix="bench_stream_"))
    try:
        for m in args.multiples:
            rows = m * budget
            workdir = root / f"x{m}"
            write_table(workdir, rows)
            entry: dict[str, Any] = {
                "multiple": m,
                "rows": rows,
                "table_mib": rows * RECORD_BYTES / 2**20,
            }
            for phase in ("stream", "read"):
                runs = [spawn(args, phase, workdir) for _ in range(args.repeat)]
                best = min(runs, key=lambda r: r["seconds"])
                best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
                if best["rows"] != rows:
                    raise SystemExit(f"{phase} read {best['rows']} rows, expected {rows}")
                entry[phase] = best
                print(
                    f"{m:>3}x budget  {rows:>10,} rows  {phase:<6} {best['seconds']:7.2f} s "
                    f"{best['rows_per_s'] / 1e6:6.2f} M rows/s  peak RSS "
                    f"{best['peak_rss_mib']:7.1f} MiB "
                    f"(before the read {best['rss_before_mib']:.1f}; Arrow pool peak "
                    f"{best['arrow_peak_mib']:.1f} MiB)",
                    file=sys.stderr,
                    flush=True,
                )
            results.append(entry)
            shutil.rmtree(workdir)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report = {
        "config": {
            "batch_rows": args.batch_rows,
            "parallelism": args.parallelism,
            "budget_rows": budget,
            "budget_mib": budget_mib,
            "record_bytes": RECORD_BYTES,
            "buckets": BUCKETS,
        },
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"budget: {budget:,} rows ≈ {budget_mib:.1f} MiB "
            f"(parallelism {args.parallelism}, batch_rows {args.batch_rows:,})"
        )


if __name__ == "__main__":
    main()
