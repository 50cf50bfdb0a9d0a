"""The main job on an embedded default: the real pipeline — a local warehouse, Spark in local mode
and Airflow on its SQLite database.

Run it with ``bash scripts/demo.sh`` (or ``python -m lakeops.demo``). It

1. creates four tables in ``./warehouse`` (database ``demo``), one per merge engine: ``orders``
   (deduplicate, partitioned by day), ``customer_totals`` (aggregation: sums),
   ``customer_profile`` (partial-update) and ``first_order`` (first-row, a lookup table);
2. lands two batches of sample orders under ``./warehouse/_landing/`` (the orders as ordinary
   CSV files, ``demo.orders/batch-N/orders.csv``; the other tables' rows as Parquet) and ingests
   each into every table by running the **``lakeops_ingest`` DAG** (``dag.test()``, Airflow's
   SQLite DB in ``./.airflow``), whose task runs the Spark write job (local mode, in the worker
   process: ``LAKEOPS_SPARK_SUBMIT=false``);
3. runs **``lakeops_lookup_flush``** (first-order lookups see the new customers only after it)
   and **``lakeops_optimize``** (every unhealthy bucket compacted to one sorted run);
4. prints what happened: per table the snapshots, sorted runs, files per level and rows before
   and after, and the time of each step.

Its standard output holds only that summary: everything else — Spark's and the JVM's output,
Airflow's task logs, the jobs' JSON lines — goes to a log file it names in its first line
(``--log``, default ``lakeops-demo.log`` next to the Airflow home).

The warehouse is a real Paimon warehouse: pypaimon or Paimon on Spark/Flink can open it.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
DAYS = ["2026-11-20", "2026-11-21"]

TABLES: dict[str, dict[str, Any]] = {
    "demo.orders": {
        "schema": pa.schema(
            [
                ("dt", pa.string()),
                ("order_id", pa.int64()),
                ("customer_id", pa.int64()),
                ("amount", pa.float64()),
                ("status", pa.string()),
            ]
        ),
        "primary_keys": ["dt", "order_id"],
        "partition_keys": ["dt"],
        "options": {"bucket": "2"},
    },
    "demo.customer_totals": {
        "schema": pa.schema(
            [("customer_id", pa.int64()), ("total_amount", pa.float64()), ("orders", pa.int64())]
        ),
        "primary_keys": ["customer_id"],
        "options": {
            "bucket": "2",
            "merge-engine": "aggregation",
            "fields.total_amount.aggregate-function": "sum",
            "fields.orders.aggregate-function": "sum",
        },
    },
    "demo.customer_profile": {
        "schema": pa.schema(
            [
                ("customer_id", pa.int64()),
                ("name", pa.string()),
                ("city", pa.string()),
                ("last_amount", pa.float64()),
            ]
        ),
        "primary_keys": ["customer_id"],
        "options": {"bucket": "2", "merge-engine": "partial-update"},
    },
    "demo.first_order": {
        "schema": pa.schema(
            [("customer_id", pa.int64()), ("order_id", pa.int64()), ("dt", pa.string())]
        ),
        "primary_keys": ["customer_id"],
        # write-only: level 0 piles up until the lookup-flush DAG lifts it (readers and
        # lookups of first-row tables skip level 0)
        "options": {"bucket": "2", "merge-engine": "first-row", "write-only": "true"},
    },
}


def _orders(batch: int, rng: np.random.Generator) -> pa.Table:
    """Batch 0: 2,000 new orders; batch 1: 600 of them updated (status) plus 1,000 new ones."""
    if batch == 0:
        ids = np.arange(2_000)
        status = "created"
    else:
        ids = np.concatenate([rng.choice(2_000, 600, replace=False), np.arange(2_000, 3_000)])
        status = "shipped"
    n = len(ids)
    return pa.table(
        {
            "dt": pa.array(np.array(DAYS)[ids % 2]),
            "order_id": ids.astype(np.int64),
            "customer_id": (ids * 7919 % (300 + 200 * batch)).astype(np.int64),
            "amount": np.round(rng.uniform(5, 500, n), 2),
            "status": [status] * n,
        },
        schema=TABLES["demo.orders"]["schema"],
    )


def _sources(orders: pa.Table, batch: int) -> dict[str, pa.Table]:
    """What lands for each table: the orders, and views of them per customer."""
    customers = orders.column("customer_id")
    n = orders.num_rows
    cities = ["Lisbon", "Oslo", "Rome", "Lyon"]
    profile = {
        "customer_id": customers,
        "name": [f"customer {c}" for c in customers.to_pylist()] if batch == 0 else [None] * n,
        "city": [cities[c % 4] for c in customers.to_pylist()] if batch == 0 else [None] * n,
        "last_amount": orders.column("amount") if batch == 1 else pa.nulls(n, pa.float64()),
    }
    return {
        "demo.orders": orders,
        "demo.customer_totals": pa.table(
            {
                "customer_id": customers,
                "total_amount": orders.column("amount"),
                "orders": np.ones(n, np.int64),
            }
        ),
        "demo.customer_profile": pa.table(
            profile, schema=TABLES["demo.customer_profile"]["schema"]
        ),
        "demo.first_order": orders.select(["customer_id", "order_id", "dt"]),
    }


def _land(data: pa.Table, landing: Path, *, csv: bool) -> str:
    """Write one landed batch into ``landing``: an ordinary CSV file (header, plain values; its
    ``dt`` day strings stay the STRING key they are) or Parquet. Returns the format's name."""
    if csv:
        options = pacsv.WriteOptions(include_header=False, quoting_style="none")
        with open(landing / "orders.csv", "wb") as out:
            out.write((",".join(data.column_names) + "\n").encode())
            pacsv.write_csv(data, out, write_options=options)
        return "csv"
    pq.write_table(data, landing / "part-0.parquet")
    return "parquet"


