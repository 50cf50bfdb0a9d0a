"""The cost of the committer's presence check (every file a commit adds must exist before the
snapshot is published) against the whole commit, on local disk and on an S3 server (moto on
loopback, started here in its own process, as a remote store would be).

For each store: a primary-key table with ``--buckets`` buckets; ``--rows`` rows are written by
one writer (``new_write`` + ``write``), prepared (``prepare_commit``: the data files) and
committed (``commit``). Timed: the whole commit (write + prepare + commit, which includes one
presence check), and separately the presence check alone on the same commit's files (a fresh
first check: one request per data file; best of ``--repeat``). The ratio is
check / whole commit; the target is under 5 %.

Usage: ``.venv/bin/python benchmarks/bench_presence.py [--rows 1000000] [--buckets 16]
[--repeat 3] [--stores local,s3] [--json]``. Figures: ``benchmarks/presence.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lakeops import Catalog
from lakeops.commit.presence import CommitPresence, verify_present
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.format.manifest import FileKind, ManifestEntry

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


def _data(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    ids = rng.permutation(rows).astype(np.int64)
    return pa.table(
        {
            "id": ids,
            "v": rng.integers(0, 1 << 40, rows),
            "s": pa.array([f"s{i % 100000:05d}" for i in range(rows)]),
        },
        schema=SCHEMA,
    )


def _measure(catalog: Catalog, rows: int, buckets: int, repeat: int) -> dict[str, Any]:
    catalog.create_database("db", ignore_if_exists=True)
    data = _data(rows)
    best_commit = best_check = float("inf")
    files = 0
    for run in range(repeat):
        table = catalog.create_table(
            f"db.t{run}", schema=SCHEMA, primary_keys=["id"], options={"bucket": str(buckets)}
        )
        started = time.perf_counter()
        writer = table.new_write()
        writer.write(data)
        messages = writer.prepare_commit()
        table.commit(messages)
        best_commit = min(best_commit, time.perf_counter() - started)
        entries = [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
            for m in messages
            for f in m.new_files
        ]
        files = len(entries)
        started = time.perf_counter()
        verify_present(table.context, PlannedChange(entries), (), CommitPresence())
        best_check = min(best_check, time.perf_counter() - started)
    return {
        "rows": rows,
        "data_files": files,
        "commit_s": round(best_commit, 3),
        "check_s": round(best_check, 4),
        "ratio_pct": round(100 * best_check / best_commit, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stores", default="local,s3")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    stores = args.stores.split(",")
    if "local" in stores:
        with tempfile.TemporaryDirectory(prefix="lakeops-bench-presence-") as tmp:
            results["local"] = _measure(Catalog(tmp), args.rows, args.buckets, args.repeat)
    if "s3" in stores:
        from tests.io.servers import make_bucket, moto_server_process, s3_options

        with moto_server_process() as endpoint:
            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            make_bucket(endpoint, bucket)
            catalog = Catalog(f"s3://{bucket}/wh", storage_options=s3_options(endpoint))
            results["s3"] = _measure(catalog, args.rows, args.buckets, args.repeat)
    if args.json:
        print(json.dumps(results))
        return
    for store, r in results.items():
        print(
            f"{store:6} rows={r['rows']:,} files={r['data_files']} commit={r['commit_s']} s "
            f"check={r['check_s'] * 1000:.1f} ms ({r['ratio_pct']} %)"
        )


if __name__ == "__main__":
    main()
