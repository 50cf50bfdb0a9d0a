"""Writing one row into a wide table: the cost must grow linearly with the number of fields.

A primary-key table with ``N`` BIGINT fields (``bucket`` = 1) gets one row in one commit
(``table.write``). The write is timed for two widths (default 1,000 and 8,000 fields), each the
best of ``--repeat`` runs on a fresh table, as wall time and as this process's CPU time (the CPU
time is steadier on a busy machine). Issue 24's target: the wide write within 2x the time of the
narrow one times the width ratio (8,000 fields within 2 x 8 x the 1,000-field time). Before the
fix, input columns were looked up in Python lists per field (quadratic): 2.3 s at 2,000 fields
and 35 s at 8,000.

Usage: ``.venv/bin/python benchmarks/bench_wide_write.py [--narrow 1000] [--wide 8000]
[--repeat 3] [--json]``. Exit status 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import pyarrow as pa

from lakeops import Catalog

TARGET_FACTOR = 2.0


def time_write(fields: int, repeat: int) -> dict[str, float]:
    """Best wall and CPU seconds of writing one row with ``fields`` fields."""
    schema = pa.schema([("id", pa.int64())] + [(f"c{i}", pa.int64()) for i in range(fields - 1)])
    row = pa.table({f.name: pa.array([1], f.type) for f in schema})
    best = {"wall_s": float("inf"), "cpu_s": float("inf"), "create_s": float("inf")}
    for attempt in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            catalog = Catalog(tmp)
            catalog.create_database("db")
            start = time.perf_counter()
            table = catalog.create_table(
                f"db.w{attempt}", schema=schema, primary_keys=["id"], options={"bucket": "1"}
            )
            best["create_s"] = min(best["create_s"], time.perf_counter() - start)
            wall, cpu = time.perf_counter(), time.process_time()
            table.write(row)
            best["wall_s"] = min(best["wall_s"], time.perf_counter() - wall)
            best["cpu_s"] = min(best["cpu_s"], time.process_time() - cpu)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narrow", type=int, default=1000)
    parser.add_argument("--wide", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    narrow = time_write(args.narrow, args.repeat)
    wide = time_write(args.wide, args.repeat)
    ratio = args.wide / args.narrow
    budget = TARGET_FACTOR * ratio * narrow["cpu_s"]
    result = {
        "narrow_fields": args.narrow,
        "wide_fields": args.wide,
        "narrow": narrow,
        "wide": wide,
        "cpu_budget_s": budget,
        "within_target": wide["cpu_s"] <= budget,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for label, n, r in (("narrow", args.narrow, narrow), ("wide", args.wide, wide)):
            print(
                f"{label:6} {n:6} fields: write {r['wall_s']:.2f} s wall, {r['cpu_s']:.2f} s "
                f"CPU; create_table {r['create_s']:.2f} s"
            )
        print(
            f"target: wide CPU <= {TARGET_FACTOR:g} x {ratio:g} x narrow = {budget:.2f} s -> "
            + ("met" if result["within_target"] else "MISSED")
        )
    return 0 if result["within_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
