"""The README's first command runs this main job: the whole pipeline (Airflow DAGs, Spark write
jobs, lookup flush, optimisation) on a local warehouse."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lakeops import Catalog

pytestmark = pytest.mark.slow


def test_main_job_runs_the_pipeline(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lakeops.demo",
            "--warehouse",
            str(tmp_path / "wh"),
            "--airflow-home",
            str(tmp_path / "airflow"),
            "--log",
            str(tmp_path / "demo.log"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "0 found before the flush, 2 after" in out.stdout
    # stdout holds only the main job's own summary; Spark, the JVM and Airflow write to the log
    own = re.compile(
        r"^(lakeops main job: warehouse .*|Spark, JVM and Airflow output: .*demo\.log|steps"
        r"|  (lakeops_ingest|lakeops_lookup_flush|lakeops_optimize|airflow db migrate) .* s"
        r"|after .*|  table +snapshots +max runs  files by level +rows"
        r"|  demo\.\w+ +\d+ +\d+  ((L\d+:\d+ ?)+|-) +\d+"
        r"|first-row lookup .*|top customer .*|done in .*)$"
    )
    foreign = [line for line in out.stdout.splitlines() if line and not own.match(line)]
    assert foreign == []
    assert out.stderr == ""
    log = (tmp_path / "demo.log").read_text()
    assert "Spark" in log  # the JVM's output went to the log it named
    catalog = Catalog(str(tmp_path / "wh"))
    assert sorted(catalog.list_tables("demo")) == [
        "customer_profile",
        "customer_totals",
        "first_order",
        "orders",
    ]
    orders = catalog.get_table("demo.orders")
    assert orders.read().num_rows == 3000  # 2,000 orders, then 1,000 new (600 updated)
    assert (
        sum(r["status"] == "shipped" for r in orders.read(columns=["status"]).to_pylist()) == 1600
    )
    for name in catalog.list_tables("demo"):
        health = catalog.get_table(f"demo.{name}").health()
        assert health.max_sorted_runs == 1, name  # lakeops_optimize / the flush ran
    totals = catalog.get_table("demo.customer_totals").read()
    assert sum(totals.column("orders").to_pylist()) == 3600  # one per ingested order row
