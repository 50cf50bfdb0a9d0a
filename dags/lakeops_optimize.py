"""lakeops_optimize: periodic optimisation compaction over the warehouse's tables.

``plan`` finds every (table, partition) whose buckets hold more than ``max_sorted_runs`` sorted
runs — for an append table, the partitions where a full compaction would rewrite small files —
each becomes one mapped ``compact`` task (full compaction: one sorted run per bucket; an append
table's small files rewritten), in the worker or on Spark (``LAKEOPS_COMPACT_ENGINE``).
Healthy tables and partitions get no task at all. Params: ``tables`` (default: every table in
the warehouse), ``max_sorted_runs`` (default 1); ``plan`` logs one line per table: chosen
or skipped, and why.

Scheduled ``LAKEOPS_OPTIMIZE_SCHEDULE`` (``@daily``, midnight UTC) with
``catchup=False``: the first run comes at the next scheduled time after the DAG is unpaused, none
for the past (after a pause, Airflow runs the latest missed day once); trigger it to run now.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import DAG, Param, task

from lakeops.airflow.conditions import optimize_units
from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings, timed_schedule
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.operators import LakeopsCompactOperator

settings = DagSettings.from_env()

with DAG(
    dag_id="lakeops_optimize",
    schedule=timed_schedule(settings.optimize_schedule),
    **DAG_DEFAULTS,
    doc_md=__doc__,
    params={
        "tables": Param([], type="array", description="database.table names; empty: all"),
        "max_sorted_runs": Param(1, type="integer", minimum=1),
    },
):

    @task
    def plan(**context: Any) -> list[dict[str, Any]]:
        """(table, partition) units that need compacting."""
        hook = LakeopsHook(settings.conn_id)
        tables = context["params"]["tables"] or hook.list_tables()
        return optimize_units(
            hook.get_catalog(),
            tables,
            max_sorted_runs=context["params"]["max_sorted_runs"],
            log=logging.getLogger("lakeops.optimize.plan").info,  # one line per table
        )

    LakeopsCompactOperator.partial(
        task_id="compact",
        lakeops_conn_id=settings.conn_id,
        full=True,
        engine=settings.compact_engine,  # type: ignore[arg-type]
        map_index_template="{{ task.table }} {{ task.partitions or '' }}",
        inlets=settings.served_assets(),  # registers the Assets of the tables it commits to
    ).expand_kwargs(plan())
