"""Write/upsert/read benchmark of a lakeops primary-key table against a plain-pyarrow baseline.

Run from the repository root::

    .venv/bin/python benchmarks/bench_write_read.py                 # 1M rows, 300k upserts
    .venv/bin/python benchmarks/bench_write_read.py --repeat 1 --json
    .venv/bin/python benchmarks/bench_write_read.py --rows 4000000 --strings random

Three phases are measured, each in a fresh Python process (this same script, re-run with the
hidden ``--phase`` argument) so that the peak RSS reported is the peak of that phase alone:

1. ``insert``: ``table.write(data)`` of ``--rows`` rows into a new table, one commit;
2. ``upsert``: ``table.write(...)`` of ``--upserts`` existing keys with new values, one commit;
3. ``read``: ``table.read()`` of the merged table (must hold exactly ``--rows`` rows).

Beside each, a plain-pyarrow baseline does the minimum equivalent work: split rows into
``--buckets`` groups by ``id % buckets``, sort each group by ``id`` and write it as one
zstd(1) Parquet file; read all files back, tag each row with a sequence number (insert rows
before upsert rows), sort by ``(id, seq)`` and keep the last row of each ``id``.

The string column ``s`` is ``"s"`` + 5 digits drawn from 100,000 values (``--strings digits``,
the default), or 16 random alphanumeric characters (``--strings random``: high entropy,
practically all distinct).

Only the measured call is timed (``time.perf_counter``); generating the input is not. Every
phase chain (insert -> upsert -> read) runs ``--repeat`` times in its own directory and the
best time of each phase is reported, with the largest peak RSS seen over the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

SEED = 20240601
PHASES = ("insert", "upsert", "read")
IMPLS = ("lakeops", "baseline")
#: ``layout``: the baseline writing Paimon's columns (``_KEY_id``, ``_SEQUENCE_NUMBER``,
#: ``_VALUE_KIND`` before the row's): the floor of the same bytes (``ab_write_read.py``)
CHILD_IMPLS = (*IMPLS, "layout")
TABLE_ID = "bench.t"
TARGET_ROWS_PER_S = 1_000_000.0
TARGET_RATIO = 2.0
TARGET_PHASES = ("insert", "read")
DEDUP_METHODS = ("neighbours", "groupby")
STRING_KINDS = ("digits", "random")
#: characters of the ``--strings random`` values, and their length
ALPHABET = np.frombuffer(
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", np.uint8
)
RANDOM_STRING_LEN = 16

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
    ]
)

Result = dict[str, Any]


# --------------------------------------------------------------------------- measurement
def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


#: CPU seconds (user + system, every thread of this process) of the last :func:`timed` call
LAST_CPU_SECONDS = [0.0]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn`` once and return (seconds, its result); its CPU seconds go to
    :data:`LAST_CPU_SECONDS` (less sensitive than wall time to other load on the machine)."""
    cpu = time.process_time()
    start = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - start
    LAST_CPU_SECONDS[0] = time.process_time() - cpu
    return wall, out


# --------------------------------------------------------------------------------- input
def _strings(numbers: np.ndarray) -> pa.Array:
    """``"s"`` followed by each number as 5 zero-padded digits, built without Python loops."""
    digits = pc.utf8_lpad(pc.cast(pa.array(numbers), pa.string()), width=5, padding="0")
    return pc.binary_join_element_wise(pa.scalar("s"), digits, "")


