"""The README's first command runs this main job: the whole pipeline (Airflow DAGs, Spark write
jobs, lookup flush, optimisation) on a local warehouse; then the README's Airflow commands run as
printed against the warehouse it leaves behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakeops import Catalog

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Demo:
    """A directory laid out as this checkout (its scripts, DAGs, plugins and venv linked in)
    where the main job ran with its defaults: ``./warehouse``, ``./.airflow``."""

    home: Path
    out: subprocess.CompletedProcess[str]

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"


def _env() -> dict[str, str]:
    """A clean environment (no Airflow or lakeops settings) importing this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEOPS"))}
    return {**env, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    home = tmp_path_factory.mktemp("checkout")
    for name in ("scripts", "dags", "plugins", ".venv"):
        (home / name).symlink_to(ROOT / name)
    out = subprocess.run(
        [sys.executable, "-m", "lakeops.demo", "--log", str(home / "demo.log")],
        capture_output=True,
        text=True,
        timeout=1800,  # about a minute and a half on two idle cores
        cwd=home,
        env=_env(),
    )
    return Demo(home, out)


def test_main_job_runs_the_pipeline(demo: Demo) -> None:
    out = demo.out
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
    log = (demo.home / "demo.log").read_text()
    assert "Spark" in log  # the JVM's output went to the log it named
    catalog = Catalog(str(demo.warehouse))
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


def _readme_airflow_commands() -> str:
    """The first ``bash`` block of the README's Airflow section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Airflow 3\n")
    section = text[start : text.index("\n## ", start + 1)]
    found = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_readme_airflow_commands_run_against_the_demo_warehouse(demo: Demo) -> None:
    """As printed, from the checkout's root, after the demo: the ingest command loads the demo's
    landed CSV orders (a ``dt`` of ``2026-11-20`` values into the STRING key) into
    ``demo.orders`` through ``spark-submit``."""
    assert demo.out.returncode == 0, demo.out.stderr[-4000:]
    orders = Catalog(str(demo.warehouse)).get_table("demo.orders")
    before = orders.latest_snapshot().id
    rows = sorted(orders.read().to_pylist(), key=lambda r: (r["dt"], r["order_id"]))
    commands = _readme_airflow_commands()
    assert "demo.orders" in commands
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=demo.home,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "XCom not found" not in proc.stdout + proc.stderr
    latest = orders.latest_snapshot()
    assert latest.id == before + 1 and latest.commit_kind == "APPEND"
    # the batch loaded again: the last row of each key wins, so the rows are the same
    assert sorted(orders.read().to_pylist(), key=lambda r: (r["dt"], r["order_id"])) == rows
