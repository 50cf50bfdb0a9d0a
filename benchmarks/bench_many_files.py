"""Reading a table of many small files: what checking each file against its manifest entry
(size, rows) costs, beside a plain-pyarrow floor that reads the same Parquet files unchecked.

Run from the repository root::

    .venv/bin/python benchmarks/bench_many_files.py                # 100 commits x 5,000 rows
    .venv/bin/python benchmarks/bench_many_files.py --commits 200

``--commits`` write-only commits of ``--rows`` random keys (high-entropy strings) go into 4
buckets, one file per bucket per commit. ``table.read()`` (merged, every file checked) and the
floor (``pyarrow.parquet.read_table`` of every data file, then one sort) are each timed best of
``--repeat``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="lakeops-many-files-")
    catalog = Catalog(root)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"}
    )
    rng = np.random.default_rng(1)
    for _ in range(args.commits):
        ids = rng.integers(0, args.commits * args.rows // 2, args.rows)
        text = [os.urandom(6).hex() for _ in range(args.rows)]
        table.write(pa.table({"id": ids, "v": text, "x": rng.random(args.rows)}, schema=SCHEMA))
    files = sorted(Path(root).rglob("data-*.parquet"))

    def lakeops_read() -> int:
        return Catalog(root).get_table("db.t").read().num_rows

    def floor() -> int:
        parts = pq.read_table(files[0]), *(pq.read_table(f) for f in files[1:])
        return pa.concat_tables(parts).sort_by("_KEY_id").num_rows

    for name, run in (
        ("floor (pyarrow, unchecked, unmerged)", floor),
        ("table.read()", lakeops_read),
    ):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - start)
        print(f"{name:40s} {best:.3f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(files)} files, {os.cpu_count()} cores, peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
