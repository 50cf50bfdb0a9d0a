"""Run every benchmark, each in its own subprocess, and print one table of the results.

Run from the repository root::

    .venv/bin/python benchmarks/run_all.py                # default sizes (about 2 minutes)
    .venv/bin/python benchmarks/run_all.py --quick        # small sizes, a smoke run
    .venv/bin/python benchmarks/run_all.py --skip-spark   # no bench_spark, no Spark phase
    .venv/bin/python benchmarks/run_all.py --json         # the rows as JSON

Each script is run as ``<python> benchmarks/<script> <args> --json`` in a fresh process (so the
peak RSS each script reports is its own) and one table row is made per measured operation:
size, time, rows/s, the baseline the script measures in the same run and the ratio to it, peak
RSS, and the target from the script's docstring / ``benchmarks/README.md`` with its verdict.
Cells are empty where a script has no baseline, does not measure RSS, or sets no target.

The table (stdout) is plain text, aligned, and valid Markdown. Progress and the stderr of failed
benchmarks go to stderr. The exit code is 1 if any benchmark process failed (its row then says
so); targets that are missed do not change it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

Doc = Any  # one benchmark's parsed ``--json`` document


@dataclass
class Row:
    """One measured operation."""

    benchmark: str
    operation: str
    rows: int | None = None
    seconds: float | None = None
    rows_per_s: float | None = None
    baseline: str = ""
    baseline_seconds: float | None = None
    ratio: float | None = None
    peak_rss_mib: float | None = None
    target: str = ""
    met: bool | None = None
    notes: str = ""
    error: str = ""


@dataclass(frozen=True)
class Benchmark:
    """A benchmark script, its arguments and how its JSON becomes rows."""

    script: str
    args: tuple[str, ...]
    quick_args: tuple[str, ...]
    to_rows: Callable[[Doc], list[Row]]
    needs_spark: bool = False  # skipped entirely by --skip-spark
    skip_spark_args: tuple[str, ...] = field(default=())  # added by --skip-spark instead

    @property
    def name(self) -> str:
        """The script's name without ``.py``."""
        return self.script.removesuffix(".py")


# ------------------------------------------------------------------------------ helpers
def _rate(rows: int, seconds: float) -> float | None:
    return rows / seconds if seconds > 0 else None


def _ratio(seconds: float, baseline: float) -> float | None:
    return seconds / baseline if baseline > 0 else None


def _short_rate(rate: float) -> str:
    """1000000 -> "1M", 500000 -> "500k"."""
    if rate >= 1_000_000:
        return f"{rate / 1_000_000:g}M"
    if rate >= 1_000:
        return f"{rate / 1_000:g}k"
    return f"{rate:g}"


# --------------------------------------------------------------------- rows per benchmark
def rows_write_read(doc: Doc) -> list[Row]:
    """bench_write_read: INSERT, UPSERT, READ against the plain-pyarrow baseline."""
    baselines = {
        "insert": "pyarrow split+sort+write",
        "upsert": "pyarrow split+sort+write",
        "read": "pyarrow read+sort+keep-last",
    }
    repeat = doc["config"]["repeat"]
    out = []
    for phase, entry in doc["phases"].items():
        lk, bl = entry["lakeops"], entry["baseline"]
        target = entry.get("target")
        out.append(
            Row(
                benchmark="write_read",
                operation=f"{phase.upper()}: table.{'read' if phase == 'read' else 'write'}",
                rows=lk["rows"],
                seconds=lk["seconds"],
                rows_per_s=lk["rows_per_s"],
                baseline=baselines[phase],
                baseline_seconds=bl["seconds"],
                ratio=entry["ratio"],
                peak_rss_mib=lk["peak_rss_mib"],
                target=(
                    f"≤ {target['max_ratio']:g}x, ≥ {_short_rate(target['min_rows_per_s'])} rows/s"
                    if target
                    else ""
                ),
                met=target["met"] if target else None,
                notes=f"best of {repeat}; baseline RSS {bl['peak_rss_mib']:,.0f} MiB",
            )
        )
    return out


