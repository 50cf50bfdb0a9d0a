#!/usr/bin/env bash
# Set everything up and run the whole test suite: fast, slow, interop, Airflow and Spark suites
# (`-m ""` lifts the default selection in pyproject.toml, which runs the fast suite only), in
# parallel processes (pytest-xdist).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --oracle
.venv/bin/ruff check lakeops tests benchmarks dags plugins
.venv/bin/mypy lakeops
# spread over the cores (two processes at least): the Spark, Airflow and demo suites run in
# one process in their order (tests/conftest.py groups them), the rest is dealt test by test
workers=$(( $(nproc) < 2 ? 2 : ($(nproc) > 4 ? 4 : $(nproc)) ))
.venv/bin/python -m pytest -q -m "" -n "$workers" --dist loadgroup "$@"
