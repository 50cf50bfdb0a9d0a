"""Compaction of a deletion-vector primary-key table against the same compaction without vectors.

Two 4-bucket tables get the same commits (``write-only=true``, so each commit's level 0 is lifted
by an explicit ``flush_level0()``): all N keys, then 5 updates of N/5 random keys, each flushed,
then one more update of N/5 keys left in level 0. One table has ``deletion-vectors.enabled``
(every flush marks the rows it supersedes in the files it keeps), one has no vectors (its
flush only moves level-0 files up), and one has ``changelog-producer=lookup`` (its flush, like
the vectors', looks the new keys up in the files it keeps). Phases,
each in a fresh process so peak RSS belongs to the phase, timed on both tables:

* ``flush``: ``flush_level0()`` of the last update — with vectors it also looks the updated
  keys up in the files it keeps, marks them and writes the buckets' index files;
* ``full``: ``compact(full=True)`` afterwards — with vectors every file is read through its
  vector and the vectors of rewritten files are dropped.

Each phase runs ``--repeat`` times (default 3) on fresh copies of the built tables; the
fastest run counts (the machine may be shared).

Usage: ``.venv/bin/python benchmarks/bench_dv_compact.py [--keys 200000] [--repeat 3] [--json]``.
Target: the deletion-vector compaction at most 1.3x the one without (informational; nothing
here fails). The level-0 flush is also compared with the lookup table's, the same kind of work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from peak_memory import peak_rss_mib

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
TARGET_RATIO = 1.3


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


#: the tables compared, by name: their options beyond ``bucket`` and ``write-only``
KINDS: dict[str, dict[str, str]] = {
    "vectors": {"deletion-vectors.enabled": "true"},
    "plain": {},
    # the other mode whose level-0 flush looks keys up in the files it keeps
    "lookup": {"changelog-producer": "lookup"},
}


def build(warehouse: str, keys: int, kind: str) -> None:
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    options = {"bucket": "4", "write-only": "true", **KINDS[kind]}
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    rng = np.random.default_rng(3)
    table.write(_rows(rng.permutation(keys), rng))
    table.flush_level0()
    for _ in range(5):
        table.write(_rows(rng.choice(keys, size=keys // 5, replace=False), rng))
        table.flush_level0()
    table.write(_rows(rng.choice(keys, size=keys // 5, replace=False), rng))


def phase(warehouse: str, which: str) -> dict:
    table = Catalog(warehouse).get_table("db.t")
    start = time.perf_counter()
    snapshot = table.flush_level0() if which == "flush" else table.compact(full=True)
    seconds = time.perf_counter() - start
    assert snapshot is not None
    rows = table.read(columns=["id"]).num_rows
    return {"seconds": seconds, "rows": rows}


def _child(args: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase (fastest kept)")
    parser.add_argument("--json", action="store_true", help="print results as JSON only")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        result = phase(args.warehouse, args.phase)
        result["peak_rss_mib"] = peak_rss_mib()
        print(json.dumps(result))
        return
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in KINDS:
            wh = os.path.join(tmp, name)
            build(wh, args.keys, name)
            runs: dict[str, list[dict]] = {"flush": [], "full": []}
            for r in range(args.repeat):  # each run on a fresh copy; the fastest counts
                copy = os.path.join(tmp, f"{name}-{r}")
                shutil.copytree(wh, copy)
                for p in ("flush", "full"):
                    runs[p].append(_child(["--phase", p, "--warehouse", copy]))
            results[name] = {p: min(rs, key=lambda x: x["seconds"]) for p, rs in runs.items()}
    for p in ("flush", "full"):
        assert all(results[n][p]["rows"] == args.keys for n in KINDS)
    ratios = {
        p: results["vectors"][p]["seconds"] / results["plain"][p]["seconds"]
        for p in results["plain"]
    }
    lookup_ratios = {
        p: results["vectors"][p]["seconds"] / results["lookup"][p]["seconds"]
        for p in results["lookup"]
    }
    report = {
        "keys": args.keys,
        "cores": len(os.sched_getaffinity(0)),
        "target_max_ratio": TARGET_RATIO,
        **results,
        "ratio": ratios,
        "ratio_to_lookup": lookup_ratios,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.keys:,} keys, 4 buckets, {report['cores']} cores: level-0 flush of N/5 updates, "
        "then a full compaction"
    )
    print(f"{'':10} {'phase':6} {'seconds':>8} {'peak RSS MiB':>13}")
    for name in KINDS:
        for p in ("flush", "full"):
            r = results[name][p]
            print(f"{name:10} {p:6} {r['seconds']:>8.2f} {r['peak_rss_mib']:>13.0f}")
    for p, ratio in ratios.items():
        verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
        print(f"{p}: vectors / plain = {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)")
    for p, ratio in lookup_ratios.items():
        print(f"{p}: vectors / lookup = {ratio:.2f}x")


if __name__ == "__main__":
    main()
