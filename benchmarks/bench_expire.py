"""One expiry pass against the history it keeps: the time to expire ``--expire`` snapshots
from tables that retain about 150 and about 1,000 snapshots after the pass.

Run from the repository root::

    .venv/bin/python benchmarks/bench_expire.py                    # retained 150 and 1,000
    .venv/bin/python benchmarks/bench_expire.py --retained 150 1000 5000

For each ``--retained`` count R a primary-key table (one bucket) gets R + ``--expire`` commits
of a few rows each (no snapshot expires while it is written), then one pass with
``retain_min=R``, ``time_retained="0 ms"`` and ``limit=--expire`` removes the oldest
``--expire`` snapshots. The table is built once per R and copied for each of ``--repeat``
passes (each pass sees the same table); the best pass time is reported. The pass time should
not grow with R: it reads the snapshots it expires and the oldest one it keeps, not the
retained history.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from lakeops import Catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def build(root: Path, commits: int) -> None:
    """A table of ``commits`` snapshots, none expired while it is written."""
    catalog = Catalog(str(root))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "snapshot.num-retained.min": str(commits + 10),
            "snapshot.num-retained.max": str(commits + 10),
        },
    )
    for i in range(commits):
        table.write(pa.table({"id": [i % 97, i], "v": [i, i]}, schema=SCHEMA))


def one_pass(root: Path, retained: int, expire: int) -> tuple[float, int]:
    """Seconds of one expiry pass and how many snapshots it expired."""
    table = Catalog(str(root)).get_table("db.t")
    start = time.perf_counter()
    result = table.expire_snapshots(retain_min=retained, time_retained="0 ms", limit=expire)
    return time.perf_counter() - start, len(result.expired_snapshots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retained", type=int, nargs="+", default=[150, 1000])
    parser.add_argument("--expire", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lakeops-bench-expire-"))
    try:
        print(f"{'retained':>9} {'expired':>8} {'best pass s':>12} {'build s':>8}")
        for retained in args.retained:
            source = work / f"r{retained}"
            start = time.perf_counter()
            build(source, retained + args.expire)
            built = time.perf_counter() - start
            times = []
            expired = 0
            for n in range(args.repeat):
                copy = work / f"r{retained}-{n}"
                shutil.copytree(source, copy)
                seconds, expired = one_pass(copy, retained, args.expire)
                times.append(seconds)
                shutil.rmtree(copy)
            print(f"{retained:>9,} {expired:>8} {min(times):>12.3f} {built:>8.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
