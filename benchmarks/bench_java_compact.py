"""Full compaction by lakeops against Java Paimon 0.9's on the same table (issue 39: lakeops'
compaction stays at most 0.35x Java's time).

Usage (the Paimon 0.9 jar comes with ``bash scripts/setup.sh --oracle``; Java 17 is Spark's)::

    .venv/bin/python benchmarks/bench_java_compact.py --keys 1000000 --rounds 3

The table is :mod:`bench_compact`'s: 4 buckets, N keys written in 6 overlapping sorted runs per
bucket (``write-only`` while it is written, then ``false``: Java refuses to compact a
write-only table). Each round copies it twice, then:

* ``java``: Java Paimon 0.9 compacts one copy fully — ``BatchTableWrite.compact(partition,
  bucket, true)`` for every bucket and one commit, the oracle program's ``compact`` op
  (``tests/interop/java/PaimonOracle.java``) — in one JVM kept across the rounds, with the
  JVM's default flags, warmed up by compacting a copy before the first round (so neither JVM
  start nor class loading nor the JIT's first pass is counted);
* ``lakeops``: ``table.compact(full=True)`` of the other copy in a fresh process (imports
  before the clock).

Both results are then read by lakeops and must hold the same rows. Printed per side: the best
wall time and the CPU time of that run (the JVM's from ``/proc``), cores used, and the median
over the rounds of lakeops' wall and CPU time divided by Java's in the same round.
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
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "benchmarks"))

import bench_compact  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
from lakeops import Catalog
import lakeops.table.primary_key, lakeops.compact.manager  # loaded before the clock
table = Catalog(sys.argv[1]).get_table("db.t")
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = usage.ru_utime + usage.ru_stime
start = time.perf_counter()
table.compact(full=True)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime - cpu0}))
"""


class JavaCompactor:
    """One JVM serving the oracle program's requests (a line per request, see its ``serve``)."""

    def __init__(self, classpath: str, work: Path) -> None:
        self.work = work
        self.stderr = open(work / "java.stderr", "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            ["java", "-cp", classpath, "PaimonOracle", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )

    def _cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def compact(self, warehouse: Path) -> dict[str, float]:
        spec, out, errors = (self.work / n for n in ("ops.json", "out.jsonl", "errors.txt"))
        ops = [{"op": "compact", "table": "db.t"}]
        spec.write_text(json.dumps({"warehouse": str(warehouse), "ops": ops}))
        assert self.proc.stdin is not None and self.proc.stdout is not None
        cpu0 = self._cpu()
        start = time.perf_counter()
        self.proc.stdin.write(f"{spec}\t{out}\t{errors}\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        seconds = time.perf_counter() - start
        if reply != "ok":
            detail = errors.read_text() if errors.exists() else ""
            raise SystemExit(f"Java compaction failed ({reply!r}): {detail}")
        return {"seconds": seconds, "cpu": self._cpu() - cpu0}

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.stderr.close()


def lakeops_compact(warehouse: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(HERE))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(warehouse)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def fingerprint(warehouse: Path) -> tuple[int, int, int]:
    """(rows, sum of ids, sum of v) of the table, read by lakeops."""
    import pyarrow.compute as pc

    from lakeops import Catalog

    rows = Catalog(str(warehouse)).get_table("db.t").read()
    return (
        rows.num_rows,
        int(pc.sum(rows.column("id")).as_py()),
        int(pc.sum(rows.column("v")).as_py()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.interop.java_oracle import compile_oracle

    classpath = compile_oracle()
    work = Path(tempfile.mkdtemp(prefix="lakeops-java-compact-"))
    try:
        base = work / "base"
        bench_compact.build(str(base), args.keys)
        # Java refuses a user-triggered compaction of a write-only table
        from lakeops import Catalog
        from lakeops.format.schema_change import SetOption

        Catalog(str(base)).alter_table("db.t", [SetOption("write-only", "false")])
        java = JavaCompactor(classpath, work)
        try:
            warm = work / "warm"
            shutil.copytree(base, warm)
            java.compact(warm)  # JVM start, class loading and the JIT's first pass
            shutil.rmtree(warm)
            runs: dict[str, list[dict[str, float]]] = {"java": [], "lakeops": []}
            for r in range(args.rounds):
                copies = {side: work / f"{side}-{r}" for side in runs}
                for path in copies.values():
                    shutil.copytree(base, path)
                subprocess.run(["sync"], check=False)
                runs["java"].append(java.compact(copies["java"]))
                runs["lakeops"].append(lakeops_compact(copies["lakeops"]))
                if fingerprint(copies["java"]) != fingerprint(copies["lakeops"]):
                    raise SystemExit("the two compacted tables differ")
                for path in copies.values():
                    shutil.rmtree(path)
        finally:
            java.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"full compaction of {args.keys:,} keys (6 runs x 4 buckets), {args.rounds} rounds, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    for side, results in runs.items():
        best = min(results, key=lambda x: x["seconds"])
        print(
            f"{side:8} best {best['seconds']:.2f} s, CPU {best['cpu']:.2f} s, "
            f"{best['cpu'] / best['seconds']:.2f} cores"
        )
    pairs = list(zip(runs["lakeops"], runs["java"], strict=True))
    wall = statistics.median(a["seconds"] / b["seconds"] for a, b in pairs)
    cpu = statistics.median(a["cpu"] / b["cpu"] for a, b in pairs)
    print(f"lakeops / Java: wall {wall:.2f}x, CPU {cpu:.2f}x (target: wall <= 0.35x)")


if __name__ == "__main__":
    main()
