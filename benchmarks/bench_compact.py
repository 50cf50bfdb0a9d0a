"""Full compaction: 4-bucket table, N keys in 6 overlapping sorted runs per bucket.

Phases, each in a fresh process so peak RSS (``ru_maxrss``) belongs to the phase:

* ``compact``: ``table.compact(full=True)`` — streaming k-way merge, section by section;
* ``baseline``: plain pyarrow on the same data files: read them all, sort by (key, sequence),
  keep the last row per key, write one Parquet file per bucket (zstd).

The table is built with ``write-only=true`` from 6 commits: all N keys, then 5 updates of N/5
random keys each. ``--keys`` changes N (run two sizes to see that compaction memory does not grow
with the table). ``--amplification`` also reports write amplification after 50 small commits
with in-writer compaction (the default universal strategy).

Usage: ``.venv/bin/python benchmarks/bench_compact.py [--keys 1000000] [--amplification]
[--json]``; ``--json`` prints one JSON document with the measured numbers instead of the report.
Target: lakeops compaction time at most 2x the baseline's (informational; nothing here fails).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from peak_memory import peak_rss_mib

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
TARGET_RATIO = 2.0


def _rows(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids),
            "v": pa.array(rng.integers(0, 10**9, len(ids))),
            "f": pa.array(rng.random(len(ids))),
            "s": pa.array([f"s{i % 100000:05d}" for i in ids]),
        },
        schema=SCHEMA,
    )


def build(warehouse: str, keys: int) -> None:
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"}
    )
    rng = np.random.default_rng(3)
    table.write(_rows(rng.permutation(keys), rng))
    for _ in range(5):
        table.write(_rows(rng.choice(keys, size=keys // 5, replace=False), rng))


def phase_compact(warehouse: str) -> dict:
    table = Catalog(warehouse).get_table("db.t")
    start = time.perf_counter()
    snapshot = table.compact(full=True)
    seconds = time.perf_counter() - start
    assert snapshot is not None
    rows = sum(e.file.row_count for e in table.store.live_entries(snapshot))
    return {"seconds": seconds, "rows_out": rows}


def phase_baseline(warehouse: str, out: str) -> dict:
    paths = sorted(glob.glob(f"{warehouse}/db.db/t/bucket-*/*.parquet"))
    start = time.perf_counter()
    rows_out = 0
    for bucket in sorted({p.split("bucket-")[1].split("/")[0] for p in paths}):
        files = [p for p in paths if f"bucket-{bucket}/" in p]
        data = pa.concat_tables([pq.read_table(p) for p in files])
        order = pc.sort_indices(
            data, sort_keys=[("_KEY_id", "ascending"), ("_SEQUENCE_NUMBER", "ascending")]
        )
        data = data.take(order)
        key = data.column("_KEY_id").to_numpy()
        last = np.append(key[1:] != key[:-1], True)
        merged = data.filter(pa.array(last))
        pq.write_table(
            merged, f"{out}/bucket-{bucket}.parquet", compression="zstd", compression_level=1
        )
        rows_out += merged.num_rows
    return {"seconds": time.perf_counter() - start, "rows_out": rows_out}


def phase_amplification(warehouse: str) -> dict:
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.w", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4"}
    )
    rng = np.random.default_rng(5)
    start = time.perf_counter()
    for _ in range(50):
        table.write(_rows(rng.choice(100_000, size=2_000, replace=False), rng))
    health = table.health()
    return {
        "seconds": time.perf_counter() - start,
        "commits": 50,
        "write_amplification": health.write_amplification,
        "ingested_bytes": health.ingested_bytes,
        "compaction_bytes": health.compaction_bytes,
        "max_sorted_runs": health.max_sorted_runs,
        "snapshots": len(table.snapshots()),
    }


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--amplification", action="store_true")
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        result = {
            "compact": lambda: phase_compact(args.warehouse),
            "baseline": lambda: phase_baseline(args.warehouse, args.out),
            "amplification": lambda: phase_amplification(args.warehouse),
        }[args.phase]()
        result["peak_rss_mib"] = peak_rss_mib()
        result["arrow_peak_mib"] = pa.default_memory_pool().max_memory() / 2**20
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        wh_compact, wh_base, out = (os.path.join(tmp, n) for n in ("a", "b", "out"))
        os.makedirs(out)
        build(wh_compact, args.keys)
        build(wh_base, args.keys)
        input_rows = args.keys * 2
        compact = _child(["--phase", "compact", "--warehouse", wh_compact])
        base = _child(["--phase", "baseline", "--warehouse", wh_base, "--out", out])
        assert compact["rows_out"] == base["rows_out"] == args.keys
        table_mib = (
            sum(os.path.getsize(p) for p in glob.glob(f"{wh_base}/db.db/t/bucket-*/*.parquet"))
            / 2**20
        )
        amp = (
            _child(["--phase", "amplification", "--warehouse", os.path.join(tmp, "amp")])
            if args.amplification
            else None
        )
        if args.json:
            report = {
                "keys": args.keys,
                "input_rows": input_rows,
                "table_mib": table_mib,
                "target_max_ratio": TARGET_RATIO,
                "lakeops": compact,
                "baseline": base,
                "ratio": compact["seconds"] / base["seconds"],
                "amplification": amp,
            }
            print(json.dumps(report, indent=2))
            return
        print(
            f"full compaction of {args.keys:,} keys, 6 overlapping runs x 4 buckets "
            f"({input_rows:,} input rows, {table_mib:.0f} MiB of data files)"
        )
        print(
            f"{'':10} {'seconds':>8} {'input rows/s':>13} {'peak RSS MiB':>13} "
            f"{'Arrow peak MiB':>15}"
        )
        for name, r in (("lakeops", compact), ("baseline", base)):
            print(
                f"{name:10} {r['seconds']:>8.2f} {input_rows / r['seconds']:>13,.0f} "
                f"{r['peak_rss_mib']:>13.0f} {r['arrow_peak_mib']:>15.0f}"
            )
        print(f"ratio lakeops/baseline: {compact['seconds'] / base['seconds']:.2f}x (target <= 2x)")
        if amp is not None:
            print(
                f"50 commits x 2,000 upserts (100k keys, 4 buckets, in-writer universal "
                f"compaction): write amplification {amp['write_amplification']:.2f} "
                f"(compaction {amp['compaction_bytes'] / 2**20:.1f} MiB / ingested "
                f"{amp['ingested_bytes'] / 2**20:.1f} MiB), max sorted runs "
                f"{amp['max_sorted_runs']}, {amp['snapshots']} snapshots, "
                f"{amp['seconds']:.1f} s"
            )


if __name__ == "__main__":
    main()
