"""A streaming query run as its own process by tests/spark/test_streaming.py (so a test can
SIGKILL it): parquet files from ``source`` (one file per micro-batch) into the lakeops table at
``table``, checkpointed at ``checkpoint``; processes what is there, then exits. The master is
``LAKEOPS_TEST_SPARK_MASTER`` (default ``local[2]``), as for the tests' own session."""

from __future__ import annotations

import os
import sys


def main(source: str, table: str, checkpoint: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from lakeops.spark import register

    spark = (
        SparkSession.builder.master(os.environ.get("LAKEOPS_TEST_SPARK_MASTER", "local[2]"))
        .appName("lakeops-stream-kill")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # a short-lived JVM: C1 only and the serial collector start faster on few cores
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    register(spark)
    query = (
        spark.readStream.schema("id long, v long")
        .option("maxFilesPerTrigger", "1")
        .parquet(source)
        .writeStream.format("lakeops")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
