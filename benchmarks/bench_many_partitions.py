"""Many-partition writes against deltalake and pyarrow: one write of ``--rows`` rows into
``--partitions`` partitions, by a lakeops primary-key table (``--buckets`` fixed buckets per
partition), a lakeops append table (``bucket = -1``), deltalake's ``write_deltalake`` and
pyarrow's ``dataset.write_dataset`` (the floor: plain hive-partitioned Parquet), all
partitioned by the same column.

Data (fixed seeds, the same rows for every writer): ``id`` (int64, unique, shuffled), ``p``
(int32, the partition column: ``--partitions`` values, uniform), ``s`` (24 random hex
characters: high entropy, practically all distinct), ``city`` (one of 50 names: friendly to
dictionaries) and ``x`` (float64). With the defaults (1M rows, 1,000 partitions, 4 buckets)
the primary-key table writes 4,000 files of about 250 rows, the append table and the peers
1,000 files of about 1,000 rows.

Each measured write runs in a fresh process (this script, re-run with hidden arguments), so
its peak RSS (``ru_maxrss``) is the write's; the data is made and the table created before
the clock starts, imports too. Every write goes to a fresh directory, after ``sync`` (older
tables are deleted two rounds later), so no write pays for the write-back or the deletion of
the thousands of files written before it. Rounds interleave the writers (their order rotates every
round), as the machine's load drifts. The report gives, per writer, the median and best wall
time, CPU time (user + system), cores used (CPU / wall) and peak RSS, and its ratio to
deltalake and to the pyarrow floor — the median over rounds of the ratio within each round,
so a load spike that hits one round hits both sides of the ratio.

``floor-buckets`` is the per-file floor of the primary-key write: the same number of files
(``--buckets`` per partition, by ``id % buckets``) in the same layout (``p=<v>/bucket-<b>/``),
each sorted by ``id`` and written by its own ``pyarrow.parquet.ParquetWriter`` (zstd level 1,
Paimon's default codec) after one whole-array sort — directories, file opens and Parquet
encoding, nothing else (no sequence numbers, merging, statistics or commit).

deltalake runs in its own venv (``python3 -m venv .venv-peers && .venv-peers/bin/pip install
deltalake pyarrow numpy``), in ``.venv-peers/bin/python``; lakeops and pyarrow in this one.

Usage: ``.venv/bin/python benchmarks/bench_many_partitions.py [--rows 1000000]
[--partitions 1000] [--buckets 4] [--rounds 3] [--writers lakeops-pk,deltalake,...]
[--json]``. Figures: ``benchmarks/many_partitions.md``. Target (informational): the
primary-key write at most 1.5x deltalake's wall time.
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

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".venv-peers" / "bin" / "python"
WRITERS = ("lakeops-pk", "lakeops-append", "deltalake", "pyarrow", "floor-buckets")
CITIES = [f"city-{i:02d}" for i in range(50)]
TARGET = 1.5


def data(rows: int, partitions: int) -> pa.Table:
    """The rows every writer writes (see the module docstring)."""
    rng = np.random.default_rng(20240601)
    hexes = rng.integers(0, 16, size=(rows, 24), dtype=np.uint8)
    chars = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[hexes]
    return pa.table(
        {
            "id": pa.array(rng.permutation(rows).astype(np.int64)),
            "p": pa.array(rng.integers(0, partitions, rows, dtype=np.int32)),
            "s": pa.array(chars.reshape(-1).view("S24").astype(str)),
            "city": pa.array(np.array(CITIES)[rng.integers(0, len(CITIES), rows)]),
            "x": pa.array(rng.random(rows)),
        }
    )


def _usage() -> tuple[float, float]:
    """(CPU seconds so far, peak RSS in MiB) of this process."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_maxrss / 1024


def _files_under(path: str, suffix: str) -> int:
    return sum(1 for _, _, names in os.walk(path) for n in names if n.endswith(suffix))


def measure(writer: str, path: str, rows: int, partitions: int, buckets: int) -> dict[str, Any]:
    """One write by ``writer`` into a new table at ``path``; only the write is timed."""
    table = data(rows, partitions)
    if writer == "deltalake":
        from deltalake import write_deltalake

        cpu0, _ = _usage()
        start = time.perf_counter()
        write_deltalake(path, table, partition_by=["p"])
    elif writer == "pyarrow":
        import pyarrow.dataset as ds

        cpu0, _ = _usage()
        start = time.perf_counter()
        ds.write_dataset(
            table,
            path,
            format="parquet",
            partitioning=["p"],
            partitioning_flavor="hive",
            max_partitions=partitions + 1,
            existing_data_behavior="overwrite_or_ignore",
        )
    elif writer == "floor-buckets":
        cpu0, _ = _usage()
        start = time.perf_counter()
        floor_buckets(table, path, buckets)
    else:
        from lakeops import Catalog

        catalog = Catalog(path)
        catalog.create_database("db")
        schema = table.schema.set(0, pa.field("id", pa.int64(), False))
        schema = schema.set(1, pa.field("p", pa.int32(), False))
        if writer == "lakeops-pk":
            target = catalog.create_table(
                "db.t",
                schema=schema,
                primary_keys=["p", "id"],
                partition_keys=["p"],
                options={"bucket": str(buckets)},
            )
        else:
            target = catalog.create_table("db.t", schema=schema, partition_keys=["p"])
        table = table.cast(schema)
        cpu0, _ = _usage()
        start = time.perf_counter()
        target.write(table)
    seconds = time.perf_counter() - start
    cpu1, peak = _usage()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu1 - cpu0,
        "peak_rss_mb": peak,
        "files": _files_under(path, ".parquet"),
    }