def rows_merge(doc: Doc) -> list[Row]:
    """bench_merge: sort + merge and table.write per merge engine (no baseline)."""
    out = []
    for r in doc:
        target = r["target_rows_per_s"]
        for what, label in (("merge", "sort + merge"), ("write", "table.write")):
            rate = r[f"{what}_rows_per_s"]
            out.append(
                Row(
                    benchmark="merge",
                    operation=f"{label}: {r['engine']}",
                    rows=r["rows"],
                    seconds=r[f"{what}_s"],
                    rows_per_s=rate,
                    target=f"≥ {_short_rate(target)} rows/s",
                    met=rate >= target,
                    notes=f"{r['keys_out']:,} keys out",
                )
            )
    return out


def rows_compact(doc: Doc) -> list[Row]:
    """bench_compact: full compaction against the pyarrow baseline; write amplification."""
    lk, bl = doc["lakeops"], doc["baseline"]
    max_ratio = doc["target_max_ratio"]
    out = [
        Row(
            benchmark="compact",
            operation="table.compact(full=True)",
            rows=doc["input_rows"],
            seconds=lk["seconds"],
            rows_per_s=_rate(doc["input_rows"], lk["seconds"]),
            baseline="pyarrow read+sort+keep-last+write",
            baseline_seconds=bl["seconds"],
            ratio=doc["ratio"],
            peak_rss_mib=lk["peak_rss_mib"],
            target=f"≤ {max_ratio:g}x",
            met=doc["ratio"] <= max_ratio,
            notes=(
                f"{doc['keys']:,} keys, 6 runs x 4 buckets; Arrow peak "
                f"{lk['arrow_peak_mib']:,.0f} MiB; baseline RSS {bl['peak_rss_mib']:,.0f} MiB"
            ),
        )
    ]
    amp = doc.get("amplification")
    if amp:
        rows = amp["commits"] * 2_000
        out.append(
            Row(
                benchmark="compact",
                operation="50 x 2,000-row commits, in-writer compaction",
                rows=rows,
                seconds=amp["seconds"],
                rows_per_s=_rate(rows, amp["seconds"]),
                peak_rss_mib=amp["peak_rss_mib"],
                notes=(
                    f"write amplification {amp['write_amplification']:.2f}, "
                    f"max {amp['max_sorted_runs']} sorted runs"
                ),
            )
        )
    return out


def rows_lookup(doc: Doc) -> list[Row]:
    """bench_lookup_changelog: the lookup flush next to the same flush with no producer."""
    lk, ref = doc["phases"]["lookup changelog"], doc["phases"]["no changelog"]
    return [
        Row(
            benchmark="lookup_changelog",
            operation=f"flush_level0, lookup changelog (cache {doc['cache']})",
            rows=doc["changed"],
            seconds=lk["seconds"],
            rows_per_s=_rate(doc["changed"], lk["seconds"]),
            baseline="flush_level0, no producer",
            baseline_seconds=ref["seconds"],
            ratio=_ratio(lk["seconds"], ref["seconds"]),
            peak_rss_mib=lk["peak_rss_mib"],
            notes=(
                f"{doc['keys']:,}-key table; {lk['changelog_rows']:,} changelog rows; Arrow "
                f"peak {lk['arrow_peak_mib']:,.0f} MiB; baseline RSS {ref['peak_rss_mib']:,.0f} MiB"
            ),
        )
    ]


def rows_spark(doc: Doc) -> list[Row]:
    """bench_spark: the data source write and the compaction job."""
    w, c = doc["write"], doc["compaction"]
    rows, best = doc["rows"], f"local[2], best of {doc['repeat']}"
    return [
        Row(
            benchmark="spark",
            operation="lakeops.spark.write (4 buckets)",
            rows=rows,
            seconds=w["lakeops_s"],
            rows_per_s=_rate(rows, w["lakeops_s"]),
            baseline="df.write.parquet",
            baseline_seconds=w["parquet_s"],
            ratio=w["ratio"],
            target=f"≤ {w['target_max_ratio']:g}x",
            met=w["ratio"] <= w["target_max_ratio"],
            notes=best,
        ),
        Row(
            benchmark="spark",
            operation="shuffle + Python sink that only counts",
            rows=rows,
            seconds=w["shuffle_python_sink_s"],
            rows_per_s=_rate(rows, w["shuffle_python_sink_s"]),
            baseline="df.write.parquet",
            baseline_seconds=w["parquet_s"],
            ratio=w["sink_ratio"],
            notes=f"{best}; Spark's floor for a Python writer",
        ),
        Row(
            benchmark="spark",
            operation="lakeops.spark.compact (full)",
            rows=c["rows"],
            seconds=c["spark_job_s"],
            rows_per_s=_rate(c["rows"], c["spark_job_s"]),
            baseline="table.compact in-process",
            baseline_seconds=c["in_process_s"],
            ratio=_ratio(c["spark_job_s"], c["in_process_s"]),
            notes="local[2], 4 commits, 4 buckets",
        ),
    ]