def _environment(warehouse: Path, airflow_home: Path) -> None:
    """Airflow and Spark settings, before Airflow is imported."""
    os.environ.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home}/airflow.db",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "ERROR",
            "AIRFLOW_CONN_LAKEOPS_DEFAULT": (
                f'{{"conn_type": "lakeops", "host": "{warehouse.resolve()}"}}'
            ),
            "LAKEOPS_SPARK_SUBMIT": "false",
            "LAKEOPS_SPARK_MASTER": "local[2]",
            "PYSPARK_PYTHON": sys.executable,
        }
    )


def _shape(table: Any) -> dict[str, Any]:
    health = table.health(recent_snapshots=1)
    levels: dict[int, int] = {}
    for b in health.buckets:
        for level, count in b.files_by_level.items():
            levels[level] = levels.get(level, 0) + count
    return {
        "snapshots": len(table.snapshots()),
        "runs": health.max_sorted_runs,
        "levels": " ".join(f"L{lv}:{n}" for lv, n in sorted(levels.items())) or "-",
        "rows": table.read(columns=table.schema.primary_keys).num_rows,
    }


#: where the summary goes: the original standard output, once :func:`_divert_output` has sent
#: file descriptors 1 and 2 (and so Spark's JVM, Airflow and every library) to the log file
_OUT: TextIO = sys.stdout


def say(text: str = "") -> None:
    """One line of the main job's own summary."""
    print(text, file=_OUT, flush=True)


def _divert_output(log: Path) -> TextIO:
    """Point file descriptors 1 and 2 at ``log`` (the JVM that Spark starts later inherits
    them), keep the original standard output for :func:`say`; return the original standard
    error, for a failure message."""
    global _OUT
    sys.stdout.flush()
    sys.stderr.flush()
    _OUT = os.fdopen(os.dup(1), "w", buffering=1)
    err = os.fdopen(os.dup(2), "w", buffering=1)
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return err


def _print_shapes(title: str, shapes: dict[str, dict[str, Any]]) -> None:
    say(f"\n{title}")
    say(f"  {'table':24s} {'snapshots':>9s} {'max runs':>9s}  {'files by level':18s} {'rows':>6s}")
    for name, s in shapes.items():
        say(f"  {name:24s} {s['snapshots']:>9d} {s['runs']:>9d}  {s['levels']:18s} {s['rows']:>6d}")


