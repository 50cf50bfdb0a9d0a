"""What smaller row groups would buy point lookups, and cost full reads (issue 39, item 4).

Run from the repository root::

    .venv/bin/python benchmarks/bench_lookup_row_groups.py          # 1M rows, 100 keys

The table of ``bench_lookup.py`` (1M rows, 4 buckets, deletion vectors, fully compacted) is
written once by lakeops; its four data files are then rewritten by pyarrow with the same
columns, codec and sort order but ``--sizes`` rows per row group. For each size, with pyarrow
alone (so only the file layout differs): the bytes on disk, the footer size, a whole read of
the four files (the columns a read decodes), and what a lookup of ``--keys`` random existing
keys must decode: the key column of every row group whose statistics admit a key, then every
other column of the row groups that hold one. Times are the best of ``--repeat`` of process CPU
time (user + system, all threads), which the other work on a shared machine disturbs less than
wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lookup import build

KEY = "_KEY_id"
COLUMNS = [KEY, "_SEQUENCE_NUMBER", "_VALUE_KIND", "v", "f", "s"]


def _best_cpu(call: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def _lookup(paths: list[Path], keys: np.ndarray) -> int:
    """Decodes what a key-first lookup of ``keys`` decodes; the row groups that hold a key."""
    held = 0
    for path in paths:
        pf = pq.ParquetFile(path, pre_buffer=False)
        meta = pf.metadata
        index = meta.schema.names.index(KEY)
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(index).statistics
            lo = np.searchsorted(keys, stats.min, side="left")
            hi = np.searchsorted(keys, stats.max, side="right")
            if hi <= lo:
                continue
            ids = pf.read_row_group(rg, columns=[KEY]).column(0).to_numpy()
            if np.isin(keys[lo:hi], ids).any():
                pf.read_row_group(rg, columns=COLUMNS[1:])
                held += 1
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--sizes", default="65536,16384,8192,4096,2048")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    keys = np.sort(np.random.default_rng(0).choice(args.rows, args.keys, replace=False))
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-rg-") as tmp:
        build(Path(tmp) / "wh", args.rows)
        originals = sorted((Path(tmp) / "wh").glob("db.db/t/bucket-*/data-*.parquet"))
        tables = [pq.read_table(p) for p in originals]
        print("rows/group  MiB  footer KiB  groups held/total  read CPU s  lookup CPU s  ratio")
        for size in (int(s) for s in args.sizes.split(",")):
            paths = []
            for i, table in enumerate(tables):
                path = Path(tmp) / f"rg{size}-{i}.parquet"
                pq.write_table(table, path, row_group_size=size, compression="zstd")
                paths.append(path)
            mib = sum(p.stat().st_size for p in paths) / 2**20
            footer = sum(pq.ParquetFile(p).metadata.serialized_size for p in paths) / 1024
            groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in paths)
            read = _best_cpu(lambda p=paths: [pq.read_table(x, columns=COLUMNS) for x in p], 5)
            held = _lookup(paths, keys)
            look = _best_cpu(lambda p=paths: _lookup(p, keys), args.repeat)
            print(
                f"{size:10d} {mib:5.1f} {footer:10.0f} {held:8d}/{groups:<8d} {read:11.3f}"
                f" {look:12.3f} {look / read:6.2f}"
            )
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
