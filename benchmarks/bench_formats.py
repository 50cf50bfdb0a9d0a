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

Only ``table.read()`` is timed: wall clock (``time.perf_counter``) and the CPU time of the
whole process, every thread included (``time.process_time``), the formats taking turns in each
of ``--repeat`` rounds so that load from other processes falls on all alike; the best and the
median are kept. On a shared machine the CPU times are the steadier figure (a read's wall time
there depends on what else runs). Reports cores (``os.cpu_count()``), the peak RSS of the
process, and for each format the peak RSS during one read of it and how far that is above the
RSS before the read (Linux; the peak is reset through ``/proc/self/clear_refs``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lakeops import Catalog
from lakeops.format.schema_change import AddColumn, RenameColumn
from lakeops.format.types import DataType
from lakeops.io.avro_data import fast_reader
from lakeops.io.avro_jit import decode_kernel

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


def _rss_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _peak_during(fn: Callable[[], object]) -> tuple[int | None, int | None]:
    """(peak RSS during ``fn()``, that peak less the RSS before it), in MiB; None where the
    system does not say (the peak is reset through /proc/self/clear_refs, Linux only)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None, None
    before = _rss_kib("VmRSS")
    fn()
    peak = _rss_kib("VmHWM")
    if before is None or peak is None:
        return None, None
    return peak // 1024, max(0, peak - before) // 1024


def _timed(reads: dict[str, Callable[[], object]], repeat: int) -> dict[str, dict[str, float]]:
    """Wall and CPU seconds of each read, the reads taking turns ``repeat`` times."""
    wall: dict[str, list[float]] = {name: [] for name in reads}
    cpu: dict[str, list[float]] = {name: [] for name in reads}
    for fn in reads.values():
        fn()  # warm: imports, first-use setup
    for _ in range(repeat):
        for name, fn in reads.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
    return {
        name: {
            "wall_best": min(wall[name]),
            "wall_median": statistics.median(wall[name]),
            "cpu_best": min(cpu[name]),
            "cpu_median": statistics.median(cpu[name]),
        }
        for name in reads
    }


def _avro_decoder() -> str:
    """Which decoder reads this benchmark's (flat) Avro files."""
    if decode_kernel() is not None:
        return "numba (lakeops.io.avro_jit)"
    return "datafusion" if fast_reader() is not None else "fastavro"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--buckets", type=int, default=4, help="buckets of each table")
    parser.add_argument(
        "--formats",
        default="parquet,orc,avro,evolved",
        help="comma-separated subset of parquet,orc,avro,evolved (parquet is always read)",
    )
    args = parser.parse_args()
    wanted = ["parquet", *(f for f in args.formats.split(",") if f and f != "parquet")]
    data = _data(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(tmp)
        catalog.create_database("b")
        tables = {}
        formats = (("parquet", "parquet"), ("orc", "orc"), ("avro", "avro"), ("evolved", "parquet"))
        for name, fmt in formats:
            if name not in wanted:
                continue
            t = catalog.create_table(
                f"b.{name}",
                schema=SCHEMA,
                primary_keys=["id"],
                options={"bucket": str(args.buckets), "file.format": fmt},
            )
            t.write(data)
            t.compact(full=True)
            tables[name] = t
        if "evolved" in tables:
            tables["evolved"].alter(
                [RenameColumn("s", "label"), AddColumn("extra", DataType.parse("STRING"))]
            )
            tables["evolved"] = catalog.get_table("b.evolved")
        for name, t in tables.items():
            assert t.read().num_rows == args.rows, name
        times = _timed({name: t.read for name, t in tables.items()}, args.repeat)
        memory = {name: _peak_during(t.read) for name, t in tables.items()}
    floor = times["parquet"]
    result = {
        "rows": args.rows,
        "cores": os.cpu_count(),
        "repeat": args.repeat,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "read_peak_rss_mib": {k: v[0] for k, v in memory.items()},
        "read_rss_growth_mib": {k: v[1] for k, v in memory.items()},
        "seconds": times,
        "ratio_to_parquet": {
            k: {m: round(v[m] / floor[m], 2) for m in v} for k, v in times.items()
        },
        "targets": {"orc": 1.5, "avro": 1.5, "evolved": 1.1},
        "buckets": args.buckets,
        "avro_decoder": _avro_decoder(),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.rows:,} rows, {args.buckets} buckets, {os.cpu_count()} cores, "
        f"best/median of {args.repeat}, "
        f"peak RSS {result['peak_rss_mib']} MiB, Avro decoded by {result['avro_decoder']}"
    )
    for name, t in times.items():
        peak, growth = memory[name]
        print(
            f"  {name:8s} table.read wall {t['wall_best']:.3f}/{t['wall_median']:.3f} s "
            f"({t['wall_best'] / floor['wall_best']:.2f}x/"
            f"{t['wall_median'] / floor['wall_median']:.2f}x), "
            f"CPU {t['cpu_best']:.3f}/{t['cpu_median']:.3f} s "
            f"({t['cpu_best'] / floor['cpu_best']:.2f}x/"
            f"{t['cpu_median'] / floor['cpu_median']:.2f}x), "
            f"peak RSS {peak} MiB (+{growth} MiB)"
        )


if __name__ == "__main__":
    main()