def rows_cross_partition(doc: Doc) -> list[Row]:
    """bench_cross_partition: in-process and Spark upsert, global index resolve."""
    phases = doc["phases"]
    labels = {
        "local": ("cross-partition upsert: table.write", "incl. index bootstrap"),
        "spark": ("cross-partition upsert: lakeops.spark.write", "local[2]; RSS of process tree"),
    }
    out = []
    for phase, (operation, note) in labels.items():
        if phase not in phases:
            continue
        r = phases[phase]
        out.append(
            Row(
                benchmark="cross_partition",
                operation=operation,
                rows=doc["upserts"],
                seconds=r["seconds"],
                rows_per_s=r["rows_per_s"],
                peak_rss_mib=r["peak_rss_mib"],
                notes=f"into {doc['keys']:,} keys, 30% moving; {note}",
            )
        )
    r = phases["index"]
    out.append(
        Row(
            benchmark="cross_partition",
            operation=f"resolve upsert, {doc['index_keys']:,}-key global index",
            rows=doc["upserts"],
            seconds=r["seconds"],
            rows_per_s=r["rows_per_s"],
            peak_rss_mib=r["peak_rss_mib"],
            notes=f"index {r['index_mib']:,.0f} MiB of Arrow",
        )
    )
    return out


def rows_append(doc: Doc) -> list[Row]:
    """bench_append: append in 100 commits, full compaction and read of an append table."""
    targets = {"append": 1.5, "compact": 2.0, "read": 1.5}
    out = []
    for phase, target in targets.items():
        ours, floor = doc["phases"][phase], doc["phases"][f"{phase}-floor"]
        ratio = doc["ratios"][phase]
        out.append(
            Row(
                benchmark="append",
                operation=f"{phase.upper()}: append table",
                rows=doc["rows"],
                seconds=ours["seconds"],
                rows_per_s=ours["rows_per_s"],
                baseline=f"pyarrow {phase}",
                baseline_seconds=floor["seconds"],
                ratio=ratio,
                peak_rss_mib=ours["peak_rss_mb"],
                target=f"≤ {target:g}x",
                met=ratio <= target,
                notes=f"baseline RSS {floor['peak_rss_mb']:,.0f} MiB",
            )
        )
    return out


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "bench_write_read.py",
        args=(),
        quick_args=("--rows", "100000", "--upserts", "30000", "--repeat", "1"),
        to_rows=rows_write_read,
    ),
    Benchmark(
        "bench_merge.py",
        args=(),
        quick_args=("--rows", "100000", "--keys", "20000", "--repeat", "1"),
        to_rows=rows_merge,
    ),
    Benchmark(
        "bench_compact.py",
        args=("--amplification",),
        quick_args=("--keys", "100000", "--amplification"),
        to_rows=rows_compact,
    ),
    Benchmark(
        "bench_lookup_changelog.py",
        args=(),
        quick_args=("--keys", "500000", "--changed", "10000"),
        to_rows=rows_lookup,
    ),
    Benchmark(
        "bench_append.py",
        args=(),
        quick_args=("--rows", "500000"),
        to_rows=rows_append,
    ),
    Benchmark(
        "bench_spark.py",
        args=(),
        quick_args=("--rows", "200000", "--repeat", "1"),
        to_rows=rows_spark,
        needs_spark=True,
    ),
    Benchmark(
        "bench_cross_partition.py",
        args=(),
        quick_args=("--keys", "500000", "--upserts", "100000", "--index-keys", "2000000"),
        to_rows=rows_cross_partition,
        skip_spark_args=("--skip-spark",),
    ),
)


# --------------------------------------------------------------------------------- running
def parse_json_output(stdout: str) -> Doc:
    """The JSON document a benchmark printed: all of stdout, or else the last document that
    starts at the beginning of a line (in case something else was printed before it)."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    lines = stdout.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for i in reversed(range(len(lines))):
        if lines[i][:1] in ("{", "["):
            try:
                doc, _ = decoder.raw_decode(stdout, offsets[i])
            except json.JSONDecodeError:
                continue
            return doc
    raise ValueError("no JSON document in the benchmark's output")


def _run(cmd: list[str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``cmd`` in its own session; return (exit code or None on timeout, stdout, stderr).

    On a timeout or an interrupt the whole process group is killed, so no phase process or Spark
    JVM the benchmark started outlives it.
    """
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        return None, stdout, stderr
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc.returncode, stdout, stderr


