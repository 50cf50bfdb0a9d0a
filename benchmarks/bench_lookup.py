"""Point lookups against a full read of the same primary-key table (issue 39, item 4).

Run from the repository root::

    .venv/bin/python benchmarks/bench_lookup.py --rounds 5          # 1M rows, 100 keys
    .venv/bin/python benchmarks/bench_lookup.py --rows 4000000 --keys 1000 --rounds 5

The table: ``id BIGINT`` (primary key), ``v BIGINT``, ``f DOUBLE``, ``s STRING`` (16 random
characters), 4 fixed buckets, deletion vectors on (a lookup table: batch reads and lookups skip
level 0), written in one commit and fully compacted. Every phase runs in a fresh process, and
each round runs the phases in this order (so they interleave):

- ``cold``: ``table.lookup`` of ``--keys`` random existing keys, the first in the process, with
  no local lookup files (the directory is emptied first): it builds them
  (:mod:`lakeops.read.lookup_local`);
- ``local``: the same in a fresh process after ``cold`` built the local lookup files (other
  keys): a cold process with local files present;
- ``warm``: a first lookup of ``--keys`` other random keys, then the timed lookup of ``--keys``
  keys (a second batch in the same process);
- ``unit``: ``cold`` with local files turned off (``lookup.cache-max-disk-size`` = 0): the
  first lookup of a process reading row groups (:mod:`lakeops.read.lookup_files`);
- ``read``: ``table.read()`` of the whole table, the first in the process, then a second one
  (``read-2``: a full read gains nothing from a lookup's cache, and this shows it).

Printed per phase: the best and median wall time over rounds, the median cores used (process
CPU time, user + system, over wall time of the timed call) and the peak RSS of the process;
then the median over rounds of each lookup phase / ``read`` of the same round, and the
load average of the machine before and after. The data files are in the OS page cache
throughout (they were just written): the figures are CPU, not disk.
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

PHASES = ("cold", "local", "warm", "unit", "read")
LOOKUPS = ("cold", "local", "warm", "unit")


def build(warehouse: Path, rows: int) -> None:
    from lakeops import Catalog

    rng = np.random.default_rng(7)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    raw = letters[rng.integers(0, len(letters), size=(rows, 16))]
    strings = pa.array([bytes(r).decode() for r in raw])
    data = pa.table(
        {
            "id": pa.array(rng.permutation(rows).astype(np.int64)),
            "v": pa.array(rng.integers(0, 1 << 40, rows)),
            "f": pa.array(rng.random(rows)),
            "s": strings,
        }
    )
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=data.schema,
        primary_keys=["id"],
        options={
            "bucket": "4",
            "deletion-vectors.enabled": "true",
            "lakeops.lookup.local-dir": str(local_dir(warehouse)),
        },
    )
    table.write(data)
    table.compact(full=True)


def local_dir(warehouse: Path) -> Path:
    """Where the benchmark's table keeps its local lookup files."""
    return warehouse / "local-lookup-files"


def peak_rss_mib() -> float:
    """This process's peak resident memory: ``VmHWM`` (reset by ``exec``, unlike
    ``ru_maxrss``, which Linux carries over from the parent that forked the process)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(call: Any) -> tuple[pa.Table, float, float]:
    """``call()``, its wall seconds and the process CPU seconds it took."""
    cpu, start = _cpu(), time.perf_counter()
    got = call()
    return got, time.perf_counter() - start, _cpu() - cpu


def measure(warehouse: Path, what: str, rows: int, keys: int, seed: int) -> dict[str, float]:
    """One phase, in this (fresh) process."""
    from lakeops import Catalog

    table = Catalog(str(warehouse)).get_table("db.t")
    if what == "unit":  # local files off in this process, as lookup.cache-max-disk-size = 0
        import lakeops.read.lookup as lookup_module
        from lakeops.read.lookup_local import LocalSettings

        lookup_module.local_settings = lambda _options: LocalSettings(None, 0.0, 0)
    if what == "cold":
        shutil.rmtree(local_dir(warehouse), ignore_errors=True)
    rng = np.random.default_rng(seed + (1000 if what == "local" else 0))
    # the warm-up batch and the timed batch draw different keys
    first, second = (rng.choice(rows, keys, replace=False).astype(np.int64) for _ in range(2))
    out: dict[str, float] = {}
    # made before the clock in every phase: pyarrow imports pandas (where installed) on its
    # first conversion of a numpy array, which would otherwise fall in the read's time alone
    wanted = pa.table({"id": pa.array(second)})
    if what == "read":
        got, wall, cpu = _timed(table.read)
        got2, wall2, cpu2 = _timed(table.read)
        if got.num_rows != rows or got2.num_rows != rows:
            raise AssertionError(f"read returned {got.num_rows} rows, expected {rows}")
        out.update({"read-2_seconds": wall2, "read-2_cores": cpu2 / wall2})
    else:
        if what == "warm":
            table.lookup(pa.table({"id": pa.array(first)}))
        got, wall, cpu = _timed(lambda: table.lookup(wanted))
        if sorted(got.column("id").to_pylist()) != sorted(second.tolist()):
            raise AssertionError(f"{what} lookup returned other keys than asked")
    out.update(
        {f"{what}_seconds": wall, f"{what}_cores": cpu / wall, f"{what}_rss_mib": peak_rss_mib()}
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        out = measure(Path(args.warehouse), args.phase, args.rows, args.keys, args.seed)
        print(json.dumps(out))
        return
    load_before = os.getloadavg()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-lookup-") as tmp:
        warehouse = Path(tmp)
        build(warehouse, args.rows)
        for r in range(args.rounds):
            merged: dict[str, float] = {}
            for what in PHASES:
                cmd = [
                    sys.executable,
                    __file__,
                    *("--phase", what, "--warehouse", str(warehouse), "--seed", str(r)),
                    *("--rows", str(args.rows), "--keys", str(args.keys)),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                merged.update(json.loads(done.stdout.strip().splitlines()[-1]))
            runs.append(merged)
    load_after = os.getloadavg()
    print(f"{args.keys} lookups against a full read of {args.rows} rows, {args.rounds} rounds")
    for what in (*LOOKUPS, "read", "read-2"):
        secs = [x[f"{what}_seconds"] for x in runs]
        cores = statistics.median(x[f"{what}_cores"] for x in runs)
        rss_key = f"{what.split('-')[0]}_rss_mib"
        rss = max(x[rss_key] for x in runs)
        print(
            f"{what:6}: best {min(secs):.4f} s, median {statistics.median(secs):.4f} s, "
            f"cores used {cores:.2f}, peak RSS {rss:.0f} MiB"
        )
    for what in LOOKUPS:
        ratio = statistics.median(x[f"{what}_seconds"] / x["read_seconds"] for x in runs)
        print(f"{what} lookup / full read: {ratio:.3f}x (median of rounds)")
    print(
        "load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
        + f"; cores here: {os.cpu_count()}"
    )


if __name__ == "__main__":
    main()
