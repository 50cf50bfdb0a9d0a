#!/usr/bin/env bash
# Set everything up and run the whole test suite in two lanes. First lint, format and types (a
# failure stops CI at once). Then the fast lane: the fast suite (the default selection in
# pyproject.toml) with a coverage total, whose failure stops CI too; beside it, from the start,
# the long tests of the Spark, Airflow, demo and contention suites in a process of their own; after the fast
# lane, the other long tests (slow, interop). The long selection is exactly what the default
# selection leaves out, so every test runs once.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --oracle
.venv/bin/ruff check lakeops tests benchmarks dags plugins
.venv/bin/ruff format --check lakeops tests benchmarks dags plugins
.venv/bin/mypy lakeops
if [ "$#" -gt 0 ]; then  # a selection of tests: one run
    exec .venv/bin/python -m pytest -q -m "" "$@"
fi
long="slow or interop or airflow or spark"  # the complement of addopts' default selection
tmp=$(mktemp -d /tmp/lakeops-tests-XXXXXX)
jvm=(tests/spark tests/airflow tests/test_demo.py tests/test_readme.py tests/store/test_consumers.py)
# The long tests that start JVMs and Airflow (Spark sessions, spark-submit, the demo, the
# README's Spark section and the Spark consumer test) run in their order in a process of their
# own, beside the rest: about as long as the fast lane and the other long suites after it. The
# interop suites keep one oracle process of each kind per lane (tests/interop/served.py),
# which took the other long suites from 28 to about 13 minutes; the many-writer contention
# suite then moved to them from this lane (measured: 34 minutes here, 29 for the other two).
.venv/bin/python -m pytest -q --durations=20 -m "$long" --basetemp "$tmp/jvm" "${jvm[@]}" >"$tmp/jvm.log" 2>&1 &
jvm_pid=$!
# Fast lane: the default marker selection, once, with coverage; a failure stops the run at once.
fast=0
.venv/bin/python -m pytest -q --basetemp "$tmp/fast" --cov=lakeops \
    --cov-report=term:skip-covered || fast=$?
if [ "$fast" -ne 0 ]; then
    kill "$jvm_pid" 2>/dev/null || true
    wait "$jvm_pid" 2>/dev/null || true
    rm -rf "$tmp"
    echo "exit code: fast lane $fast (the long lane was stopped)"
    exit "$fast"
fi
# Long lane, everything else: the slow, interop and race suites outside the JVM folders.
rest=0
.venv/bin/python -m pytest -q --durations=25 -m "$long" --basetemp "$tmp/rest" "${jvm[@]/#/--ignore=}" || rest=$?
jvm_rc=0
wait "$jvm_pid" || jvm_rc=$?
echo "=== Spark, Airflow, demo and contention suites ==="
cat "$tmp/jvm.log"
rm -rf "$tmp"
echo "exit codes: other long suites $rest, Spark/Airflow/demo/contention suites $jvm_rc"
[ "$rest" -eq 0 ] && [ "$jvm_rc" -eq 0 ]
