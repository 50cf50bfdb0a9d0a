"""The main job on an embedded default: a local warehouse, several commits, a merged read.

Run it with ``bash scripts/demo.sh`` (or ``python -m lakeops.demo --warehouse DIR``). It creates
``demo.orders`` (partitioned by ``dt``, 4 fixed buckets, row kinds from ``op``), commits an
insert, an upsert with deletes, reads the merged table back, compacts it fully, and prints
snapshots, files per (partition, bucket, level) before and after, row counts and timings.
The warehouse is a real Paimon warehouse: pypaimon or Paimon on Spark/Flink can open it.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from lakeops import Catalog, Table

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("order_id", pa.int64()),
        ("customer", pa.string()),
        ("amount", pa.float64()),
        ("status", pa.string()),
        ("op", pa.string()),
    ]
)
DAYS = ["2026-11-19", "2026-11-20", "2026-11-21"]


def _orders(ids: np.ndarray, rng: np.random.Generator, status: str, op: str) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "dt": pa.array(np.array(DAYS)[ids % len(DAYS)]),
            "order_id": pa.array(ids, pa.int64()),
            "customer": pa.array([f"c{c:05d}" for c in rng.integers(0, 50_000, n)]),
            "amount": pa.array(np.round(rng.uniform(1, 500, n), 2)),
            "status": pa.array([status] * n),
            "op": pa.array([op] * n),
        },
        schema=SCHEMA,
    )


def _timed(label: str, rows: int | None, fn):  # type: ignore[no-untyped-def]
    """Run ``fn`` and print its rate (rows: input rows, or None for the rows returned)."""
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    rows = result.num_rows if rows is None else rows
    print(f"  {label:<34} {rows:>9,} rows  {seconds:6.2f} s  {rows / seconds:>12,.0f} rows/s")
    return result


def _describe(table: Table) -> None:
    print("\nsnapshots:")
    for s in table.snapshots():
        print(
            f"  #{s.id:<3} {s.commit_kind:<8} total={s.total_record_count:>9,} "
            f"delta={s.delta_record_count:>+9,}"
        )
    counts: Counter[tuple[str, int, int]] = Counter()
    for split in table.splits():
        for f in split.files:
            counts[(split.partition[0], split.bucket, f.level)] += 1
    print("\nfiles by partition / bucket / level:")
    for (dt_, bucket, level), n in sorted(counts.items()):
        print(f"  dt={dt_} bucket-{bucket} level-{level}: {n} file(s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--warehouse",
        default="warehouse",
        help="local warehouse directory (recreated; default ./warehouse)",
    )
    parser.add_argument("--rows", type=int, default=300_000, help="orders in the first commit")
    args = parser.parse_args(argv)
    path = Path(args.warehouse).resolve()
    if path.exists():
        shutil.rmtree(path)
    rng = np.random.default_rng(7)
    print(f"lakeops main job — warehouse {path}\n")
    catalog = Catalog(str(path))
    catalog.create_database("demo", ignore_if_exists=True)
    table = catalog.create_table(
        "demo.orders",
        schema=SCHEMA,
        primary_keys=["dt", "order_id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op"},
    )
    ids = rng.permutation(args.rows)
    _timed("commit 1: insert", len(ids), lambda: table.write(_orders(ids, rng, "NEW", "+I")))
    upd = rng.choice(args.rows, size=args.rows // 5, replace=False)
    dele = rng.choice(np.setdiff1d(np.arange(args.rows), upd), size=args.rows // 50, replace=False)
    batch = pa.concat_tables(
        [_orders(upd, rng, "SHIPPED", "+U"), _orders(dele, rng, "CANCELLED", "-D")]
    )
    _timed("commit 2: upsert + delete", batch.num_rows, lambda: table.write(batch))
    merged = _timed("read merged table", None, table.read)
    day = _timed(
        "read one day, two columns",
        None,
        lambda: table.read(columns=["order_id", "amount"], filter=[("dt", "=", DAYS[0])]),
    )
    _describe(table)
    _timed("full compaction", merged.num_rows, lambda: table.compact(full=True))
    _describe(table)
    assert table.read().num_rows == merged.num_rows
    status = Counter(merged.column("status").to_pylist())
    print(
        f"\nrows: {merged.num_rows:,} live ({args.rows:,} inserted, {len(dele):,} deleted); "
        f"by status: {dict(sorted(status.items()))}; {day.num_rows:,} on {DAYS[0]}"
    )
    assert merged.num_rows == args.rows - len(dele)


if __name__ == "__main__":
    main()
