"""Settings of the DAGs in ``dags/``, read from the environment when a DAG file is parsed, so a
deployment configures them without editing DAG code (``infra/`` env templates list them).

* ``LAKEOPS_CONN_ID`` (``lakeops_default``): the ``lakeops`` connection of the warehouse;
* ``LAKEOPS_TABLES`` (``db.t,db.u``): the tables the DAGs commit to. Their committing tasks name
  these tables' Assets (with ``LAKEOPS_INGEST_TABLE`` and the lookup tables), so Airflow knows
  and activates them when it parses the DAGs and records every commit's Asset event without
  its "AssetModel … not found" / "inactive AssetModel" warnings. A table not named anywhere still
  gets its events (Airflow creates the Asset on the first one), with those warnings;
* ``LAKEOPS_INGEST_SCHEDULE`` (none: ``lakeops_ingest`` runs only when triggered — by hand, the
  REST API or ``airflow dags trigger`` with the Params of the load; a cron or preset such as
  ``@hourly`` schedules it), ``LAKEOPS_INGEST_SOURCE``, ``LAKEOPS_INGEST_TABLE``,
  ``LAKEOPS_INGEST_FORMAT`` (``parquet``): the default Params of its runs;
* ``LAKEOPS_SPARK_SUBMIT`` (``true``): Spark jobs through ``spark-submit``; ``false`` runs them in
  the worker process;
* ``LAKEOPS_OPTIMIZE_SCHEDULE`` (``@daily``), ``LAKEOPS_COMPACT_ENGINE`` (``local`` in the worker,
  or ``spark``): ``lakeops_optimize``;
* ``LAKEOPS_LOOKUP_FLUSH_CRON`` (every 10 minutes), ``LAKEOPS_LOOKUP_TABLES`` (``db.t,db.u``: also
  run when an Airflow operator commits to one of them): ``lakeops_lookup_flush``;
* ``LAKEOPS_WATCHED_LOOKUP_TABLES`` (``db.t,db.u``), ``LAKEOPS_WATCH_POLL_SECONDS`` (30):
  ``lakeops_lookup_flush_on_commit``, event-driven (an ``AssetWatcher`` with
  :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger` per table, polled by the triggerer):
  it runs when anyone (Spark, Flink, the CLI, Airflow) commits new data to one of them;
* ``LAKEOPS_MAINTENANCE_SCHEDULE`` (``@daily``), ``LAKEOPS_ORPHAN_OLDER_THAN_HOURS`` (24: younger
  unreferenced files are kept; below 1 the orphan task fails, as the DAG never forces it):
  ``lakeops_maintenance``.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CONSUMER_ID", "DAG_DEFAULTS", "DagSettings", "timed_schedule"]

#: the Paimon consumer (``<table>/consumer/consumer-<id>``) in which the watchers of
#: ``lakeops_lookup_flush_on_commit`` keep their place, so a triggerer restart neither loses nor
#: repeats a commit (see :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger`)
CONSUMER_ID = "airflow-lakeops-lookup-flush-on-commit"

#: what every lakeops DAG shares: no backfill (``catchup=False``), one run at a time, the
#: ``lakeops`` tag. No ``start_date``: a scheduled DAG's first run is at its next scheduled time
#: after it is unpaused (with a start date in the past, Airflow would start one at once for the
#: latest past tick); after a pause, Airflow runs the latest missed tick once, never a backfill.
DAG_DEFAULTS: dict[str, object] = {
    "catchup": False,
    "max_active_runs": 1,
    "tags": ["lakeops"],
}


def timed_schedule(expression: str | None) -> Any:
    """The DAG ``schedule`` for a cron expression or preset (``@daily``, ``0 3 * * *``): a
    :class:`~airflow.sdk.CronTriggerTimetable` in UTC whose first run is the next tick after the
    DAG is unpaused, never a past one. (Airflow's own default, for a DAG without a start date,
    runs the latest past tick at once when it is less than a tenth of the period old, so a daily
    DAG unpaused at 00:30 would compact at once.) ``None`` and ``@once``/``@continuous`` pass
    through unchanged."""
    if expression is None or expression in ("@once", "@continuous"):
        return expression
    from airflow.sdk import CronTriggerTimetable

    return CronTriggerTimetable(expression, timezone="UTC", run_immediately=dt.timedelta(0))


def _schedule(value: str | None, default: str) -> str | None:
    value = (value if value is not None else default).strip()
    return None if value.lower() in ("", "none", "off") else value


def _tables(value: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in value.split(",") if t.strip())


@dataclass(frozen=True)
class DagSettings:
    """The DAGs' configuration (see the module docstring for the variables)."""

    conn_id: str = "lakeops_default"
    tables: tuple[str, ...] = ()
    ingest_schedule: str | None = None
    ingest_source: str = ""
    ingest_table: str = ""
    ingest_format: str = "parquet"
    spark_submit: bool = True
    optimize_schedule: str | None = "@daily"
    compact_engine: str = "local"
    lookup_flush_cron: str = "*/10 * * * *"
    lookup_tables: tuple[str, ...] = ()
    watched_lookup_tables: tuple[str, ...] = ()
    watch_poll_seconds: float = 30.0
    maintenance_schedule: str | None = "@daily"
    orphan_older_than_hours: float = 24.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DagSettings:
        e = os.environ if env is None else env
        return cls(
            conn_id=e.get("LAKEOPS_CONN_ID", "lakeops_default"),
            tables=_tables(e.get("LAKEOPS_TABLES", "")),
            ingest_schedule=_schedule(e.get("LAKEOPS_INGEST_SCHEDULE"), "none"),
            ingest_source=e.get("LAKEOPS_INGEST_SOURCE", ""),
            ingest_table=e.get("LAKEOPS_INGEST_TABLE", ""),
            ingest_format=e.get("LAKEOPS_INGEST_FORMAT", "parquet"),
            spark_submit=e.get("LAKEOPS_SPARK_SUBMIT", "true").lower() != "false",
            optimize_schedule=_schedule(e.get("LAKEOPS_OPTIMIZE_SCHEDULE"), "@daily"),
            compact_engine=e.get("LAKEOPS_COMPACT_ENGINE", "local"),
            lookup_flush_cron=e.get("LAKEOPS_LOOKUP_FLUSH_CRON", "*/10 * * * *"),
            lookup_tables=_tables(e.get("LAKEOPS_LOOKUP_TABLES", "")),
            watched_lookup_tables=_tables(e.get("LAKEOPS_WATCHED_LOOKUP_TABLES", "")),
            watch_poll_seconds=float(e.get("LAKEOPS_WATCH_POLL_SECONDS", "30")),
            maintenance_schedule=_schedule(e.get("LAKEOPS_MAINTENANCE_SCHEDULE"), "@daily"),
            orphan_older_than_hours=float(e.get("LAKEOPS_ORPHAN_OLDER_THAN_HOURS", "24")),
        )

    @property
    def served_tables(self) -> tuple[str, ...]:
        """Every table the settings name (``LAKEOPS_TABLES``, the ingest table, the lookup
        tables), each once, in that order."""
        named = (*self.tables, self.ingest_table, *self.lookup_tables, *self.watched_lookup_tables)
        return tuple(dict.fromkeys(t for t in named if t))

    def table_asset(self, identifier: str) -> Any:
        """The Asset of ``identifier`` as every DAG here names it: for a table of
        ``LAKEOPS_WATCHED_LOOKUP_TABLES`` with its ``AssetWatcher`` (a
        :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger` keeping its place in the Paimon
        consumer :data:`CONSUMER_ID`). Airflow keeps an Asset's watchers only while every parsed
        DAG that names the Asset gives the same ones, so no DAG may name a watched table's Asset
        without its watcher."""
        from airflow.sdk import Asset, AssetWatcher

        from lakeops.airflow.assets import table_asset
        from lakeops.airflow.triggers import LakeopsCommitTrigger

        asset = table_asset(self.conn_id, identifier)
        if identifier not in self.watched_lookup_tables:
            return asset
        trigger = LakeopsCommitTrigger(
            table=identifier,
            lakeops_conn_id=self.conn_id,
            commit_kinds=["APPEND", "OVERWRITE"],
            poll_interval=self.watch_poll_seconds,
            consumer_id=CONSUMER_ID,
        )
        return Asset(
            uri=asset.uri,
            name=asset.name,
            watchers=[AssetWatcher(name=f"lakeops_commits_{identifier}", trigger=trigger)],
        )

    def served_assets(self) -> list[Any]:
        """The Assets of :attr:`served_tables` (:meth:`table_asset`), for the ``inlets`` of
        committing tasks, so that a parsed DAG registers them (see ``LAKEOPS_TABLES``)."""
        return [self.table_asset(t) for t in self.served_tables]
