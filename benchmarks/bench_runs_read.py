"""Merged read of a primary-key table with 8 sorted runs per bucket: lakeops against
pypaimon-rust and the plain-pyarrow floor (issue 39, item 2).

Usage::

    python3 -m venv .venv-peers && .venv-peers/bin/pip install pypaimon-rust pyarrow numpy
    .venv/bin/python benchmarks/bench_runs_read.py --rows 4000000 --rounds 3

The table (built once by lakeops, ``write-only = true`` so nothing compacts): ``id`` BIGINT
primary key, ``s`` 16 random hex characters, ``x`` DOUBLE, 4 buckets; 8 commits of
``rows / 8`` rows each, keys drawn at random from ``[0, rows / 2)``, so every bucket holds 8
overlapping sorted runs and about a third of the rows are superseded. Each round reads the whole
table, every reader in a fresh process (imports before the clock), in turn:

* ``lakeops``: ``table.read()`` (this checkout, ``.venv``);
* ``pypaimon-rust``: ``new_read_builder().new_read().read_arrow(splits)`` collected into one
  Arrow table (``.venv-peers``);
* ``floor``: ``pyarrow.parquet.read_table`` of the list of every data file (pyarrow's
  threaded dataset read), unmerged (``.venv``): the cost of decoding the bytes alone.

Printed: per reader the best wall and CPU time, cores used (CPU / wall) and the largest peak RSS
over the rounds, the rows it returned (lakeops and pypaimon-rust must agree), and the median
over the rounds of lakeops' time divided by each peer's in the same round. Targets: lakeops
<= 0.8x pypaimon-rust's wall and <= 1.2x its peak memory; <= 1.0x the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PEERS = HERE / ".venv-peers" / "bin" / "python"
READERS = ("lakeops", "pypaimon-rust", "floor")

_CHILD = r"""
import json, os, resource, sys, time
reader, warehouse = sys.argv[1], sys.argv[2]
if reader == "lakeops":
    from lakeops import Catalog
    import lakeops.table.primary_key, lakeops.read.merge_read  # loaded before the clock
    table = Catalog(warehouse).get_table("db.t")
    def run():
        return table.read().num_rows
elif reader == "pypaimon-rust":
    import pyarrow as pa
    from pypaimon_rust.datafusion import PaimonCatalog
    table = PaimonCatalog({"warehouse": warehouse}).get_table("db.t")
    def run():
        builder = table.new_read_builder()
        splits = builder.new_scan().plan().splits()
        batches = list(builder.new_read().read_arrow(splits))
        return pa.Table.from_batches(batches).num_rows
else:
    import glob
    import pyarrow.dataset, pyarrow.parquet as pq  # loaded before the clock
    files = sorted(glob.glob(os.path.join(warehouse, "db.db", "t", "bucket-*", "data-*")))
    def run():
        return pq.read_table(files).num_rows
cpu0, t0 = time.process_time(), time.perf_counter()
rows = run()
wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": rows, "wall": wall, "cpu": cpu, "rss_mib": rss}))
"""


def build(warehouse: str, rows: int) -> None:
    """The table: 8 commits of ``rows / 8`` random keys each, nothing compacted."""
    import numpy as np
    import pyarrow as pa

    from lakeops import Catalog

    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("x", pa.float64())]
    )
    table = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "4", "write-only": "true", "num-sorted-run.stop-trigger": "100"},
    )
    rng = np.random.default_rng(7)
    per = rows // 8
    for _ in range(8):
        ids = rng.integers(0, rows // 2, per)
        hexes = rng.integers(0, 2**63, per).astype(np.uint64)
        strings = pa.array([f"{h:016x}" for h in hexes.tolist()])
        table.write(pa.table({"id": ids, "s": strings, "x": rng.random(per)}, schema=schema))


def measure(reader: str, warehouse: str) -> dict[str, float]:
    python = str(PEERS) if reader == "pypaimon-rust" else sys.executable
    out = subprocess.run(
        [python, "-c", _CHILD, reader, warehouse],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(HERE),
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="keep the built table here")
    args = parser.parse_args()
    if not PEERS.exists():
        sys.exit(
            f"{PEERS} missing: python3 -m venv .venv-peers && .venv-peers/bin/pip install "
            "pypaimon-rust pyarrow numpy"
        )
    workdir = args.workdir or tempfile.mkdtemp(prefix="runs-read-")
    warehouse = os.path.join(workdir, "wh")
    if not os.path.exists(os.path.join(warehouse, "db.db", "t")):
        t0 = time.perf_counter()
        build(warehouse, args.rows)
        print(f"built {args.rows:,} rows in 8 runs x 4 buckets in {time.perf_counter() - t0:.1f} s")
    samples: dict[str, list[dict[str, float]]] = {r: [] for r in READERS}
    try:
        for _ in range(args.rounds):
            for reader in READERS:
                samples[reader].append(measure(reader, warehouse))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"rows written {args.rows:,}; cores {os.cpu_count()}; load average {load:.1f}")
    print("| reader | rows read | best wall s | best CPU s | cores | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for reader in READERS:
        got = samples[reader]
        best = min(got, key=lambda g: g["wall"])
        print(
            f"| {reader} | {int(best['rows']):,} | {best['wall']:.2f} | {best['cpu']:.2f} | "
            f"{best['cpu'] / best['wall']:.2f} | {max(g['rss_mib'] for g in got):.0f} |"
        )
    ours = samples["lakeops"]
    for peer in ("pypaimon-rust", "floor"):
        wall = statistics.median(
            o["wall"] / p["wall"] for o, p in zip(ours, samples[peer], strict=True)
        )
        cpu = statistics.median(
            o["cpu"] / p["cpu"] for o, p in zip(ours, samples[peer], strict=True)
        )
        rss = max(o["rss_mib"] for o in ours) / max(p["rss_mib"] for p in samples[peer])
        print(f"lakeops / {peer}: wall {wall:.2f}x, CPU {cpu:.2f}x, peak RSS {rss:.2f}x")


if __name__ == "__main__":
    main()