def _timed(label: str, step: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    result = step()
    say(f"  {label:58s} {time.perf_counter() - start:6.1f} s")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m lakeops.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--warehouse", default="warehouse", help="warehouse directory")
    parser.add_argument("--airflow-home", default=".airflow", help="Airflow's home (SQLite DB)")
    parser.add_argument(
        "--log", default=None, help="log file of Spark, the JVM and Airflow (lakeops-demo.log)"
    )
    args = parser.parse_args(argv)
    warehouse, airflow_home = Path(args.warehouse).resolve(), Path(args.airflow_home).resolve()
    log = Path(args.log).resolve() if args.log else airflow_home.parent / "lakeops-demo.log"
    _environment(warehouse, airflow_home)
    err = _divert_output(log)
    try:
        _main(warehouse, airflow_home, log)
    except BaseException as exc:
        if not isinstance(exc, SystemExit) or exc.code not in (0, None):
            err.write(f"lakeops main job failed: {exc!r}; the full output is in {log}\n")
            err.flush()
        raise


def _main(warehouse: Path, airflow_home: Path, log: Path) -> None:
    total = time.perf_counter()
    say(f"lakeops main job: warehouse {warehouse}, Airflow home {airflow_home}")
    say(f"Spark, JVM and Airflow output: {log}")

    from lakeops import Catalog
    from lakeops.table import primary_key_table

    shutil.rmtree(warehouse / "demo.db", ignore_errors=True)
    shutil.rmtree(warehouse / "_landing", ignore_errors=True)
    warehouse.mkdir(parents=True, exist_ok=True)
    catalog = Catalog(str(warehouse))
    catalog.create_database("demo", ignore_if_exists=True)
    tables = {name: catalog.create_table(name, **spec) for name, spec in TABLES.items()}

    say("\nsteps")
    _timed(
        "airflow db migrate (SQLite)",
        lambda: subprocess.run(
            [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
            check=True,
            capture_output=True,
        ),
    )
    from airflow.dag_processing.dagbag import DagBag

    dags = DagBag(dag_folder=str(REPO / "dags"))
    if dags.import_errors:
        raise SystemExit(f"DAG import errors: {dags.import_errors}")

    def run(dag_id: str, conf: dict[str, Any] | None = None) -> None:
        dag_run = dags.get_dag(dag_id).test(logical_date=None, run_conf=conf)
        if dag_run.state != "success":
            raise SystemExit(f"{dag_id} ended {dag_run.state}; see {log}")

    rng = np.random.default_rng(42)
    for batch in (0, 1):
        orders = _orders(batch, rng)
        for name, data in _sources(orders, batch).items():
            landing = warehouse / "_landing" / name / f"batch-{batch}"
            landing.mkdir(parents=True)
            fmt = _land(data, landing, csv=name == "demo.orders")
            _timed(
                f"lakeops_ingest  {name:22s} batch {batch} ({data.num_rows:,} rows)",
                functools.partial(
                    run,
                    "lakeops_ingest",
                    {
                        "source": str(landing.resolve()),
                        "table": name,
                        "mode": "append",
                        "format": fmt,
                    },
                ),
            )
    before = {name: _shape(t) for name, t in tables.items()}
    probe = pa.table({"customer_id": pa.array([301, 450], pa.int64())})
    first = primary_key_table(tables["demo.first_order"], "lookup")
    seen_before = first.lookup(probe).num_rows
    _timed(
        "lakeops_lookup_flush  (level-0 flush of lookup tables)",
        lambda: run("lakeops_lookup_flush"),
    )
    seen_after = first.lookup(probe).num_rows
    mid = {name: _shape(t) for name, t in tables.items()}
    _timed("lakeops_optimize  (one sorted run per bucket)", lambda: run("lakeops_optimize"))
    after = {name: _shape(t) for name, t in tables.items()}

    _print_shapes("after ingest (2 batches per table)", before)
    _print_shapes("after lakeops_lookup_flush", mid)
    _print_shapes("after lakeops_optimize", after)
    say(
        f"\nfirst-row lookup of 2 customers first seen in batch 1: {seen_before} found before "
        f"the flush, {seen_after} after"
    )
    totals = tables["demo.customer_totals"].read().sort_by([("total_amount", "descending")])
    top = totals.slice(0, 1).to_pylist()[0]
    say(
        f"top customer (aggregation): {top['customer_id']} with {top['orders']} orders, "
        f"{top['total_amount']:.2f} in total"
    )
    elapsed = time.perf_counter() - total
    say(f"\ndone in {elapsed:.1f} s; {warehouse} opens in any Paimon reader")


if __name__ == "__main__":
    main()
