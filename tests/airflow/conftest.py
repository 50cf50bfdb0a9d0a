"""Airflow 3 for the tests: its own AIRFLOW_HOME with a SQLite metadata DB, the repository's
``dags/`` and ``plugins/`` folders, and a ``lakeops_default`` connection per test.

Airflow reads its configuration when first imported, so the environment is set here, at import
time of this conftest, which pytest loads before the test modules of this folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="lakeops-airflow-"))
AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME}/airflow.db",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    "PYSPARK_PYTHON": sys.executable,
}
os.environ.update(AIRFLOW_ENV)


def airflow_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600, stderr: bool = False
) -> str:
    """Run the ``airflow`` command of this environment; its output (with ``stderr``: standard
    output then standard error), or a failure with it."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"airflow {' '.join(args)} failed:\n{result.stderr[-4000:]}"
    return result.stdout + (result.stderr if stderr else "")


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The migrated SQLite metadata database (once per test run)."""
    airflow_cli("db", "migrate")
    return AIRFLOW_HOME


def connection_json(warehouse: str | Path, **extra: object) -> str:
    return json.dumps({"conn_type": "lakeops", "host": str(warehouse), "extra": extra})


@pytest.fixture
def lakeops_conn(warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``lakeops_default`` pointing at this test's warehouse (an environment connection)."""
    monkeypatch.setenv("AIRFLOW_CONN_LAKEOPS_DEFAULT", connection_json(warehouse))
    yield "lakeops_default"
