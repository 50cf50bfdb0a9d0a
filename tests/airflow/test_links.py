"""The "lakeops table" link of a task that failed, run for real with ``dag.test()``: the task's
error names the table the user probably meant, and no second, spurious error follows (Airflow's
client logs "XCom not found" when the link looks up an XCom the task never pushed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.airflow.links import PUSHED_ATTR, LakeopsTableLink, table_xcom_value
from lakeops.airflow.operators import LakeopsCompactOperator
from tests.airflow.conftest import REPO

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_a_failed_task_names_the_near_table_and_its_link_raises_nothing(
    airflow_db: Path,
    catalog: Catalog,
    lakeops_conn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The README's first ingest attempt: ``db.orders`` where the warehouse has ``demo.orders``."""
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("LAKEOPS_SPARK_SUBMIT", "false")
    catalog.create_database("demo")
    catalog.create_table("demo.orders", schema=pa.schema([("id", pa.int64())]), primary_keys=["id"])
    source = tmp_path / "in.csv"
    source.write_text("id\n1\n")
    bag = DagBag(dag_folder=str(REPO / "dags" / "lakeops_ingest.py"))
    conf = {"source": str(source), "table": "db.orders", "format": "csv"}
    run = bag.get_dag("lakeops_ingest").test(logical_date=None, run_conf=conf)
    assert run.state == "failed"
    out = capfd.readouterr()
    log = out.out + out.err
    assert "did you mean demo.orders?" in log
    assert "XCom not found" not in log
    assert "Failed to push an xcom for task operator extra link" not in log


def test_the_link_reads_what_the_operator_pushed() -> None:
    """In the worker the link is answered from the operator that ran: nothing pushed, no link
    (and no XCom lookup); pushed, the table's page."""
    operator = LakeopsCompactOperator(task_id="c", table="db.t")
    link = LakeopsTableLink()
    assert getattr(operator, PUSHED_ATTR) is None
    assert link.get_link(operator, ti_key=None) == ""  # type: ignore[arg-type]
    setattr(operator, PUSHED_ATTR, table_xcom_value("lakeops_default", "db.t"))
    assert link.get_link(operator, ti_key=None) == "/lakeops/tables/lakeops_default/db/t"  # type: ignore[arg-type]
