"""Every DAG in ``dags/`` run with ``dag.test()`` on Airflow's SQLite metadata DB, as a run
triggered by hand (no logical date), against a local warehouse; and ``airflow dags test`` from
the command line, through a real ``spark-submit``."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from tests.airflow.conftest import REPO, airflow_cli, connection_json

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _load(dag_id: str) -> Any:
    """Parse the DAG file afresh (so settings from the environment apply)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)


def _run(dag_id: str, conf: dict[str, Any] | None = None) -> Any:
    run = _load(dag_id).test(logical_date=None, run_conf=conf)
    assert run.state == "success", f"{dag_id} ended {run.state}"
    return run


def _rows(ids: range, v: int, dt_value: str = "d1") -> pa.Table:
    return pa.table(
        {"dt": [dt_value] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA
    )


def _table(catalog: Catalog, name: str, **options: str):
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true", **options},
    )


def test_dag_files_parse_without_a_warehouse() -> None:
    """Parsing touches no storage: every DAG loads with no connection configured."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert not bag.import_errors, bag.import_errors
    assert set(bag.dag_ids) == {
        "lakeops_ingest",
        "lakeops_optimize",
        "lakeops_lookup_flush",
        "lakeops_lookup_flush_on_commit",
        "lakeops_maintenance",
    }


def test_ingest_in_process(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("LAKEOPS_SPARK_SUBMIT", "false")
    table = _table(catalog, "db.orders")
    source = tmp_path / "landing"
    source.mkdir()
    rows = pa.concat_tables([_rows(range(0, 150), 1, "d1"), _rows(range(0, 50), 2, "d2")])
    pq.write_table(rows, source / "part-0.parquet")
    _run("lakeops_ingest", {"source": str(source), "table": "db.orders", "mode": "append"})
    order = [("dt", "ascending"), ("id", "ascending")]
    assert table.read().sort_by(order).to_pylist() == rows.sort_by(order).to_pylist()
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"]


def test_ingest_an_ordinary_csv_in_process(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str, tmp_path: Path, monkeypatch
) -> None:
    """The CSV a new user has: a ``dt`` of ``2026-11-20`` values for the STRING key (Spark's
    inference made it a date, and the write refused it), a DATE and exact decimals."""
    import datetime as dt
    import decimal

    monkeypatch.setenv("LAKEOPS_SPARK_SUBMIT", "false")
    schema = pa.schema(
        [
            ("dt", pa.string()),
            ("id", pa.int64()),
            ("day", pa.date32()),
            ("amount", pa.decimal128(10, 2)),
        ]
    )
    table = catalog.create_table(
        "db.sales", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"]
    )
    source = tmp_path / "sales.csv"
    source.write_text("dt,id,day,amount\n2026-11-20,1,2026-11-20,12.30\n2026-11-21,2,,0.1\n")
    _run("lakeops_ingest", {"source": str(source), "table": "db.sales", "format": "csv"})
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
        {
            "dt": "2026-11-20",
            "id": 1,
            "day": dt.date(2026, 11, 20),
            "amount": decimal.Decimal("12.30"),
        },
        {"dt": "2026-11-21", "id": 2, "day": None, "amount": decimal.Decimal("0.10")},
    ]


def test_optimize_compacts_unhealthy_partitions_only(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str, caplog: pytest.LogCaptureFixture
) -> None:
    messy = _table(catalog, "db.messy")
    for v in range(3):
        messy.write(pa.concat_tables([_rows(range(60), v, "d1"), _rows(range(60), v, "d2")]))
    tidy = _table(catalog, "db.tidy")
    tidy.write(_rows(range(60), 1))
    tidy_snapshot = tidy.latest_snapshot().id
    assert messy.health().max_sorted_runs == 3
    # an append table: small files in d1 only (d2 has one file, nothing to compact)
    logs = catalog.create_table("db.logs", schema=SCHEMA, partition_keys=["dt"])
    inputs = [*(_rows(range(20), v, "d1") for v in range(3)), _rows(range(20), 9, "d2")]
    for rows in inputs:
        logs.write(rows)
    logged = [r for rows in inputs for r in rows.to_pylist()]  # the model: every row, in order

    caplog.set_level(logging.INFO, logger="lakeops.optimize.plan")
    _run("lakeops_optimize")
    # plan says, per table, whether it was chosen and why
    assert sorted(r.getMessage() for r in caplog.records if r.name == "lakeops.optimize.plan") == [
        "db.logs: chosen — append table with small files to rewrite in 1 partition(s): dt=d1",
        "db.messy: chosen — up to 3 sorted runs in a bucket, more than max_sorted_runs=1, in "
        "2 partition(s): dt=d1, dt=d2",
        "db.tidy: skipped — at most 1 sorted run(s) per bucket (max_sorted_runs=1)",
    ]
    assert {b.sorted_runs for b in messy.health().buckets} == {1}
    assert len(messy.health().buckets) == 4
    assert messy.read().num_rows == 120
    assert tidy.latest_snapshot().id == tidy_snapshot  # healthy: left alone
    assert [s.commit_kind for s in messy.snapshots()][3:] == ["COMPACT", "COMPACT"]  # one per dt
    events = _asset_events("lakeops://lakeops_default/db/messy")
    assert sorted(e["snapshot_id"] for e in events)[-2:] == [4, 5]
    assert not _asset_events("lakeops://lakeops_default/db/tidy")
    assert [s.commit_kind for s in logs.snapshots()][4:] == ["COMPACT"]
    assert [len(s.files) for s in logs.splits()] == [1, 1]  # d1's three files rewritten as one
    assert sorted(logs.read().to_pylist(), key=lambda r: (r["dt"], r["v"], r["id"])) == logged


def _asset_events(uri: str) -> list[dict[str, Any]]:
    """The extras of the Asset events recorded in the metadata DB for ``uri``."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(
            select(AssetEvent)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .where(AssetModel.uri == uri)
        ).all()
        return [dict(e.extra or {}) for e in rows]


