"""lakeops_lookup_flush_on_commit: event-driven level-0 flush of the lookup tables listed in
``LAKEOPS_WATCHED_LOOKUP_TABLES``.

Each table's Asset carries an ``AssetWatcher`` whose
:class:`~lakeops.airflow.triggers.LakeopsCommitTrigger` polls the table's latest snapshot id in
Airflow's triggerer (every ``LAKEOPS_WATCH_POLL_SECONDS``); a commit of new data (``APPEND`` or
``OVERWRITE``, by any writer: Spark, Flink, the CLI, Airflow) starts a run that flushes the tables
that committed. The flush's own ``COMPACT`` commits do not start it again. Each watcher keeps
its position in the table as the Paimon consumer ``airflow-lakeops-lookup-flush-on-commit``, so
commits made while the triggerer is down start one run when it is back, and none is repeated;
expiry keeps the snapshots the watcher has not read (set ``consumer.expiration-time`` on the
table to stop a watcher that is gone for good from holding them). With no table listed
the DAG runs only when triggered by hand (then it flushes every lookup table with level-0 files).
A table listed here and in ``LAKEOPS_LOOKUP_TABLES`` would be flushed by both DAGs: list it in
one of them.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, AssetAny, task

from lakeops.airflow.conditions import lookup_flush_plan
from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.operators import LakeopsFlushLevel0Operator

settings = DagSettings.from_env()

assets = [settings.table_asset(t) for t in settings.watched_lookup_tables]

with DAG(
    dag_id="lakeops_lookup_flush_on_commit",
    schedule=AssetAny(*assets) if assets else None,
    **DAG_DEFAULTS,
    doc_md=__doc__,
):

    @task
    def plan(**context: Any) -> list[str]:
        """The lookup tables to flush: those whose commits triggered the run."""
        events = context.get("triggering_asset_events") or {}
        return lookup_flush_plan(LakeopsHook(settings.conn_id).get_catalog(), events)

    LakeopsFlushLevel0Operator.partial(
        task_id="flush_level0",
        lakeops_conn_id=settings.conn_id,
        map_index_template="{{ task.table }}",
        inlets=settings.served_assets(),  # registers the Assets of the tables it commits to
    ).expand(table=plan())
