"""Lookup-producer compaction: 100,000 changed keys into a 5,000,000-key table.

The table (4 buckets, ``changelog-producer=lookup``, ``write-only=true``) is loaded with all keys
and flushed to the max level. Then 100,000 random existing keys get new values (one commit), and
``table.flush_level0()`` — the lookup compaction that lifts level 0 and produces the changelog by
looking up each key's previous row in the max level — is timed in a fresh process, with its
peak RSS (VmHWM). For reference, the same flush on an identical table without a changelog
producer (``compaction.force-up-level-0``, so the level-0 files are merely upgraded or rewritten).

Usage: ``.venv/bin/python benchmarks/bench_lookup_changelog.py [--keys 5000000]
[--changed 100000] [--cache '256 mb'] [--json]``; ``--json`` prints one JSON document with the
measured numbers instead of the report. No target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])


def _rows(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids),
            "v": pa.array(rng.integers(0, 10**9, len(ids))),
            "f": pa.array(rng.random(len(ids))),
            "s": pa.array(np.char.add("s", (ids % 100_000).astype(str))),
        },
        schema=SCHEMA,
    )


def build(warehouse: str, keys: int, changed: int, options: dict[str, str]) -> None:
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "4", "write-only": "true", **options},
    )
    rng = np.random.default_rng(11)
    table.write(_rows(np.arange(keys), rng))
    table.flush_level0()
    table.write(_rows(rng.choice(keys, size=changed, replace=False), rng))


def _vm_hwm_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def phase_flush(warehouse: str) -> dict:
    table = Catalog(warehouse).get_table("db.t")
    start = time.perf_counter()
    snapshot = table.flush_level0()
    seconds = time.perf_counter() - start
    assert snapshot is not None
    changes = snapshot.changelog_record_count or 0
    return {
        "seconds": seconds,
        "changelog_rows": changes,
        "peak_rss_mib": _vm_hwm_mib(),
        "arrow_peak_mib": pa.default_memory_pool().max_memory() / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--changed", type=int, default=100_000)
    parser.add_argument("--cache", default="256 mb", help="lookup.cache-max-memory-size")
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase_flush(args.warehouse)))
        return
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        lookup = {"changelog-producer": "lookup", "lookup.cache-max-memory-size": args.cache}
        for name, options in (
            ("lookup changelog", lookup),
            ("no changelog", {"compaction.force-up-level-0": "true"}),
        ):
            wh = os.path.join(tmp, name.replace(" ", "-"))
            build(wh, args.keys, args.changed, options)
            out = subprocess.run(
                [sys.executable, __file__, "--phase", "flush", "--warehouse", wh],
                capture_output=True,
                text=True,
                check=True,
            )
            results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    if args.json:
        report = {
            "keys": args.keys,
            "changed": args.changed,
            "cache": args.cache,
            "phases": results,
        }
        print(json.dumps(report, indent=2))
        return
    print(
        f"flush_level0 of {args.changed:,} changed keys into a {args.keys:,}-key table "
        f"(4 buckets, lookup cache {args.cache})"
    )
    for name, r in results.items():
        print(
            f"  {name:<17} {r['seconds']:6.2f} s  peak RSS {r['peak_rss_mib']:5.0f} MiB  "
            f"Arrow peak {r['arrow_peak_mib']:5.0f} MiB  changelog rows "
            f"{r['changelog_rows']:,}"
        )


if __name__ == "__main__":
    main()
