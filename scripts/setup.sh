#!/usr/bin/env bash
# Create (or update) the project environment at .venv/ with lakeops and its dev tools.
#   bash scripts/setup.sh            core + dev extras
#   bash scripts/setup.sh --oracle   also .venv-oracle/ with pypaimon 2.1.0 (interop tests)
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
.venv/bin/python -m pip install --quiet -e ".[dev,spark]"

if [ "${1:-}" = "--oracle" ]; then
  # pypaimon pins old pyarrow/fsspec, so it lives in its own environment and is only ever
  # run in a subprocess by tests/interop/oracle.py; lakeops never imports it.
  if [ ! -x .venv-oracle/bin/python ]; then
    "$PY" -m venv .venv-oracle
  fi
  if ! .venv-oracle/bin/python -c 'import pypaimon' >/dev/null 2>&1; then
    .venv-oracle/bin/python -m pip install --quiet --upgrade pip
    .venv-oracle/bin/python -m pip install --quiet "pypaimon==2.1.0"
  fi
fi
