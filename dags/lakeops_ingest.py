"""lakeops_ingest: the scheduled Spark write job — one source into one table, one commit.

Manual runs take Params (``source``, ``table``, ``mode``, ``format``); scheduled runs use their
defaults, set by ``LAKEOPS_INGEST_*`` (see :mod:`lakeops.airflow.dag_settings`). Nothing here
depends on a logical date, so runs triggered by hand work too.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings
from lakeops.airflow.operators import LakeopsSparkWriteOperator

settings = DagSettings.from_env()

with DAG(
    dag_id="lakeops_ingest",
    schedule=settings.ingest_schedule,
    **DAG_DEFAULTS,
    doc_md=__doc__,
    params={
        "source": Param(settings.ingest_source, type="string", description="input path/URI"),
        "table": Param(settings.ingest_table, type="string", description="database.table"),
        "mode": Param("append", enum=["append", "overwrite"]),
        "format": Param(settings.ingest_format, enum=["parquet", "csv", "json"]),
    },
):
    LakeopsSparkWriteOperator(
        task_id="spark_write",
        lakeops_conn_id=settings.conn_id,
        source="{{ params.source }}",
        table="{{ params.table }}",
        mode="{{ params.mode }}",
        source_format="{{ params.format }}",
        submit=settings.spark_submit,
        inlets=settings.served_assets(),  # registers the Assets of the tables it writes
    )
