"""What ``import lakeops`` costs above ``import pyarrow, numpy``, and what the first use of a
table adds (issue 39: at most 0.3 s above pyarrow + numpy; heavy modules on first use).

Run from the repository root::

    .venv/bin/python benchmarks/bench_import.py                  # best of 9 per case
    .venv/bin/python benchmarks/bench_import.py --repeat 15 --json
    .venv/bin/python benchmarks/bench_import.py --src /tmp/old   # another checkout's lakeops/

Every case runs in a fresh interpreter, ``--repeat`` times; the child times its own statement
(``time.perf_counter`` for wall, ``time.process_time`` for CPU, so interpreter start-up is left
out) and reports its peak RSS (``VmHWM``, Linux). The best of the runs is kept, as the minimum is
what a busy machine disturbs least. "extra" is a case's best minus the best of
``import pyarrow, numpy``. The first-use cases open (and read) a 3-row primary-key table that
this script writes into a temporary warehouse first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa

# the peak RSS is the kernel's VmHWM: ``ru_maxrss`` would carry the parent's peak over the
# fork and exec of the child
_CHILD = """
import time
wall, cpu = time.perf_counter(), time.process_time()
{statement}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(wall, cpu, peak)
"""

BASELINE = "import pyarrow, numpy"


@dataclass(frozen=True)
class Result:
    case: str
    wall_s: float
    cpu_s: float
    extra_wall_s: float
    extra_cpu_s: float
    peak_rss_mib: float


def _cases(warehouse: str) -> list[tuple[str, str]]:
    open_table = f"lakeops.Catalog({warehouse!r}).get_table('db.t')"
    return [
        ("import pyarrow, numpy", BASELINE),
        ("import pyarrow, numpy, lakeops", "import pyarrow, numpy, lakeops"),
        ("... from lakeops import Catalog", "import pyarrow, numpy\nfrom lakeops import Catalog"),
        ("... from lakeops import *", "import pyarrow, numpy\nfrom lakeops import *"),
        ("... + Catalog(wh).get_table", f"import pyarrow, numpy, lakeops\n{open_table}"),
        ("... + get_table(...).read()", f"import pyarrow, numpy, lakeops\n{open_table}.read()"),
    ]


def _run_once(statement: str, env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=cwd,  # not the repository root, which ``-c`` would put first on sys.path
    )
    wall, cpu, rss_kib = done.stdout.split()[-3:]
    return float(wall), float(cpu), int(rss_kib) / 1024


def _tiny_table(warehouse: str) -> None:
    from lakeops import Catalog

    catalog = Catalog(warehouse)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1"},
    )
    table.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="fresh processes per case")
    parser.add_argument("--json", action="store_true", help="results as JSON on stdout")
    parser.add_argument(
        "--src", help="a directory holding another lakeops/ package to time instead of this one"
    )
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.src, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="lakeops-import-") as root:
        warehouse = str(Path(root) / "wh")
        _tiny_table(warehouse)
        where = subprocess.run(
            [sys.executable, "-c", "import lakeops; print(lakeops.__file__)"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=root,
        ).stdout.strip()
        print(f"lakeops from {where}; best of {args.repeat}", file=sys.stderr)
        best: dict[str, tuple[float, float, float]] = {}
        for name, statement in _cases(warehouse):
            runs = [_run_once(statement, env, root) for _ in range(args.repeat)]
            best[name] = (
                min(r[0] for r in runs),
                min(r[1] for r in runs),
                min(r[2] for r in runs),
            )
            print(f"  {name}: {best[name][0]:.3f} s", file=sys.stderr)
    base_wall, base_cpu, _ = best["import pyarrow, numpy"]
    results = [
        Result(name, wall, cpu, wall - base_wall, cpu - base_cpu, rss)
        for name, (wall, cpu, rss) in best.items()
    ]
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return
    header = f"{'case':34s} {'wall s':>7s} {'cpu s':>7s} {'extra wall':>10s} {'extra cpu':>9s}"
    print(f"{header} RSS MiB")
    for r in results:
        print(
            f"{r.case:34s} {r.wall_s:7.3f} {r.cpu_s:7.3f} {r.extra_wall_s:10.3f} "
            f"{r.extra_cpu_s:9.3f} {r.peak_rss_mib:7.0f}"
        )
    print(f"{os.cpu_count()} cores; python {sys.version.split()[0]}; pyarrow {pa.__version__}")


if __name__ == "__main__":
    main()
