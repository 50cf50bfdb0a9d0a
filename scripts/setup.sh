#!/usr/bin/env bash
# Create (or update) the project environment at .venv/ with lakeops and its dev tools.
#   bash scripts/setup.sh            core + dev extras
#   bash scripts/setup.sh --oracle   also .venv-oracle/ with pypaimon 2.1.0 (interop tests),
#                                    .venv-iceberg/ with pyiceberg 0.12 (Iceberg metadata tests),
#                                    the Java Paimon 0.9 jar in .cache/java/ (Java interop tests;
#                                    needs a JDK 17 on PATH) and Debian's chromium (the plugin
#                                    page's browser test)
set -euo pipefail
cd "$(dirname "$0")/.."

pick_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "lakeops needs Python 3.11 or newer on PATH" >&2; return 1
}

PY=$(pick_python)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# Airflow and PySpark share .venv: Airflow's Spark provider is deliberately NOT installed, since
# it pulls pyspark-client, which silently overwrites pyspark 4.3's files (the operators run
# spark-submit themselves). tests/airflow asserts the pyspark version and that it is absent.
# The OpenLineage provider (airflow extra) only adds packages of its own (openlineage-python,
# -integration-common, -sql): pyspark stays 4.3 and lineage is off until a transport is set.
.venv/bin/python -m pip install --quiet -e ".[dev,spark,airflow,cli,pandas,polars,duckdb]"

if [ "${1:-}" = "--oracle" ]; then
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ]; then
      (apt-get install -y -q chromium >/dev/null 2>&1 ||
        (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null)) ||
        echo "could not install chromium: the plugin browser test will fail" >&2
    else
      echo "chromium missing: install Debian's chromium for the plugin browser test" >&2
    fi
  fi
  # pypaimon pins old pyarrow/fsspec, so it lives in its own environment and is only ever
  # run in a subprocess by tests/interop/oracle.py; lakeops never imports it.
  if [ ! -x .venv-oracle/bin/python ]; then
    "$PY" -m venv .venv-oracle
  fi
  if ! .venv-oracle/bin/python -c 'import pypaimon' >/dev/null 2>&1; then
    .venv-oracle/bin/python -m pip install --quiet --upgrade pip
    .venv-oracle/bin/python -m pip install --quiet "pypaimon==2.1.0"
  fi
  # pyiceberg reads the Iceberg metadata lakeops writes (tests/interop/iceberg_oracle.py runs it
  # in a subprocess, like pypaimon)
  if [ ! -x .venv-iceberg/bin/python ]; then
    "$PY" -m venv .venv-iceberg
  fi
  if ! .venv-iceberg/bin/python -c 'import pyiceberg, snappy' >/dev/null 2>&1; then
    .venv-iceberg/bin/python -m pip install --quiet "pyiceberg[pyarrow,snappy]==0.12.0"
  fi
  # Java Paimon 0.9 (the oracle of tests/interop/test_java_interop.py): its bundled jar ships
  # inside the pypaimon 0.2.0 sdist; the Hadoop client jars come from pyspark's jars/.
  JAVA_CACHE=.cache/java
  BRIDGE_JAR=paimon-python-java-bridge-0.9.0.jar
  if [ ! -s "$JAVA_CACHE/$BRIDGE_JAR" ]; then
    mkdir -p "$JAVA_CACHE/download"
    .venv/bin/python -m pip download --quiet --no-binary :all: --no-deps "pypaimon==0.2.0" \
      -d "$JAVA_CACHE/download"
    tar -xzf "$JAVA_CACHE/download/pypaimon-0.2.0.tar.gz" -C "$JAVA_CACHE/download" \
      "pypaimon-0.2.0/deps/jars/$BRIDGE_JAR"
    mv "$JAVA_CACHE/download/pypaimon-0.2.0/deps/jars/$BRIDGE_JAR" "$JAVA_CACHE/$BRIDGE_JAR.tmp"
    mv "$JAVA_CACHE/$BRIDGE_JAR.tmp" "$JAVA_CACHE/$BRIDGE_JAR"
    rm -rf "$JAVA_CACHE/download"
  fi
  command -v javac >/dev/null 2>&1 ||
    echo "javac missing: install a JDK 17 (Debian: openjdk-17-jdk-headless) for the Java interop tests" >&2
fi