def test_lookup_flush_makes_new_keys_visible(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str
) -> None:
    lookup = _table(catalog, "db.users", **{"merge-engine": "first-row"})
    plain = _table(catalog, "db.events")
    lookup.write(_rows(range(10), 1))
    plain.write(_rows(range(10), 1))
    keys = pa.table({"dt": ["d1"] * 2, "id": [3, 7]})
    assert lookup.lookup(keys).num_rows == 0

    _run("lakeops_lookup_flush")
    assert sorted(lookup.lookup(keys)["id"].to_pylist()) == [3, 7]
    assert [s.commit_kind for s in plain.snapshots()] == ["APPEND"]  # not a lookup table


def test_maintenance_expires_what_the_options_say(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str, monkeypatch
) -> None:
    table = _table(
        catalog,
        "db.t",
        **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"},
    )
    for v in range(4):
        table.write(_rows(range(20), v))
    orphan = Path(table.root) / "dt=d1" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"junk")
    two_days_ago = time.time() - 2 * 86400  # older than the default threshold of one day
    os.utime(orphan, (two_days_ago, two_days_ago))
    keep_all = _table(catalog, "db.keep")
    for v in range(3):
        keep_all.write(_rows(range(5), v))

    expiring = _table(catalog, "db.parts", **{"partition.expiration-time": "7 d"})
    expiring.write(_rows(range(5), 1, "2024-01-01"))
    expiring.write(_rows(range(5), 1, "2999-01-01"))

    _run("lakeops_maintenance")
    assert set(expiring.read()["dt"].to_pylist()) == {"2999-01-01"}
    assert expiring.latest_snapshot().commit_kind == "OVERWRITE"
    assert [s.id for s in table.snapshots()] == [3, 4]
    assert [s.id for s in keep_all.snapshots()] == [1, 2, 3]  # within the default retention
    assert not orphan.exists()
    assert table.read().sort_by("id")["v"].to_pylist() == [3] * 20


def test_airflow_dags_test_cli_ingest_through_spark_submit(
    airflow_db: Path, catalog: Catalog, tmp_path: Path
) -> None:
    table = _table(catalog, "db.orders")
    source = tmp_path / "landing.csv"
    source.write_text("dt,id,v\nd1,1,10\nd1,2,20\nd2,1,30\n")
    conf = {"source": str(source), "table": "db.orders", "mode": "append", "format": "csv"}
    env = {
        "AIRFLOW_CONN_LAKEOPS_DEFAULT": connection_json(catalog.warehouse),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",  # task logs as users see them
        "LAKEOPS_TABLES": "db.orders",  # the DAGs name its Asset: Airflow knows it, active
    }
    out = airflow_cli(
        "dags", "test", "lakeops_ingest", "-c", json.dumps(conf), env=env, stderr=True
    )
    # the commit's Asset event is recorded, without Airflow's warnings about unknown Assets
    assert "not found; cannot create asset event" not in out
    assert "inactive AssetModel" not in out
    events = _asset_events("lakeops://lakeops_default/db/orders")
    assert events[-1]["snapshot_id"] == table.latest_snapshot().id
    # Spark's log is relayed at WARN: none of its INFO lines reach the task log
    spark_info = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO |\"level\": ?\"INFO\".*spark")
    assert [line for line in out.splitlines() if spark_info.search(line)] == []
    assert "lakeops LakeopsSparkWriteOperator" in out  # the task's own log is there
    assert table.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist() == [
        {"dt": "d1", "id": 1, "v": 10},
        {"dt": "d1", "id": 2, "v": 20},
        {"dt": "d2", "id": 1, "v": 30},
    ]


