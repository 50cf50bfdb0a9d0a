"""Merge-engine throughput: 1,000,000 input rows over 200,000 keys, per engine.

Two figures per engine, best of ``--repeat`` runs:

* ``merge``: sort by (key, sequence) and merge to one row per key with the engine — exactly the
  code path the write buffer, merge-on-read and compaction share;
* ``write``: ``table.write`` of all rows as one commit into a 4-bucket table (validation,
  bucket hashing, the merge above per bucket, Parquet level-0 files, the commit).

Engines: deduplicate; first-row; aggregation with sum + max + last_non_null_value;
partial-update with two sequence groups (one of them with two sequence fields).

Usage: ``.venv/bin/python benchmarks/bench_merge.py [--rows N] [--keys K] [--repeat R]``.
Targets: >= 1,000,000 rows/s for deduplicate / first-row / aggregation and >= 500,000 rows/s for
partial-update with groups (informational; nothing here fails).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
import pyarrow as pa

from lakeops import Catalog
from lakeops.format.kv import KIND, SEQ
from lakeops.format.schema import TableSchema
from lakeops.merge import create_merge_engine, merge_sorted, sort_records
from lakeops.options import TableOptions

SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("c", pa.float64()),
        ("d", pa.string()),
        ("s1", pa.int64()),
        ("s2", pa.int64()),
        ("s3", pa.int64()),
    ]
)
ENGINES: dict[str, tuple[dict[str, str], int]] = {
    "deduplicate": ({}, 1_000_000),
    "first-row": ({"merge-engine": "first-row"}, 1_000_000),
    "aggregation (sum+max+last_non_null)": (
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "sum",
            "fields.b.aggregate-function": "max",
            "fields.default-aggregate-function": "last_non_null_value",
        },
        1_000_000,
    ),
    "partial-update (2 sequence groups)": (
        {
            "merge-engine": "partial-update",
            "fields.s1.sequence-group": "a,b",
            "fields.s2,s3.sequence-group": "c,d",
        },
        500_000,
    ),
}


def make_data(rows: int, keys: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nullable(values: np.ndarray, share: float = 0.3) -> pa.Array:
        return pa.array(values, mask=rng.random(rows) < share)

    return pa.table(
        {
            "k": pa.array(rng.integers(0, keys, rows)),
            "a": nullable(rng.integers(-1000, 1000, rows)),
            "b": nullable(rng.integers(-1000, 1000, rows)),
            "c": nullable(rng.random(rows)),
            "d": nullable(np.array([f"v{i % 1000}" for i in range(rows)], dtype=object)),
            "s1": nullable(rng.integers(0, 50, rows)),
            "s2": nullable(rng.integers(0, 50, rows)),
            "s3": nullable(rng.integers(0, 50, rows)),
        },
        schema=SCHEMA,
    )


def bench_merge(data: pa.Table, options: dict[str, str], repeat: int) -> tuple[float, int]:
    schema = TableSchema.from_arrow(SCHEMA, ["k"], [], {"bucket": "1", **options})
    opts = TableOptions.from_schema(schema)
    engine = create_merge_engine(opts, schema)
    records = data.append_column(
        pa.field(SEQ, pa.int64(), False), pa.array(np.arange(data.num_rows, dtype=np.int64))
    )
    records = records.append_column(
        pa.field(KIND, pa.int8(), False), pa.array(np.zeros(data.num_rows, dtype=np.int8))
    )
    best, out_rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        merged = merge_sorted(sort_records(records, ["k"]), ["k"], engine)
        best = min(best, time.perf_counter() - start)
        out_rows = merged.num_rows
    return best, out_rows


def bench_write(data: pa.Table, options: dict[str, str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as wh:
            catalog = Catalog(wh)
            catalog.create_database("db")
            table = catalog.create_table(
                "db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "4", **options}
            )
            start = time.perf_counter()
            table.write(data)
            best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = make_data(args.rows, args.keys)
    results = []
    for name, (options, target) in ENGINES.items():
        merge_s, out_rows = bench_merge(data, options, args.repeat)
        write_s = bench_write(data, options, args.repeat)
        results.append(
            {
                "engine": name,
                "rows": args.rows,
                "keys_out": out_rows,
                "merge_s": merge_s,
                "merge_rows_per_s": args.rows / merge_s,
                "write_s": write_s,
                "write_rows_per_s": args.rows / write_s,
                "target_rows_per_s": target,
            }
        )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.rows:,} input rows over {args.keys:,} keys, best of {args.repeat}")
    print(
        f"{'engine':<38} {'merge s':>8} {'merge rows/s':>13} {'write s':>8} "
        f"{'write rows/s':>13} {'target':>10}  met"
    )
    for r in results:
        met = (
            "yes"
            if min(r["merge_rows_per_s"], r["write_rows_per_s"]) >= r["target_rows_per_s"]
            else "NO"
        )
        print(
            f"{r['engine']:<38} {r['merge_s']:>8.3f} {r['merge_rows_per_s']:>13,.0f} "
            f"{r['write_s']:>8.3f} {r['write_rows_per_s']:>13,.0f} "
            f"{r['target_rows_per_s']:>10,}  {met}"
        )


if __name__ == "__main__":
    main()
