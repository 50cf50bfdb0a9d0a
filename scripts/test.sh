#!/usr/bin/env bash
# Set everything up and run the whole test suite (slow and interop suites included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --oracle
.venv/bin/ruff check lakeops tests benchmarks dags plugins
.venv/bin/mypy lakeops
.venv/bin/python -m pytest -q "$@"
