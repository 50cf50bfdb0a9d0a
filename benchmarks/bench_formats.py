"""Read cost of ORC and Avro data files and of reading through a schema mapping, against
Parquet.

Run from the repository root::

    .venv/bin/python benchmarks/bench_formats.py            # 1M rows, best of 3
    .venv/bin/python benchmarks/bench_formats.py --rows 200000 --json

Three tables with the same rows (int64 key, int64, float64, a 16-character random string;
4 buckets, one commit, then a full compaction so each bucket is one sorted file) are read with
``table.read()``:

1. ``parquet``: the floor — Parquet files written under the current schema;
2. ``orc``: the same rows in ORC files (``file.format=orc``); target ≤ 1.5x the floor;
3. ``avro``: the same rows in Avro files (``file.format=avro``); target ≤ 1.5x the floor
   (decoded by Arrow's Avro reader with ``lakeops[avro]`` installed, else by fastavro at
   30-150x: see ``benchmarks/avro_readers.md``);
4. ``evolved``: Parquet files written under schema 0, read after a rename and an added column,
   so every file goes through the field-id mapping; target ≤ 1.1x the floor.

Only ``table.read()`` is timed (``time.perf_counter``); the best of ``--repeat`` runs is kept.
Reports cores (``os.cpu_count()``) and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa

from lakeops import Catalog
from lakeops.io.avro_data import fast_reader
from lakeops.spec.schema_change import AddColumn, RenameColumn
from lakeops.spec.types import DataType

SEED = 20261125
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
    ]
)


def _data(rows: int) -> pa.Table:
    rng = np.random.default_rng(SEED)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "S1")
    chars = rng.choice(letters, size=(rows, 16)).view("S16").ravel()
    return pa.table(
        {
            "id": rng.permutation(rows).astype(np.int64),
            "v": rng.integers(0, 2**62, rows),
            "f": rng.random(rows),
            "s": pa.array(chars.astype(str)),
        },
        schema=SCHEMA,
    )


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = _data(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(tmp)
        catalog.create_database("b")
        tables = {}
        formats = (("parquet", "parquet"), ("orc", "orc"), ("avro", "avro"), ("evolved", "parquet"))
        for name, fmt in formats:
            t = catalog.create_table(
                f"b.{name}",
                schema=SCHEMA,
                primary_keys=["id"],
                options={"bucket": "4", "file.format": fmt},
            )
            t.write(data)
            t.compact(full=True)
            tables[name] = t
        tables["evolved"].alter(
            [RenameColumn("s", "label"), AddColumn("extra", DataType.parse("STRING"))]
        )
        tables["evolved"] = catalog.get_table("b.evolved")
        times = {name: _best(t.read, args.repeat) for name, t in tables.items()}
        for name, t in tables.items():
            assert t.read().num_rows == args.rows, name
    floor = times["parquet"]
    result = {
        "rows": args.rows,
        "cores": os.cpu_count(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "seconds": times,
        "ratio_to_parquet": {k: round(v / floor, 2) for k, v in times.items()},
        "targets": {"orc": 1.5, "avro": 1.5, "evolved": 1.1},
        "avro_decoder": "datafusion" if fast_reader() is not None else "fastavro",
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.rows:,} rows, {os.cpu_count()} cores, peak RSS {result['peak_rss_mib']} MiB, "
        f"Avro decoded by {result['avro_decoder']}"
    )
    for name, secs in times.items():
        print(f"  {name:8s} table.read {secs:.3f} s  {secs / floor:.2f}x the Parquet floor")


if __name__ == "__main__":
    main()
