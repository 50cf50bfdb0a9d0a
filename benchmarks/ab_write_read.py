"""A/B of ``bench_write_read.py`` between two source trees, against the pyarrow floor.

Usage (from the repository root, with an older checkout made by ``git worktree add OLD REV``)::

    .venv/bin/python benchmarks/ab_write_read.py OLD --rows 4000000 --strings random --rounds 3

Each round runs the old tree, this tree, the floor and the layout floor one after another,
every phase (insert, upsert, read) in a fresh process (``bench_write_read.py --phase``). The
layout floor is the floor writing the three system columns a Paimon data file holds besides the
row's (a copy of the key, sequence numbers, the row kind): the same bytes lakeops writes.
Printed per phase: the median over the rounds of each tree's time / the floor's time in the same
round (wall and CPU), the best time and the largest peak RSS, and the same against the layout
floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PHASES = ("insert", "upsert", "read")
#: ``layout``: the floor writing Paimon's three system columns too (the same bytes as lakeops)
SIDES = ("old", "new", "floor", "layout")

#: (wall seconds, CPU seconds, peak RSS MiB) per side, phase and round
Samples = dict[str, dict[str, list[tuple[float, float, float]]]]


def run_round(trees: dict[str, str], rows: int, strings: str, samples: Samples) -> None:
    """One round: every side runs the three phases in a fresh table directory."""
    for side in SIDES:
        tree = trees.get(side, str(HERE))
        impl = {"floor": "baseline", "layout": "layout"}.get(side, "lakeops")
        workdir = tempfile.mkdtemp(prefix="ab-")
        env = dict(os.environ, PYTHONPATH=tree)
        try:
            for phase in PHASES:
                cmd = [
                    sys.executable,
                    f"{tree}/benchmarks/bench_write_read.py",
                    *("--phase", phase, "--impl", impl, "--workdir", workdir),
                    *("--rows", str(rows), "--strings", strings),
                ]
                out = subprocess.run(
                    cmd, env=env, capture_output=True, text=True, check=True, cwd=tree
                )
                got = json.loads(out.stdout.strip().splitlines()[-1])
                samples[side][phase].append(
                    (got["seconds"], got["cpu_seconds"], got["peak_rss_mib"])
                )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def report(rows: int, strings: str, samples: Samples) -> None:
    for phase in PHASES:
        floor = samples["floor"][phase]
        for side in ("old", "new"):
            mine = samples[side][phase]
            pairs = list(zip(mine, floor, strict=True))
            wall = statistics.median(a[0] / b[0] for a, b in pairs)
            cpu = statistics.median(a[1] / b[1] for a, b in pairs)
            best = min(a[0] for a in mine)
            rss = max(a[2] for a in mine)
            print(
                f"{rows} {strings} {phase:6} {side}: wall/floor {wall:.2f}x "
                f"cpu/floor {cpu:.2f}x best {best:.3f}s rss {rss:.0f} MiB"
            )
        best = min(a[0] for a in floor)
        rss = max(a[2] for a in floor)
        print(f"{rows} {strings} {phase:6} floor: best {best:.3f}s rss {rss:.0f} MiB")
        layout = samples["layout"][phase]
        for side in ("old", "new"):
            pairs = list(zip(samples[side][phase], layout, strict=True))
            wall = statistics.median(a[0] / b[0] for a, b in pairs)
            cpu = statistics.median(a[1] / b[1] for a, b in pairs)
            print(
                f"{rows} {strings} {phase:6} {side} / layout floor: wall {wall:.2f}x cpu {cpu:.2f}x"
            )
        best = min(a[0] for a in layout)
        print(f"{rows} {strings} {phase:6} layout floor: best {best:.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("old", help="the older source tree (a git worktree)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--strings", choices=("digits", "random"), default="digits")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    samples: Samples = {side: {p: [] for p in PHASES} for side in SIDES}
    for _ in range(args.rounds):
        run_round({"old": args.old, "new": str(HERE)}, args.rows, args.strings, samples)
    report(args.rows, args.strings, samples)


if __name__ == "__main__":
    main()