def _random_strings(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` strings of :data:`RANDOM_STRING_LEN` random alphanumeric characters (about 95
    bits each: practically all distinct, and next to incompressible beyond the alphabet)."""
    codes = rng.integers(0, len(ALPHABET), size=n * RANDOM_STRING_LEN, dtype=np.uint8)
    offsets = np.arange(n + 1, dtype=np.int32) * RANDOM_STRING_LEN
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(ALPHABET[codes]))


def _values(rng: np.random.Generator, ids: np.ndarray, strings: str) -> pa.Table:
    n = len(ids)
    return pa.table(
        [
            pa.array(ids.astype(np.int64)),
            pa.array(rng.integers(0, 1 << 40, size=n, dtype=np.int64)),
            pa.array(rng.random(n)),
            _strings(rng.integers(0, 100_000, size=n))
            if strings == "digits"
            else _random_strings(rng, n),
        ],
        schema=SCHEMA,
    )


def insert_data(rows: int, strings: str = "digits") -> pa.Table:
    """``rows`` rows, ids ``0..rows-1`` in a fixed shuffled order."""
    rng = np.random.default_rng(SEED)
    return _values(rng, rng.permutation(rows), strings)


def upsert_data(rows: int, upserts: int, strings: str = "digits") -> pa.Table:
    """``upserts`` distinct existing ids (fixed random subset) with new values."""
    rng = np.random.default_rng(SEED + 1)
    return _values(rng, rng.choice(rows, size=upserts, replace=False), strings)


def check_rows(impl: str, table: pa.Table, rows: int) -> None:
    """The merged read must hold exactly one row per inserted key (works under ``-O`` too)."""
    if table.num_rows != rows:
        raise AssertionError(f"{impl} read returned {table.num_rows} rows, expected {rows}")


def checksum(table: pa.Table) -> dict[str, Any]:
    """Cheap order-independent fingerprint of a merged table, to compare implementations."""
    return {
        "rows": table.num_rows,
        "sum_id": int(pc.sum(table.column("id")).as_py() or 0),
        "sum_v": int(pc.sum(table.column("v")).as_py() or 0),
    }


# ------------------------------------------------------------------------------ lakeops
def lakeops_phase(
    phase: str, workdir: Path, rows: int, upserts: int, buckets: int, strings: str
) -> Result:
    from lakeops import Catalog

    warehouse = workdir / "lakeops"
    if phase == "insert":
        data = insert_data(rows, strings)
        rss_input = peak_rss_mib()
        catalog = Catalog(str(warehouse))
        catalog.create_database("bench", ignore_if_exists=True)
        table = catalog.create_table(
            TABLE_ID, schema=SCHEMA, primary_keys=["id"], options={"bucket": str(buckets)}
        )
        seconds, snap = timed(lambda: table.write(data))
        if snap is None:
            raise AssertionError("lakeops insert committed nothing")
        return {
            "rows": rows,
            "seconds": seconds,
            "rss_input_mib": rss_input,
            "snapshot_id": snap.id,
            "total_record_count": snap.total_record_count,
        }
    if phase == "upsert":
        data = upsert_data(rows, upserts, strings)
        rss_input = peak_rss_mib()
        table = Catalog(str(warehouse)).get_table(TABLE_ID)
        seconds, snap = timed(lambda: table.write(data))
        if snap is None:
            raise AssertionError("lakeops upsert committed nothing")
        return {
            "rows": upserts,
            "seconds": seconds,
            "rss_input_mib": rss_input,
            "snapshot_id": snap.id,
            "total_record_count": snap.total_record_count,
        }
    rss_input = peak_rss_mib()
    table = Catalog(str(warehouse)).get_table(TABLE_ID)
    seconds, result = timed(table.read)
    check_rows("lakeops", result, rows)
    return {
        "rows": result.num_rows,
        "seconds": seconds,
        "rss_input_mib": rss_input,
        "checksum": checksum(result),
    }


# ----------------------------------------------------------------------------- baseline
def baseline_write(
    data: pa.Table, directory: Path, prefix: str, buckets: int, layout: bool = False
) -> int:
    """Split by ``id % buckets``, sort each group by id, write one zstd(1) file per group;
    ``layout``: with Paimon's three system columns first (a copy of the key, sequence numbers,
    the row kind), as a primary-key table's data file holds them."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = data.column("id").to_numpy()
    group = ids % buckets
    files = 0
    for b in range(buckets):
        idx = np.flatnonzero(group == b)
        order = pc.sort_indices(pa.array(ids[idx])).to_numpy()
        part = data.take(pa.array(idx[order]))
        if layout:
            n = part.num_rows
            system = {
                "_KEY_id": part.column("id"),
                "_SEQUENCE_NUMBER": pa.array(np.arange(n, dtype=np.int64)),
                "_VALUE_KIND": pa.array(np.zeros(n, dtype=np.int8)),
            }
            part = pa.table({**system, **{c: part.column(c) for c in part.column_names}})
        pq.write_table(
            part, directory / f"{prefix}-{b}.parquet", compression="zstd", compression_level=1
        )
        files += 1
    return files


def baseline_read(directory: Path, dedup: str) -> pa.Table:
    """Read insert then upsert files, sort by (id, seq) and keep the last row per id."""
    paths = sorted(directory.glob("insert-*.parquet")) + sorted(directory.glob("upsert-*.parquet"))
    with ThreadPoolExecutor(max_workers=min(len(paths), os.cpu_count() or 2)) as pool:
        parts = list(pool.map(pq.read_table, paths))
    table = pa.concat_tables(parts)
    seq = np.arange(table.num_rows, dtype=np.int64)  # insert rows first, then upsert rows
    if dedup == "groupby":
        # use_threads=False keeps input order, which "last" needs; sorting first makes the
        # output ordered by id, as the neighbours method (and a lakeops bucket) returns it
        table = table.append_column("seq", pa.array(seq))
        order = pc.sort_indices(table, sort_keys=[("id", "ascending"), ("seq", "ascending")])
        table = table.take(order)
        values = [c for c in table.column_names if c not in ("id", "seq")]
        agg = table.group_by("id", use_threads=False).aggregate([(c, "last") for c in values])
        return agg.rename_columns([n.removesuffix("_last") for n in agg.column_names]).select(
            SCHEMA.names
        )
    ids = table.column("id").to_numpy()
    # np.lexsort measured faster than pc.sort_indices on (id, seq) here (~0.10 vs ~0.14 s)
    order = np.lexsort((seq, ids))  # by id, then seq
    sorted_ids = ids[order]
    keep = np.empty(len(order), dtype=bool)
    keep[:-1] = sorted_ids[1:] != sorted_ids[:-1]
    keep[-1:] = True
    return table.take(pa.array(order[keep]))


def baseline_phase(
    phase: str,
    workdir: Path,
    rows: int,
    upserts: int,
    buckets: int,
    dedup: str,
    strings: str,
    layout: bool = False,
) -> Result:
    directory = workdir / "baseline"
    if phase in ("insert", "upsert"):
        data = (
            insert_data(rows, strings) if phase == "insert" else upsert_data(rows, upserts, strings)
        )
        rss_input = peak_rss_mib()
        if phase == "insert" and directory.exists():
            shutil.rmtree(directory)
        seconds, files = timed(lambda: baseline_write(data, directory, phase, buckets, layout))
        return {
            "rows": data.num_rows,
            "seconds": seconds,
            "rss_input_mib": rss_input,
            "files": files,
        }
    rss_input = peak_rss_mib()
    seconds, result = timed(lambda: baseline_read(directory, dedup))
    check_rows("baseline", result, rows)
    return {
        "rows": result.num_rows,
        "seconds": seconds,
        "rss_input_mib": rss_input,
        "checksum": checksum(result),
    }


# -------------------------------------------------------------------------- child / parent
def run_child(args: argparse.Namespace) -> None:
    """Body of a ``--phase`` child: measure one phase and print one JSON line."""
    workdir = Path(args.workdir)
    if args.impl == "lakeops":
        out = lakeops_phase(
            args.phase, workdir, args.rows, args.upserts, args.buckets, args.strings
        )
    else:
        out = baseline_phase(
            args.phase,
            workdir,
            args.rows,
            args.upserts,
            args.buckets,
            args.baseline_dedup,
            args.strings,
            layout=args.impl == "layout",
        )
    out["peak_rss_mib"] = peak_rss_mib()
    out["cpu_seconds"] = LAST_CPU_SECONDS[0]
    print(json.dumps(out))


def spawn(args: argparse.Namespace, impl: str, phase: str, workdir: Path) -> Result:
    """Run one phase in a fresh interpreter and return its JSON result."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--phase",
        phase,
        "--impl",
        impl,
        "--workdir",
        str(workdir),
        "--rows",
        str(args.rows),
        "--upserts",
        str(args.upserts),
        "--buckets",
        str(args.buckets),
        "--baseline-dedup",
        args.baseline_dedup,
        "--strings",
        args.strings,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{impl} {phase} child failed with exit code {proc.returncode}")
    result: Result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def best_of(runs: list[Result]) -> Result:
    """The fastest run, with the largest peak RSS and input RSS seen over all runs."""
    best = dict(min(runs, key=lambda r: r["seconds"]))
    best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
    best["rss_input_mib"] = max(r["rss_input_mib"] for r in runs)
    best["all_seconds"] = [r["seconds"] for r in runs]
    best["min_cpu_seconds"] = min(r["cpu_seconds"] for r in runs)
    best["rows_per_s"] = best["rows"] / best["seconds"] if best["seconds"] > 0 else float("inf")
    return best


def run_all(args: argparse.Namespace, root: Path, keep: bool) -> dict[str, Any]:
    """Run every phase chain ``--repeat`` times under ``root/run<N>``; ``keep`` leaves the
    tables there, otherwise each run's directory is deleted once it is measured."""
    runs: dict[str, dict[str, list[Result]]] = {i: {p: [] for p in PHASES} for i in IMPLS}
    for r in range(args.repeat):
        workdir = root / f"run{r}"
        if workdir.exists():
            raise SystemExit(f"{workdir} already exists; pass an empty --workdir")
        workdir.mkdir(parents=True)
        for phase in PHASES:
            for impl in IMPLS:
                res = spawn(args, impl, phase, workdir)
                runs[impl][phase].append(res)
                print(
                    f"[run {r + 1}/{args.repeat}] {phase:<6} {impl:<8} {res['seconds']:8.3f} s"
                    f"  CPU {res['cpu_seconds']:8.3f} s  peak RSS {res['peak_rss_mib']:7.1f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
        lk, bl = runs["lakeops"]["read"][-1]["checksum"], runs["baseline"]["read"][-1]["checksum"]
        if lk != bl:
            raise SystemExit(f"lakeops and baseline reads differ: {lk} != {bl}")
        if not keep:
            shutil.rmtree(workdir)
    phases: dict[str, Any] = {}
    for phase in PHASES:
        lk, bl = best_of(runs["lakeops"][phase]), best_of(runs["baseline"][phase])
        ratio = lk["seconds"] / bl["seconds"] if bl["seconds"] > 0 else float("inf")
        cpu_ratio = lk["min_cpu_seconds"] / bl["min_cpu_seconds"] if bl["min_cpu_seconds"] else 0
        entry: dict[str, Any] = {
            "lakeops": lk,
            "baseline": bl,
            "ratio": ratio,
            "cpu_ratio": cpu_ratio,
        }
        if phase in TARGET_PHASES:
            ratio_met = ratio <= TARGET_RATIO
            rows_per_s_met = lk["rows_per_s"] >= TARGET_ROWS_PER_S
            entry["target"] = {
                "max_ratio": TARGET_RATIO,
                "min_rows_per_s": TARGET_ROWS_PER_S,
                "ratio_met": ratio_met,
                "rows_per_s_met": rows_per_s_met,
                "met": ratio_met and rows_per_s_met,
            }
        phases[phase] = entry
    return {"config": config(args), "phases": phases}


def config(args: argparse.Namespace) -> dict[str, Any]:
    import lakeops

    return {
        "rows": args.rows,
        "upserts": args.upserts,
        "buckets": args.buckets,
        "repeat": args.repeat,
        "seed": SEED,
        "baseline_dedup": args.baseline_dedup,
        "strings": args.strings,
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
        "lakeops": lakeops.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


def render(results: dict[str, Any]) -> str:
    """The human-readable report."""
    cfg = results["config"]
    header = (
        "phase",
        "lakeops s",
        "lakeops rows/s",
        "lakeops peak RSS MiB",
        "baseline s",
        "baseline rows/s",
        "baseline peak RSS MiB",
        "ratio",
    )
    table: list[tuple[str, ...]] = [header]
    inputs: list[tuple[str, ...]] = [
        (
            "phase",
            "rows",
            "lakeops input RSS MiB",
            "baseline input RSS MiB",
            "lakeops CPU s",
            "baseline CPU s",
            "CPU ratio",
        )
    ]
    for phase, e in results["phases"].items():
        lk, bl = e["lakeops"], e["baseline"]
        table.append(
            (
                phase.upper(),
                f"{lk['seconds']:.3f}",
                f"{lk['rows_per_s']:,.0f}",
                f"{lk['peak_rss_mib']:.1f}",
                f"{bl['seconds']:.3f}",
                f"{bl['rows_per_s']:,.0f}",
                f"{bl['peak_rss_mib']:.1f}",
                f"{e['ratio']:.2f}x",
            )
        )
        inputs.append(
            (
                phase.upper(),
                f"{lk['rows']:,}",
                f"{lk['rss_input_mib']:.1f}",
                f"{bl['rss_input_mib']:.1f}",
                f"{lk['min_cpu_seconds']:.3f}",
                f"{bl['min_cpu_seconds']:.3f}",
                f"{e['cpu_ratio']:.2f}x",
            )
        )
    lines = [
        f"lakeops {cfg['lakeops']} | python {cfg['python']} | pyarrow {cfg['pyarrow']} | "
        f"numpy {cfg['numpy']} | {cfg['cpu_count']} CPUs | {cfg['platform']}",
        f"rows={cfg['rows']:,} upserts={cfg['upserts']:,} buckets={cfg['buckets']} "
        f"repeat={cfg['repeat']} (best time, max RSS) baseline dedup={cfg['baseline_dedup']} "
        f"strings={cfg['strings']}",
        "",
        *_format_table(table),
        "",
        "RSS after imports + input generation, before the timed call (what the process and "
        "its input data cost), and the least CPU time (user + system, all threads) of the "
        "timed call:",
        *_format_table(inputs),
        "",
        f"Targets (INSERT and READ: <= {TARGET_RATIO:g}x baseline time and "
        f">= {TARGET_ROWS_PER_S:,.0f} rows/s):",
    ]
    for phase, e in results["phases"].items():
        t = e.get("target")
        if t is None:
            continue
        lines.append(
            f"  {phase.upper():<6} ratio {e['ratio']:.2f}x {'ok' if t['ratio_met'] else 'MISSED'}"
            f", {e['lakeops']['rows_per_s']:,.0f} rows/s "
            f"{'ok' if t['rows_per_s_met'] else 'MISSED'} -> "
            f"{'MET' if t['met'] else 'NOT MET'}"
        )
    return "\n".join(lines)


def _format_table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        out.append(" | ".join(cells))
        if n == 0:
            out.append("-+-".join("-" * w for w in widths))
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows inserted (default 1M)")
    parser.add_argument(
        "--upserts", type=int, default=300_000, help="existing keys rewritten (default 300k)"
    )
    parser.add_argument("--buckets", type=int, default=4, help="fixed buckets (default 4)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of every phase; best time wins (default 3)"
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument(
        "--workdir",
        help="directory for the tables, kept afterwards (default: a fresh tempdir, deleted)",
    )
    parser.add_argument(
        "--baseline-dedup",
        choices=DEDUP_METHODS,
        default="neighbours",
        help="baseline keep-last method: numpy neighbour comparison (default, faster) or "
        "pyarrow group_by 'last'",
    )
    parser.add_argument(
        "--strings",
        choices=STRING_KINDS,
        default="digits",
        help="the s column: 's' + 5 digits from 100,000 values (default), or 16 random "
        "alphanumeric characters (high entropy, practically all distinct)",
    )
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--impl", choices=CHILD_IMPLS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows < 1 or args.buckets < 1 or args.repeat < 1:
        parser.error("--rows, --buckets and --repeat must be >= 1")
    if not 0 < args.upserts <= args.rows:
        parser.error("--upserts must be between 1 and --rows")
    if args.phase and not (args.impl and args.workdir):
        parser.error("--phase needs --impl and --workdir")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.phase:
        run_child(args)
        return 0
    own = args.workdir is None
    root = Path(tempfile.mkdtemp(prefix="lakeops-bench-")) if own else Path(args.workdir)
    try:
        results = run_all(args, root, keep=not own)
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2) if args.json else render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
