"""lakeops_lookup_flush: frequent level-0 flush of lookup tables (first-row,
``changelog-producer=lookup``, deletion vectors, ``force-lookup``), whose readers and lookups do
not see level 0 until it is flushed.

Runs on a short cron (``LAKEOPS_LOOKUP_FLUSH_CRON``) and, for the tables listed in
``LAKEOPS_LOOKUP_TABLES``, whenever one of them commits (their Assets). A run triggered by Assets
flushes only the tables that committed new data (the flush's own COMPACT commits do not count);
a timed run flushes every lookup table with level-0 files. One mapped task per table.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, AssetAny, AssetOrTimeSchedule, task

from lakeops.airflow.conditions import lookup_flush_plan
from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings, timed_schedule
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.operators import LakeopsFlushLevel0Operator

settings = DagSettings.from_env()
timetable = timed_schedule(settings.lookup_flush_cron)
assets = [settings.table_asset(t) for t in settings.lookup_tables]

with DAG(
    dag_id="lakeops_lookup_flush",
    schedule=AssetOrTimeSchedule(timetable=timetable, assets=AssetAny(*assets))
    if assets
    else timetable,
    **DAG_DEFAULTS,
    doc_md=__doc__,
):

    @task
    def plan(**context: Any) -> list[str]:
        """The lookup tables to flush in this run."""
        events = context.get("triggering_asset_events") or {}
        return lookup_flush_plan(LakeopsHook(settings.conn_id).get_catalog(), events)

    LakeopsFlushLevel0Operator.partial(
        task_id="flush_level0",
        lakeops_conn_id=settings.conn_id,
        map_index_template="{{ task.table }}",
        inlets=settings.served_assets(),  # registers the Assets of the tables it commits to
    ).expand(table=plan())
