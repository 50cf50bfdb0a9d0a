#!/usr/bin/env bash
# Set everything up and run the whole test suite: fast, slow, interop, Airflow and Spark suites
# (`-m ""` lifts the default selection in pyproject.toml, which runs the fast suite only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --oracle
.venv/bin/ruff check lakeops tests benchmarks dags plugins
.venv/bin/mypy lakeops
.venv/bin/python -m pytest -q -m "" "$@"