def run_benchmark(bench: Benchmark, args: argparse.Namespace) -> tuple[list[Row], bool, float]:
    """Run one script; return its rows, whether it succeeded, and its wall time."""
    extra = bench.quick_args if args.quick else bench.args
    if args.skip_spark:
        extra = (*extra, *bench.skip_spark_args)
    script = HERE / bench.script
    print(f"== {script.relative_to(HERE.parent)} {' '.join(extra)}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    code, stdout, stderr = _run([sys.executable, str(script), *extra, "--json"], args.timeout)
    wall = time.perf_counter() - start
    rows: list[Row] = []
    error = ""
    if code is None:
        error = f"timed out after {args.timeout:g} s"
    elif code != 0:
        error = f"exit code {code}"
    else:
        try:
            rows = bench.to_rows(parse_json_output(stdout))
        except (ValueError, KeyError, TypeError) as exc:
            error = f"unreadable output: {type(exc).__name__}: {exc}"
    if error:
        print(f"   FAILED ({error}) after {wall:.1f} s; its stderr ends with:", file=sys.stderr)
        sys.stderr.write("".join(stderr.splitlines(keepends=True)[-30:]))
        failure = Row(benchmark=bench.name.removeprefix("bench_"), operation="", error=error)
        return [failure], False, wall
    print(f"   done in {wall:.1f} s", file=sys.stderr, flush=True)
    return rows, True, wall


# ------------------------------------------------------------------------------- rendering
COLUMNS: tuple[tuple[str, bool], ...] = (  # (header, right-aligned)
    ("benchmark", False),
    ("operation", False),
    ("rows", True),
    ("time s", True),
    ("rows/s", True),
    ("baseline", False),
    ("baseline s", True),
    ("ratio", True),
    ("peak RSS MiB", True),
    ("target", False),
    ("met", False),
    ("notes", False),
)


def _cells(row: Row) -> list[str]:
    def num(value: float | None, fmt: str) -> str:
        return "" if value is None else format(value, fmt)

    met = "" if row.met is None else ("yes" if row.met else "NO")
    return [
        row.benchmark,
        f"FAILED: {row.error}" if row.error else row.operation,
        num(row.rows, ",d"),
        num(row.seconds, ".3f"),
        num(row.rows_per_s, ",.0f"),
        row.baseline,
        num(row.baseline_seconds, ".3f"),
        "" if row.ratio is None else f"{row.ratio:.2f}x",
        num(row.peak_rss_mib, ",.0f"),
        row.target,
        met,
        row.notes,
    ]


def render(rows: list[Row]) -> str:
    """An aligned table that is also a Markdown table."""
    table = [[h for h, _ in COLUMNS], *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    right = [r for _, r in COLUMNS]

    def line(cells: list[str]) -> str:
        padded = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if r else "-" * (w + 2) for w, r in zip(widths, right, strict=True)
        )
        + "|"
    )
    return "\n".join([line(table[0]), rule, *(line(c) for c in table[1:])])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks, print the table (or JSON); 1 if any benchmark process failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes: a fast smoke run")
    parser.add_argument(
        "--skip-spark", action="store_true", help="skip bench_spark and the Spark phase"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this benchmark (e.g. merge or bench_merge); repeatable",
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds per benchmark (default 3600)"
    )
    args = parser.parse_args(argv)
    selected = [
        b
        for b in BENCHMARKS
        if not (args.skip_spark and b.needs_spark)
        and (not args.only or any(b.name in (n, f"bench_{n}") for n in args.only))
    ]
    if not selected:
        parser.error("no benchmark selected")
    rows: list[Row] = []
    failed: list[str] = []
    start = time.perf_counter()
    for bench in selected:
        bench_rows, ok, _ = run_benchmark(bench, args)
        rows.extend(bench_rows)
        if not ok:
            failed.append(bench.name)
    total = time.perf_counter() - start
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2, ensure_ascii=False))
    else:
        print(render(rows))
    mode = "quick sizes" if args.quick else "default sizes"
    print(
        f"{len(selected)} benchmarks ({mode}) in {total:.0f} s"
        + (f"; FAILED: {', '.join(failed)}" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
