"""First-row table writes: 10 commits of 100,000 random keys (of 2,000,000), 2 buckets, the
writer's own compactions (level 0 lifted with Paimon's lookup: a key a higher level holds keeps
its first row there). Prints wall and CPU seconds of the ten writes, the rows read back and the
peak RSS.

Usage: ``.venv/bin/python benchmarks/bench_first_row.py [--commits 10] [--rows 100000]
[--lookup]`` (``--lookup``: ``changelog-producer = lookup`` too). Compare two trees by running
it with ``PYTHONPATH`` set to each, alternating. No target.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa

from lakeops import Catalog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lookup", action="store_true", help="changelog-producer = lookup")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    schema = pa.schema([pa.field("k", pa.int64(), False), ("s", pa.string()), ("x", pa.float64())])
    batches = [
        pa.table(
            {
                "k": rng.integers(0, 20 * args.rows, args.rows),
                "s": [f"{v:016x}" for v in rng.integers(0, 2**62, args.rows)],
                "x": rng.random(args.rows),
            },
            schema=schema,
        )
        for _ in range(args.commits)
    ]
    with tempfile.TemporaryDirectory() as root:
        catalog = Catalog(root)
        catalog.create_database("db")
        options = {"bucket": "2", "merge-engine": "first-row"}
        if args.lookup:
            options["changelog-producer"] = "lookup"
        table = catalog.create_table("db.t", schema=schema, primary_keys=["k"], options=options)
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            table.write(batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rows = table.read().num_rows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.commits} writes of {args.rows:,} rows: wall {wall:.2f} s, CPU {cpu:.2f} s, "
        f"{rows:,} rows read back, peak RSS {peak:.0f} MiB"
    )


if __name__ == "__main__":
    main()
