"""Peak memory of ``table.compact(full=True)`` (and of a write) in a fresh process, by table
size and parallelism.

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_compact_memory.py \\
        --rows 4000000,16000000 --buckets 4 --parallelism 1,2 [--steps compact,write]

For each ``--rows`` a child process builds a table of ``--buckets`` fixed buckets with the data
of :mod:`bench_scaling` (key ``id`` int64; ``v`` int64, ``f`` float64, ``s`` random
12-character strings): the insert of every row and the upsert of 30 % of the keys, written with
``write-only = true`` so that every bucket holds level-0 runs for the compaction to merge. Then,
for each parallelism, a fresh child process opens a copy of that table and runs
``table.compact(full=True, parallelism=p)`` — nothing else — and reports its resident memory
before the compaction (the interpreter, pyarrow, lakeops and the open table: ``VmRSS``) and its
peak during the compaction (``VmHWM``, reset when the compaction starts: ``clear_refs``).
``added`` is the difference: what the compaction itself added.

``--steps write``: a fresh child process generates the insert, then writes it with
``table.write(data, parallelism=p)`` into a new ``write-only`` table (flushes only: the writer
does not compact) with the default ``write-buffer-size`` (256 MiB). Its peak is measured from
the moment the input is in memory (the kernel's high-water mark is reset then: ``clear_refs``),
so ``added`` is what the write added to the caller's input.

Figures (2-core development machine, 2026-11-26): see ``docs/parallelism.md``.
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

sys.path.insert(0, str(Path(__file__).parent))

from bench_scaling import SCHEMA, inputs


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(root: str, rows: int, buckets: int) -> None:
    from lakeops import Catalog

    insert, upsert = inputs(rows)
    catalog = Catalog(root)
    catalog.create_database("bench")
    table = catalog.create_table(
        "bench.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": str(buckets), "write-only": "true"},
    )
    table.write(insert)
    table.write(upsert)


def reset_peak() -> None:
    """Reset this process's high-water mark of resident memory (``VmHWM``) to its current RSS."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def write(root: str, rows: int, buckets: int, parallelism: int) -> dict[str, float]:
    from lakeops import Catalog

    insert, _ = inputs(rows)
    catalog = Catalog(root)
    catalog.create_database("bench")
    table = catalog.create_table(
        "bench.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": str(buckets), "write-only": "true"},
    )
    reset_peak()
    before = rss_mib()
    start = time.perf_counter()
    table.write(insert, parallelism=parallelism)
    seconds = time.perf_counter() - start
    peak = peak_mib()
    files = sum(len(s.files) for s in table.splits())
    return {
        "s": seconds,
        "before_mib": before,
        "peak_mib": peak,
        "compaction_mib": peak - before,
        "files_before": files,
    }


def compact(root: str, parallelism: int) -> dict[str, float]:
    from lakeops import Catalog

    table = Catalog(root).get_table("bench.t")
    files_before = sum(len(s.files) for s in table.splits())
    reset_peak()
    before = rss_mib()
    start = time.perf_counter()
    table.compact(full=True, parallelism=parallelism)
    seconds = time.perf_counter() - start
    peak = peak_mib()
    return {
        "s": seconds,
        "before_mib": before,
        "peak_mib": peak,
        "compaction_mib": peak - before,
        "files_before": files_before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="4000000,16000000")
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--parallelism", default="1,2")
    parser.add_argument("--steps", default="compact")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "build":
        build(args.root, int(args.rows), args.buckets)
        return
    if args.child and args.child.startswith("write"):
        p = int(args.child[5:])
        print(json.dumps(write(args.root, int(args.rows), args.buckets, p)))
        return
    if args.child:
        print(json.dumps(compact(args.root, int(args.child))))
        return
    me = [sys.executable, __file__]
    print(f"buckets={args.buckets}")
    header = ("step", "rows", "p", "s", "before MiB", "peak MiB", "added MiB", "files")
    print("{:8} {:>11} {:>3} {:>7} {:>11} {:>9} {:>10} {:>6}".format(*header))
    steps = args.steps.split(",")
    for rows in (int(r) for r in args.rows.split(",")):
        if "write" in steps:
            for p in args.parallelism.split(","):
                base = tempfile.mkdtemp(prefix="lakeops-write-memory-")
                try:
                    child = ["--child", f"write{p}", "--root", base, "--rows", str(rows)]
                    proc = subprocess.run(
                        [*me, *child, "--buckets", str(args.buckets)],
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                finally:
                    shutil.rmtree(base, ignore_errors=True)
                _report("write", rows, p, json.loads(proc.stdout.strip().splitlines()[-1]))
        if "compact" not in steps:
            continue
        base = tempfile.mkdtemp(prefix="lakeops-compact-memory-")
        try:
            built = str(Path(base) / "built")
            build_args = ["--root", built, "--rows", str(rows), "--buckets", str(args.buckets)]
            subprocess.run([*me, "--child", "build", *build_args], check=True)
            for p in args.parallelism.split(","):
                copy = str(Path(base) / f"p{p}")
                shutil.copytree(built, copy)
                proc = subprocess.run(
                    [*me, "--child", p, "--root", copy],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                shutil.rmtree(copy)
                _report("compact", rows, p, json.loads(proc.stdout.strip().splitlines()[-1]))
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _report(step: str, rows: int, p: str, r: dict[str, float]) -> None:
    print(
        f"{step:8} {rows:>11,} {p:>3} {r['s']:7.1f} {r['before_mib']:11.0f} "
        f"{r['peak_mib']:9.0f} {r['compaction_mib']:10.0f} {r['files_before']:6.0f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
