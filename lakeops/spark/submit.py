"""Run a lakeops Spark job (:mod:`lakeops.spark.jobs`) through ``spark-submit``.

The job file is this installed package's ``lakeops/spark/jobs.py``. Storage and catalog options
(credentials, lock DSNs) reach the job through the environment of the ``spark-submit`` process
(``LAKEOPS_STORAGE_OPTIONS`` / ``LAKEOPS_CATALOG_OPTIONS``), never its command line, so they do not
show in process listings, Spark's UI or task logs. ``spark-submit`` is taken from ``SPARK_HOME``,
else the installed ``pyspark`` package, else ``PATH``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lakeops.errors import ConfigurationError, JobError

__all__ = ["find_spark_home", "job_file", "spark_submit", "spark_submit_command"]


def job_file() -> str:
    """Path of the job entry point to hand to ``spark-submit``."""
    return str(Path(__file__).with_name("jobs.py"))


def find_spark_home() -> str:
    """``SPARK_HOME``, or the directory of the installed ``pyspark`` package."""
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    try:
        import pyspark
    except ImportError:
        submit = shutil.which("spark-submit")
        if submit is None:
            raise ConfigurationError(
                "spark-submit not found: install lakeops[spark] or set SPARK_HOME"
            ) from None
        return str(Path(submit).resolve().parent.parent)
    return str(Path(pyspark.__file__).parent)


def spark_submit_command(
    job: str,
    job_args: Sequence[str],
    *,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """The ``spark-submit`` argument list for ``job`` (``write``, ``compact``, ``flush``…)."""
    command = [
        str(Path(find_spark_home()) / "bin" / "spark-submit"),
        "--master",
        master,
        "--name",
        f"lakeops-{job}",
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
    ]
    for key, value in (conf or {}).items():
        command += ["--conf", f"{key}={value}"]
    if py_files:
        command += ["--py-files", ",".join(py_files)]
    return [*command, job_file(), job, *job_args]


def spark_submit(
    job: str,
    job_args: Sequence[str],
    *,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    python: str = sys.executable,
    log: Callable[[str], None] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Submit a job, stream its output lines to ``log``, and return its JSON summary (the last
    output line). Raises :class:`~lakeops.errors.JobError` with the tail of the output when it
    fails."""
    command = spark_submit_command(
        job, job_args, master=master, conf=conf, py_files=py_files, python=python
    )
    env = {
        **os.environ,
        "SPARK_HOME": find_spark_home(),
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "LAKEOPS_STORAGE_OPTIONS": json.dumps(dict(storage_options or {})),
        "LAKEOPS_CATALOG_OPTIONS": json.dumps(dict(catalog_options or {})),
    }
    tail: list[str] = []
    summary: dict[str, Any] | None = None
    with subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if log is not None:
                log(line)
            tail = [*tail[-39:], line]
            if line.startswith("{") and '"job"' in line:
                with contextlib.suppress(json.JSONDecodeError):
                    summary = json.loads(line)
        code = proc.wait(timeout=timeout)
    if code != 0 or summary is None:
        raise JobError(
            f"spark-submit {job} exited with code {code}"
            + (" without a summary line" if code == 0 else "")
            + ":\n"
            + "\n".join(tail[-20:])
        )
    return summary
