#!/usr/bin/env bash
# Set everything up and run the whole test suite in two lanes. The fast lane first: lint, format,
# types and the fast suite (the default selection in pyproject.toml) with a coverage total; a
# failure there stops CI at once. Then the long lane: the slow, interop, Airflow and Spark suites
# (exactly the tests the default selection leaves out), in two processes side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --oracle
.venv/bin/ruff check lakeops tests benchmarks dags plugins
.venv/bin/ruff format --check lakeops tests benchmarks dags plugins
.venv/bin/mypy lakeops
if [ "$#" -gt 0 ]; then  # a selection of tests: one run
    exec .venv/bin/python -m pytest -q -m "" "$@"
fi
# Fast lane: the default marker selection, once, with coverage.
.venv/bin/python -m pytest -q --cov=lakeops --cov-report=term:skip-covered
long="slow or interop or airflow or spark"  # the complement of addopts' default selection
# Long lane: two runs side by side, each in its own process and temporary folder: the suites
# that start JVMs and Airflow (Spark sessions, spark-submit, the demo), in their order, and everything else.
tmp=$(mktemp -d /tmp/lakeops-tests-XXXXXX)
jvm=(tests/spark tests/airflow tests/test_demo.py)
.venv/bin/python -m pytest -q -m "$long" --basetemp "$tmp/jvm" "${jvm[@]}" >"$tmp/jvm.log" 2>&1 &
jvm_pid=$!
rest=0
.venv/bin/python -m pytest -q -m "$long" --basetemp "$tmp/rest" "${jvm[@]/#/--ignore=}" || rest=$?
jvm_rc=0
wait "$jvm_pid" || jvm_rc=$?
echo "=== Spark, Airflow and demo suites ==="
cat "$tmp/jvm.log"
rm -rf "$tmp"
echo "exit codes: other suites $rest, Spark/Airflow/demo suites $jvm_rc"
[ "$rest" -eq 0 ] && [ "$jvm_rc" -eq 0 ]