def floor_buckets(table: pa.Table, path: str, buckets: int) -> None:
    """The ``floor-buckets`` writer (see the module docstring): one sort by (partition,
    bucket, id), then per (partition, bucket) a directory, a file and a Parquet writer."""
    import pyarrow.parquet as pq

    p = table.column("p").to_numpy()
    ids = table.column("id").to_numpy()
    bucket = ids % buckets
    order = np.lexsort((ids, bucket, p))
    rows = table.take(pa.array(order))
    group = (p[order].astype(np.int64) * buckets + bucket[order]).astype(np.int64)
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(group)) + 1, [len(group)]))
    os.makedirs(path, exist_ok=True)
    made: set[str] = set()
    for n, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        pv, b = divmod(int(group[lo]), buckets)
        partition = f"{path}/p={pv}"
        if partition not in made:
            os.mkdir(partition)
            made.add(partition)
        directory = f"{partition}/bucket-{b}"
        os.mkdir(directory)
        with pq.ParquetWriter(
            f"{directory}/data-{n}.parquet",
            rows.schema,
            compression="zstd",
            compression_level=1,
            use_dictionary=["p", "city"],  # the columns lakeops' sample test picks here
        ) as out:
            out.write_table(rows.slice(lo, hi - lo))


def _run(writer: str, path: str, args: argparse.Namespace) -> dict[str, Any]:
    python = str(PEERS) if writer == "deltalake" else sys.executable
    cmd = [python, __file__, "--writer", writer, "--path", path]
    cmd += ["--rows", str(args.rows), "--partitions", str(args.partitions)]
    cmd += ["--buckets", str(args.buckets)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _ratios(results: dict[str, list[dict[str, Any]]], writer: str, peer: str) -> float | None:
    """The median over rounds of ``writer``'s wall time over ``peer``'s in the same round."""
    if peer not in results or writer not in results:
        return None
    pairs = zip(results[writer], results[peer], strict=True)
    return statistics.median(w["seconds"] / p["seconds"] for w, p in pairs)


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """Print the table described in the module docstring."""
    print(
        f"many-partition write: {args.rows:,} rows, {args.partitions:,} partitions, "
        f"{args.buckets} buckets (primary key), {os.cpu_count()} cores, {args.rounds} rounds"
    )
    print(
        f"  {'writer':15s} {'files':>6s} {'wall med':>9s} {'best':>7s} {'CPU med':>8s} "
        f"{'cores':>5s} {'peak RSS':>9s} {'vs delta':>8s} {'vs pyarrow':>10s}"
    )
    for writer, runs in results.items():
        wall = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu_seconds"] for r in runs)
        peak = max(r["peak_rss_mb"] for r in runs)
        delta = _ratios(results, writer, "deltalake")
        floor = _ratios(results, writer, "pyarrow")
        print(
            f"  {writer:15s} {runs[0]['files']:6,d} {wall:8.2f}s "
            f"{min(r['seconds'] for r in runs):6.2f}s {cpu:7.2f}s {cpu / wall:5.2f} "
            f"{peak:7,.0f}MB {_fmt(delta):>8s} {_fmt(floor):>10s}"
        )
    pk = _ratios(results, "lakeops-pk", "deltalake")
    if pk is not None:
        verdict = "met" if pk <= TARGET else "not met"
        print(f"  target: primary-key write <= {TARGET}x deltalake: {pk:.2f}x, {verdict}")


def _fmt(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--writers", default=",".join(WRITERS), help="comma-separated, of " + ", ".join(WRITERS)
    )
    parser.add_argument("--json", action="store_true", help="the raw results on stdout")
    parser.add_argument("--writer", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        result = measure(args.writer, args.path, args.rows, args.partitions, args.buckets)
        print(json.dumps(result))
        return
    writers = [w for w in args.writers.split(",") if w]
    unknown = set(writers) - set(WRITERS)
    if unknown:
        sys.exit(f"unknown writers {sorted(unknown)}; choose from {', '.join(WRITERS)}")
    if "deltalake" in writers and not PEERS.exists():
        sys.exit(f"no {PEERS}: see this script's docstring for the deltalake venv")
    results: dict[str, list[dict[str, Any]]] = {w: [] for w in writers}
    with tempfile.TemporaryDirectory(prefix="bench-many-partitions-") as tmp:
        for i in range(args.rounds):
            order = writers[i % len(writers) :] + writers[: i % len(writers)]
            for writer in order:
                # a fresh directory per write, the previous round's tables deleted and every
                # dirty page written back before the clock starts: a write does not pay for
                # the deletion or the write-back of the thousands of files before it
                path = os.path.join(tmp, f"{i}-{writer}")
                shutil.rmtree(os.path.join(tmp, f"{i - 2}-{writer}"), ignore_errors=True)
                os.sync()
                results[writer].append(_run(writer, path, args))
                print(f"round {i + 1} {writer}: {results[writer][-1]}", file=sys.stderr)
    if args.json:
        print(json.dumps(results))
    report(results, args)


if __name__ == "__main__":
    main()
