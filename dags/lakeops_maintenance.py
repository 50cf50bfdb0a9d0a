"""lakeops_maintenance: partition expiry, snapshot expiry, then orphan-file cleanup.

Partition expiry runs for the tables that set ``partition.expiration-time`` (Paimon expires
partitions in its streaming sink's commits; lakeops' writes do not, so this task does): one
``OVERWRITE`` commit per table that deletes no file.

Expiry follows each table's own retention options (``snapshot.num-retained.min/max``,
``snapshot.time-retained``, ``changelog.*``); orphan cleanup deletes unreferenced files older than
``LAKEOPS_ORPHAN_OLDER_THAN_HOURS`` (default 24, as Paimon). Param ``tables`` narrows the run.

Scheduled ``LAKEOPS_MAINTENANCE_SCHEDULE`` (``@daily``, midnight UTC) with
``catchup=False``: the first run comes at the next scheduled time after the DAG is unpaused, none
for the past (after a pause, Airflow runs the latest missed day once); trigger it to run now.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow.sdk import DAG, Param, task

from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings, timed_schedule
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.operators import (
    LakeopsExpirePartitionsOperator,
    LakeopsExpireSnapshotsOperator,
    LakeopsRemoveOrphanFilesOperator,
)
from lakeops.options.rows_retention import PARTITION_EXPIRATION_TIME

settings = DagSettings.from_env()

with DAG(
    dag_id="lakeops_maintenance",
    schedule=timed_schedule(settings.maintenance_schedule),
    **DAG_DEFAULTS,
    doc_md=__doc__,
    params={"tables": Param([], type="array", description="database.table names; empty: all")},
):

    @task
    def tables(**context: Any) -> list[str]:
        return list(context["params"]["tables"]) or LakeopsHook(settings.conn_id).list_tables()

    @task
    def expiring_partitions(names: list[str]) -> list[str]:
        hook = LakeopsHook(settings.conn_id)
        return [
            name
            for name in names
            if PARTITION_EXPIRATION_TIME.is_set(hook.get_table(name).schema.options)
        ]

    names = tables()
    partitions = LakeopsExpirePartitionsOperator.partial(
        task_id="expire_partitions",
        lakeops_conn_id=settings.conn_id,
        map_index_template="{{ task.table }}",
    ).expand(table=expiring_partitions(names))
    expire = LakeopsExpireSnapshotsOperator.partial(
        task_id="expire_snapshots",
        lakeops_conn_id=settings.conn_id,
        map_index_template="{{ task.table }}",
        trigger_rule="none_failed",  # no table expiring partitions: that task is skipped
    ).expand(table=names)
    partitions >> expire
    orphans = LakeopsRemoveOrphanFilesOperator.partial(
        task_id="remove_orphan_files",
        lakeops_conn_id=settings.conn_id,
        older_than=dt.timedelta(hours=settings.orphan_older_than_hours),
        map_index_template="{{ task.table }}",
    ).expand(table=names)
    expire >> orphans
