#!/usr/bin/env bash
# Set everything up and run lakeops' main job on an embedded local warehouse.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m lakeops.demo "$@"
