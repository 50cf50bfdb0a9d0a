"""A task instance retried after its commit landed commits once: ``LakeopsSparkWriteOperator``
on an aggregation (sum) table, attempt 1 commits and then fails pushing its XCom, attempt 2 (the
same task instance) runs the job again. Every key must sum once — judged by pypaimon and a plain
model — in the worker's Spark session and through the ``spark-submit`` path (its job run with
the exact argv the operator built)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.execution_time.context import OutletEventAccessors

from lakeops import Catalog, Table
from lakeops.airflow.commit_user import task_commit_user, task_instance_commit_user
from lakeops.airflow.operators import LakeopsSparkWriteOperator
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "bucket": "2"}
IDS = range(50)


class TaskInstance:
    """The parts of Airflow's runtime task instance the operator uses: its identity and the XCom
    push, which fails on the first try (after the commit: the failure this test is about)."""

    def __init__(self, try_number: int, *, map_index: int = -1) -> None:
        self.dag_id, self.task_id, self.run_id = "ingest", "write", "manual__2026-01-01"
        self.map_index, self.try_number = map_index, try_number
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        if self.try_number == 1:
            raise ConnectionError("XCom backend unreachable")
        self.xcoms[key] = value


def _context(try_number: int) -> dict[str, Any]:
    return {"ti": TaskInstance(try_number), "outlet_events": OutletEventAccessors()}


def _sum_table(catalog: Catalog) -> Table:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=SUM
    )
    table.write(_rows(1))  # the base every key adds to
    return table  # type: ignore[return-value]


def _rows(v: int) -> pa.Table:
    return pa.table({"dt": ["d1"] * len(IDS), "id": list(IDS), "v": [v] * len(IDS)}, schema=SCHEMA)


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(_rows(10), source / "part-0.parquet")
    return source


def _data_files(table: Table) -> set[str]:
    return {p.name for p in Path(table.root).rglob("bucket-*/data-*") if p.is_file()}


def _live_files(table: Table) -> set[str]:
    return {f.file_name for s in table.splits() for f in s.files}


def _check_summed_once(table: Table, warehouse: Path) -> None:
    model = {i: 11 for i in IDS}
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == model
    assert {r["id"]: r["v"] for r in oracle_read(warehouse, "db.t").to_pylist()} == model
    assert _data_files(table) == _live_files(table)  # the retry's files were deleted


def _retried(operator: LakeopsSparkWriteOperator) -> dict[str, Any]:
    """Try 1 commits and fails; try 2 runs the same task instance again."""
    with pytest.raises(ConnectionError):
        operator.execute(_context(1))  # type: ignore[arg-type]
    return operator.execute(_context(2))  # type: ignore[arg-type]


def test_commit_user_is_the_task_instance() -> None:
    user = task_commit_user({"ti": TaskInstance(1)})
    assert user == task_commit_user({"ti": TaskInstance(3)})  # every try: the same
    assert user == task_instance_commit_user("ingest", "write", "manual__2026-01-01", -1)
    assert user != task_commit_user({"ti": TaskInstance(1, map_index=0)})
    assert user != task_instance_commit_user("ingest", "write", "manual__2026-01-02", -1)
    assert task_commit_user({"ti": object()}) is None  # executed outside Airflow


@pytest.mark.slow
def test_retried_write_in_the_worker_sums_once(
    catalog: Catalog, warehouse: Path, tmp_path: Path, lakeops_conn: str
) -> None:
    table = _sum_table(catalog)
    result = _retried(
        LakeopsSparkWriteOperator(
            task_id="write",
            source=str(_source(tmp_path)),
            table="db.t",
            submit=False,
            master="local[2]",
        )
    )
    assert result["snapshot_id"] == 2 and result["already_committed"] is True
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert table.store.snapshot(2).commit_user == task_commit_user({"ti": TaskInstance(1)})
    _check_summed_once(table, warehouse)


@pytest.mark.slow
def test_retried_write_through_spark_submit_sums_once(
    catalog: Catalog,
    warehouse: Path,
    tmp_path: Path,
    lakeops_conn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ``spark-submit`` path: the job gets the commit user on its command line; each try
    runs the job's ``main`` with the argv ``spark-submit`` would hand it."""
    from lakeops.spark import jobs, submit

    argvs: list[list[str]] = []

    def run(
        command: list[str], job: str, secrets: Any, storage: Any, catalog_opts: Any, *rest: Any
    ) -> dict[str, Any]:
        argv = command[command.index(submit.job_file()) + 1 :]
        argvs.append(argv)
        return jobs.main(
            [*argv, "--master", "local[2]"], storage_options=storage, catalog_options=catalog_opts
        )

    monkeypatch.setattr(submit, "_run", run)
    table = _sum_table(catalog)
    result = _retried(
        LakeopsSparkWriteOperator(task_id="write", source=str(_source(tmp_path)), table="db.t")
    )
    user = task_commit_user({"ti": TaskInstance(1)})
    assert [a[a.index("--commit-user") + 1] for a in argvs] == [user, user]
    assert result["snapshot_id"] == 2 and result["already_committed"] is True
    assert [s.id for s in table.snapshots()] == [1, 2]
    _check_summed_once(table, warehouse)


#: a DAG whose write task fails after its job committed (as a failing XCom push would) on its
#: first try; Airflow retries it at once
RETRIED_DAG = """
import datetime as dt

from airflow.sdk import DAG

from lakeops.airflow.operators import LakeopsSparkWriteOperator


class FailsAfterCommit(LakeopsSparkWriteOperator):
    def _done(self, context, result, start):
        if context["ti"].try_number == 1:
            raise ConnectionError("XCom backend unreachable")
        return super()._done(context, result, start)


with DAG("lakeops_retried_write", schedule=None) as dag:
    FailsAfterCommit(
        task_id="write",
        source=SOURCE,
        table="db.t",
        submit=False,
        master="local[2]",
        retries=1,
        retry_delay=dt.timedelta(0),
    )
"""


LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"


@pytest.mark.slow
def test_dag_run_retries_the_task_and_it_sums_once(
    airflow_db: Path,
    catalog: Catalog,
    warehouse: Path,
    tmp_path: Path,
    lakeops_conn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dag.test()``: Airflow itself retries the failed try (``retries=1``, no delay) with its
    real task-instance context; the run succeeds and every key sums once."""
    from airflow.dag_processing.dagbag import DagBag

    table = _sum_table(catalog)
    dags = tmp_path / "dags"
    dags.mkdir()
    dag_file = dags / "retried_write.py"
    dag_file.write_text(RETRIED_DAG.replace("SOURCE", repr(str(_source(tmp_path)))))
    # dag.test() runs only DAGs of a configured bundle: this test's folder is one
    bundles = [
        {"name": "dags-folder", "classpath": LOCAL_BUNDLE, "kwargs": {}},
        {"name": "retried-write", "classpath": LOCAL_BUNDLE, "kwargs": {"path": str(dags)}},
    ]
    monkeypatch.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
    bag = DagBag(dag_folder=str(dag_file))
    assert not bag.import_errors, bag.import_errors
    run = bag.get_dag("lakeops_retried_write").test()
    assert run.state == "success"
    (ti,) = run.get_task_instances()
    assert ti.try_number == 2
    user = task_instance_commit_user("lakeops_retried_write", "write", run.run_id, -1)
    assert [(s.id, s.commit_user) for s in table.snapshots()][1:] == [(2, user)]
    _check_summed_once(table, warehouse)
