"""Row-level changes against deltalake: ``delete`` of 1% of the rows and a ``merge`` (1% of
the rows updated, as many inserted) on the same data, in one run.

Data: ``--rows`` rows (default 4M) in 8 commits: ``id`` (int64, unique), ``r`` (int32 in
[0, 100): ``r = 7`` picks 1% of the rows, spread over every file), ``s`` (32 random hex
characters, high entropy), ``x`` (float64). Tables: a lakeops primary-key table (``id``, 4
buckets), a lakeops append table rewritten copy-on-write, one with deletion vectors, and a
deltalake table (delta-rs rewrites the files it deletes from). Each is written once (untimed),
then each measured operation runs in a fresh process on a fresh copy of its table, so its
peak RSS (``ru_maxrss``) is the operation's; rounds interleave the engines. It prints each
operation's best round (wall, CPU, cores, peak RSS, ratio to deltalake's best) and its median
wall, and the load average before and after (the machine may be shared).

Needs deltalake in its own venv (``python3 -m venv .venv-peers && .venv-peers/bin/pip install
deltalake pyarrow numpy``): its phases run in ``.venv-peers/bin/python``, lakeops' in this one.

Usage: ``.venv/bin/python benchmarks/bench_row_level.py [--rows 4000000] [--rounds 2]``.
Figures: ``benchmarks/row_level.md``. Targets (informational): lakeops' delete at most 1.5x
deltalake's, its merge at most deltalake's. Imports happen before the clock starts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".venv-peers" / "bin" / "python"
COMMITS = 8
KINDS = ("lakeops-pk", "lakeops-cow", "lakeops-dv", "deltalake")


def batch(i: int, rows: int) -> pa.Table:
    rng = np.random.default_rng(i)
    ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
    hexes = rng.integers(0, 16, size=(rows, 32), dtype=np.uint8)
    chars = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[hexes]
    s = pa.array(chars.reshape(-1).view("S32").astype(str))
    return pa.table(
        {
            "id": ids,
            "r": rng.integers(0, 100, rows, dtype=np.int32),
            "s": s,
            "x": rng.random(rows),
        }
    )


def source(rows: int) -> pa.Table:
    """1% of the ids updated (r = 7's), as many new ids."""
    rng = np.random.default_rng(99)
    n = rows // 100
    old = rng.choice(rows, n, replace=False).astype(np.int64)
    new = np.arange(rows, rows + n, dtype=np.int64)
    ids = np.concatenate([old, new])
    return pa.table(
        {
            "id": ids,
            "r": np.full(len(ids), 101, dtype=np.int32),
            "s": pa.array([f"merged-{i}" for i in range(len(ids))]),
            "x": np.zeros(len(ids)),
        }
    )


def _usage() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_maxrss / 1024


def setup(kind: str, path: str, rows: int) -> None:
    per = rows // COMMITS
    if kind == "deltalake":
        from deltalake import write_deltalake

        for i in range(COMMITS):
            write_deltalake(path, batch(i, per), mode="append")
        return
    from lakeops import Catalog

    catalog = Catalog(path)
    catalog.create_database("db", ignore_if_exists=True)
    schema = batch(0, 1).schema
    if kind == "lakeops-pk":
        schema = schema.set(0, pa.field("id", pa.int64(), False))
        table = catalog.create_table(
            "db.t", schema=schema, primary_keys=["id"], options={"bucket": "4"}
        )
    else:
        options = {"deletion-vectors.enabled": "true"} if kind == "lakeops-dv" else {}
        table = catalog.create_table("db.t", schema=schema, options=options)
    for i in range(COMMITS):
        table.write(batch(i, per).cast(schema))


def measure(kind: str, op: str, path: str, rows: int) -> dict[str, float]:
    """One operation on the table at ``path``; imports and the source are made before the
    clock starts."""
    src = source(rows) if op == "merge" else None
    if kind == "deltalake":
        from deltalake import DeltaTable

        cpu0, _ = _usage()
        start = time.perf_counter()
        dt = DeltaTable(path)
        if op == "delete":
            dt.delete("r = 7")
        else:
            merger = dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
            merger.when_matched_update_all().when_not_matched_insert_all().execute()
    else:
        import pyarrow.compute as pc

        # lakeops imports its table modules on first use: load them before the clock
        import lakeops.table.append
        import lakeops.table.primary_key
        import lakeops.table.row_level  # noqa: F401
        from lakeops import Catalog

        cpu0, _ = _usage()
        start = time.perf_counter()
        table = Catalog(path).get_table("db.t")
        if op == "delete":
            table.delete(pc.field("r") == 7)
        else:
            assert src is not None
            merger = table.merge(src.cast(table.arrow_schema), on=["id"])
            merger.when_matched_update_all().when_not_matched_insert_all().execute()
    seconds = time.perf_counter() - start
    cpu1, peak = _usage()
    return {"seconds": seconds, "cpu_seconds": cpu1 - cpu0, "peak_rss_mb": peak}


def _median(runs: list[dict[str, float]]) -> float:
    return float(np.median([r["seconds"] for r in runs]))


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


def _python(kind: str) -> str:
    return str(PEERS) if kind == "deltalake" else sys.executable


def _run(kind: str, *args: str) -> str:
    cmd = [_python(kind), __file__, "--kind", kind, *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    parser.add_argument("--setup", help=argparse.SUPPRESS)
    parser.add_argument("--op", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        setup(args.kind, args.setup, args.rows)
        return
    if args.op:
        print(json.dumps(measure(args.kind, args.op, args.path, args.rows)))
        return
    if not PEERS.exists():
        sys.exit(f"no {PEERS}: see this script's docstring for the deltalake venv")
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-row-level-") as tmp:
        base = {k: os.path.join(tmp, "base-" + k) for k in KINDS}
        for kind in KINDS:
            _run(kind, "--setup", base[kind], "--rows", str(args.rows))
        for _ in range(args.rounds):
            for op in ("delete", "merge"):
                for kind in KINDS:
                    work = os.path.join(tmp, "work")
                    shutil.rmtree(work, ignore_errors=True)
                    shutil.copytree(base[kind], work)
                    out = _run(kind, "--op", op, "--path", work, "--rows", str(args.rows))
                    results.setdefault((kind, op), []).append(json.loads(out))
    cores = os.cpu_count()
    load_after = os.getloadavg()
    print(f"row-level changes, {args.rows:,} rows in {COMMITS} files, {cores} cores, best of "
          f"{args.rounds}; load average (1, 5, 15 min) before {_load(load_before)}, after "
          f"{_load(load_after)} (the machine is shared)")  # fmt: skip
    for op in ("delete", "merge"):
        peer = min(r["seconds"] for r in results[("deltalake", op)])
        for kind in KINDS:
            best = min(results[(kind, op)], key=lambda r: r["seconds"])
            print(
                f"  {op:6s} {kind:12s} {best['seconds']:6.2f} s  {best['cpu_seconds']:6.2f} CPU s "
                f"({best['cpu_seconds'] / best['seconds']:.2f} cores)  peak "
                f"{best['peak_rss_mb']:,.0f} MB  vs deltalake {best['seconds'] / peer:.2f}x  "
                f"(median {_median(results[(kind, op)]):.2f} s)"
            )


if __name__ == "__main__":
    main()