def test_lookup_flush_schedule_follows_the_lookup_tables_assets(
    airflow_db: Path, monkeypatch
) -> None:
    monkeypatch.setenv("LAKEOPS_LOOKUP_TABLES", "db.users, db.items")
    timetable = _load("lakeops_lookup_flush").timetable
    uris = {asset.uri for asset in timetable.asset_condition.objects}
    assert uris == {"lakeops://lakeops_default/db/users", "lakeops://lakeops_default/db/items"}
    assert "*/10 * * * *" in repr(timetable.timetable)


def test_committed_tables_ignore_compactions_and_other_assets() -> None:
    from lakeops.airflow.conditions import committed_tables

    events = [
        ("lakeops://c/db/users", [{"commit_kind": "APPEND", "snapshot_id": 4}]),
        ("lakeops://c/db/items", [{"commit_kind": "COMPACT", "snapshot_id": 9}]),
        ("s3://bucket/other", [{}]),
        ("lakeops://c/db/orders", [{"commit_kind": "COMPACT"}, {"commit_kind": "OVERWRITE"}]),
    ]
    assert committed_tables(events) == ["db.users", "db.orders"]


def test_readme_airflow_setup_lists_the_dags(tmp_path: Path) -> None:
    """``source scripts/airflow-env.sh`` (the README's Airflow setup) in a clean environment."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEOPS"))}
    env["AIRFLOW_HOME"] = str(tmp_path / "home")
    script = (
        "source scripts/airflow-env.sh && airflow db migrate >/dev/null && "
        "airflow dags reserialize >/dev/null && airflow dags list -o json"
    )
    out = subprocess.run(
        ["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    dag_ids = {d["dag_id"] for d in json.loads(out.stdout.strip().splitlines()[-1])}
    assert {"lakeops_ingest", "lakeops_optimize", "lakeops_lookup_flush"} <= dag_ids
    assert "lakeops_maintenance" in dag_ids


@pytest.mark.parametrize("clock", ["00:08", "02:00", "12:00", "23:59"])
def test_schedules_as_documented(
    airflow_db: Path, monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    """``lakeops_ingest`` runs only when triggered; ``lakeops_optimize`` and
    ``lakeops_maintenance`` are daily with ``catchup=False`` and, once unpaused, first run at the
    next midnight — no run for the past, whatever the time of day (Airflow's default runs the
    past midnight at once when unpaused in the first tenth of the day)."""
    import datetime as dt

    import airflow.timetables.trigger as trigger
    from airflow.serialization.serialized_objects import DagSerialization

    hour, minute = map(int, clock.split(":"))
    now = dt.datetime(2026, 11, 29, hour, minute, tzinfo=dt.UTC)
    monkeypatch.setattr(trigger, "utcnow", lambda: now)
    for name in (
        "LAKEOPS_INGEST_SCHEDULE",
        "LAKEOPS_OPTIMIZE_SCHEDULE",
        "LAKEOPS_MAINTENANCE_SCHEDULE",
    ):
        monkeypatch.delenv(name, raising=False)
    ingest = _load("lakeops_ingest")
    assert ingest.schedule is None and type(ingest.timetable).__name__ == "NullTimetable"
    for dag_id in ("lakeops_optimize", "lakeops_maintenance"):
        dag = _load(dag_id)
        assert dag.catchup is False
        scheduled = DagSerialization.from_dict(DagSerialization.to_dict(dag))
        first = scheduled.next_dagrun_info(last_automated_run_info=None)
        assert first is not None, dag_id
        assert first.run_after == dt.datetime(2026, 11, 30, tzinfo=dt.UTC), (dag_id, clock)
