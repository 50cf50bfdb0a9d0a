"""lakeops_ingest: the Spark write job — one source into one table, one commit.

Runs when triggered (by hand, the REST API, ``airflow dags trigger -c``) with Params ``source``
(a file or a directory of files, local or a URI), ``table`` (``database.table``), ``mode`` and
``format`` (``parquet``, ``csv`` with a header line, ``json`` lines); values are parsed as the
table's column types. ``LAKEOPS_INGEST_SCHEDULE`` gives it a schedule, whose runs take the
``LAKEOPS_INGEST_*`` defaults (see :mod:`lakeops.airflow.dag_settings`). Nothing here depends
on a logical date.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from lakeops.airflow.dag_settings import DAG_DEFAULTS, DagSettings, timed_schedule
from lakeops.airflow.operators import LakeopsSparkWriteOperator

settings = DagSettings.from_env()

with DAG(
    dag_id="lakeops_ingest",
    schedule=timed_schedule(settings.ingest_schedule),
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
