"""Which Python interpreter a SparkSession's Python workers start: the one running lakeops,
when Spark runs on this machine and the user chose none.

PySpark fixes the workers' interpreter when its ``SparkContext`` starts — ``PYSPARK_PYTHON``
from the environment, else ``python3`` from ``PATH`` — and a ``python3`` outside the virtual
environment that runs lakeops cannot import lakeops (``ModuleNotFoundError`` in the worker at
the first read or write). The data source's registration (:func:`lakeops.spark.register`, which
every helper of :mod:`lakeops.spark` calls) therefore points the workers at
:data:`sys.executable`, before the data source and any lakeops UDF is handed to Spark.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["use_this_python"]


def use_this_python(spark: Any) -> str | None:
    """Point ``spark``'s Python workers at the interpreter running this code, unless the user
    chose one; return the interpreter the workers now start (None where Spark keeps it to
    itself, as Spark Connect does).

    The user's choice wins: the ``spark.pyspark.python`` setting (which Spark's documentation
    ranks above the environment, and which PySpark does not apply to a session started from a
    Python process itself), else ``PYSPARK_PYTHON``. Without either, a ``local`` or
    ``local-cluster`` master (workers on this machine) gets :data:`sys.executable`; any other
    master keeps Spark's default, since the executors of a cluster have their own
    environment, where this driver's interpreter path means nothing."""
    try:
        context = spark.sparkContext
        conf = context.getConf()
    except Exception:  # Spark Connect: no SparkContext on the client
        return None
    chosen = conf.get("spark.pyspark.python")
    if chosen:
        context.pythonExec = chosen
    elif not os.environ.get("PYSPARK_PYTHON") and str(context.master).startswith("local"):
        context.pythonExec = sys.executable
    return str(context.pythonExec)
