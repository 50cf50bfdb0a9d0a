"""One local[2] SparkSession for the whole test run (``LAKEOPS_TEST_SPARK_MASTER`` runs the
same tests on another master, e.g. ``local-cluster[2,1,1024]``: executors in their own
processes)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import pyspark
    from pyspark.sql import SparkSession

    # pyspark-client (pulled by Airflow's Spark provider) can silently overwrite pyspark files
    assert pyspark.__version__.startswith("4."), f"unexpected pyspark {pyspark.__version__}"
    session = (
        SparkSession.builder.master(os.environ.get("LAKEOPS_TEST_SPARK_MASTER", "local[2]"))
        .appName("lakeops-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.pyspark.python", sys.executable)
        # Spark's session catalog (databases made by register_tables) outside the checkout
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .getOrCreate()
    )
    from lakeops.spark import register

    register(session)
    yield session
    session.stop()
