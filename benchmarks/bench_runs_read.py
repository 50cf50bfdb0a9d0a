"""Merged read of a primary-key table with 8 sorted runs per bucket: lakeops against
pypaimon-rust and the plain-pyarrow floor (issue 39, item 2).

Usage::

    python3 -m venv .venv-peers && .venv-peers/bin/pip install pypaimon-rust pyarrow numpy \
        fsspec fastavro cramjam backports.zstd pyroaring
    .venv/bin/python benchmarks/bench_runs_read.py --rows 4000000 --rounds 3

The table (built once by lakeops, ``write-only = true`` so nothing compacts): ``id`` BIGINT
primary key, ``s`` 16 random hex characters, ``x`` DOUBLE, 4 buckets; 8 commits of
``rows / 8`` rows each, keys drawn at random from ``[0, rows / 2)``, so every bucket holds 8
overlapping sorted runs and about a third of the rows are superseded. Each round reads the whole
table, every reader in a fresh process (imports before the clock), in turn, all three in the
same environment, pypaimon-rust's (``.venv-peers``: pyarrow and numpy, and for lakeops its core
dependencies — no pandas, which pyarrow imports on its first conversion wherever it is
installed, as in ``.venv``, adding about 45 MiB to any reader's peak), lakeops from this
checkout (``PYTHONPATH``):

* ``lakeops``: ``table.read()``;
* ``pypaimon-rust``: ``new_read_builder().new_read().read_arrow(splits)`` collected into one
  Arrow table (``.venv-peers``);
* ``floor``: ``pyarrow.parquet.read_table`` of the list of every data file (pyarrow's
  threaded dataset read), unmerged: the cost of decoding the bytes alone.

Printed: per reader the best wall and CPU time, cores used (CPU / wall), the resident memory
before the timed call and the largest peak (``VmHWM`` of the reading process; ``ru_maxrss``
would carry the parent's peak over through ``exec``) over the rounds, the rows it returned
(lakeops and pypaimon-rust must agree), and the median over the rounds of lakeops' time
divided by each peer's in the same round. Targets: lakeops
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
import json, os, sys, time
reader, warehouse = sys.argv[1], sys.argv[2]
def status_mib(field):
    # this process's own figure: ru_maxrss would carry the parent's peak over through exec
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")
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
before = status_mib("VmRSS")
cpu0, t0 = time.process_time(), time.perf_counter()
rows = run()
wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
rss = status_mib("VmHWM")
print(json.dumps({"rows": rows, "wall": wall, "cpu": cpu, "rss_mib": rss, "before_mib": before,
                  "pandas": "pandas" in sys.modules}))
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
    out = subprocess.run(
        [str(PEERS), "-c", _CHILD, reader, warehouse],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(HERE),
        env={**os.environ, "PYTHONPATH": str(HERE)},
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default=None, help="keep the built table here")
    args = parser.parse_args()
    ready = (
        PEERS.exists()
        and not subprocess.run(
            [str(PEERS), "-c", "import pypaimon_rust, fsspec, fastavro, cramjam, pyroaring"],
            capture_output=True,
            check=False,
        ).returncode
    )
    if not ready:
        sys.exit(
            f"{PEERS} missing or incomplete: python3 -m venv .venv-peers && "
            ".venv-peers/bin/pip install pypaimon-rust pyarrow numpy fsspec fastavro cramjam "
            "backports.zstd pyroaring"
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
    print("(RSS in MiB)")
    print(f"rows written {args.rows:,}; cores {os.cpu_count()}; load average {load:.1f}")
    print("| reader | rows read | best wall s | best CPU s | cores | RSS before | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for reader in READERS:
        got = samples[reader]
        best = min(got, key=lambda g: g["wall"])
        print(
            f"| {reader} | {int(best['rows']):,} | {best['wall']:.2f} | {best['cpu']:.2f} | "
            f"{best['cpu'] / best['wall']:.2f} | {max(g['before_mib'] for g in got):.0f} | "
            f"{max(g['rss_mib'] for g in got):.0f} |"
            + (" (pandas imported)" if any(g["pandas"] for g in got) else "")
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
