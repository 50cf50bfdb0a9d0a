"""One local[2] SparkSession for the whole test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import pyspark
    from pyspark.sql import SparkSession

    # pyspark-client (pulled by Airflow's Spark provider) can silently overwrite pyspark files
    assert pyspark.__version__.startswith("4."), f"unexpected pyspark {pyspark.__version__}"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lakeops-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    from lakeops.spark import register

    register(session)
    yield session
    session.stop()
