"""Point lookups against a full read of the same primary-key table (issue 39, item 4).

Run from the repository root::

    .venv/bin/python benchmarks/bench_lookup.py                     # 1M rows, 100 keys
    .venv/bin/python benchmarks/bench_lookup.py --rows 4000000 --keys 1000 --rounds 5

The table: ``id BIGINT`` (primary key), ``v BIGINT``, ``f DOUBLE``, ``s STRING`` (16 random
characters), 4 fixed buckets, deletion vectors on (a lookup table: batch reads and lookups skip
level 0), written in one commit and fully compacted. Each round, in this order and in fresh
processes: ``table.lookup`` of ``--keys`` random existing keys, then ``table.read()`` of the
whole table. Printed: the median over rounds of lookup time / read time in the same round, the
best of each, and each side's peak RSS. Cores: the process's default parallelism.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


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
        options={"bucket": "4", "deletion-vectors.enabled": "true"},
    )
    table.write(data)
    table.compact(full=True)


def measure(warehouse: Path, what: str, rows: int, keys: int, seed: int) -> dict[str, float]:
    from lakeops import Catalog

    table = Catalog(str(warehouse)).get_table("db.t")
    rng = np.random.default_rng(seed)
    wanted = pa.table({"id": pa.array(rng.choice(rows, keys, replace=False).astype(np.int64))})
    start = time.perf_counter()
    got = table.lookup(wanted) if what == "lookup" else table.read()
    seconds = time.perf_counter() - start
    expected = keys if what == "lookup" else rows
    if got.num_rows != expected:
        raise AssertionError(f"{what} returned {got.num_rows} rows, expected {expected}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "rss_mib": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--phase", choices=("lookup", "read"), help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        out = measure(Path(args.warehouse), args.phase, args.rows, args.keys, args.seed)
        print(json.dumps(out))
        return
    with tempfile.TemporaryDirectory(prefix="bench-lookup-") as tmp:
        warehouse = Path(tmp)
        build(warehouse, args.rows)
        runs: dict[str, list[dict[str, float]]] = {"lookup": [], "read": []}
        for r in range(args.rounds):
            for what in ("lookup", "read"):
                cmd = [
                    sys.executable,
                    __file__,
                    *("--phase", what, "--warehouse", str(warehouse), "--seed", str(r)),
                    *("--rows", str(args.rows), "--keys", str(args.keys)),
                ]
                done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                runs[what].append(json.loads(done.stdout.strip().splitlines()[-1]))
    ratio = statistics.median(
        a["seconds"] / b["seconds"] for a, b in zip(runs["lookup"], runs["read"], strict=True)
    )
    for what in ("lookup", "read"):
        best = min(x["seconds"] for x in runs[what])
        rss = max(x["rss_mib"] for x in runs[what])
        print(f"{what:6}: best {best:.3f} s, peak RSS {rss:.0f} MiB")
    print(f"{args.keys} lookups / full read of {args.rows} rows: {ratio:.2f}x (median of rounds)")


if __name__ == "__main__":
    main()
