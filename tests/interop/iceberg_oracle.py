"""Drive the pyiceberg oracle (``.venv-iceberg``, see ``scripts/setup.sh --oracle``) from tests
running in the main venv: pyiceberg runs in a subprocess executing ``pyiceberg_oracle.py``; its
rows come back as Parquet. Tests skip, naming the fix, when the environment is missing."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
SCRIPT: Path = Path(__file__).resolve().with_name("pyiceberg_oracle.py")
PYTHON: Path = Path(
    os.environ.get("LAKEOPS_ICEBERG_PYTHON", str(REPO_ROOT / ".venv-iceberg" / "bin" / "python"))
)


def require_pyiceberg() -> Path:
    """The pyiceberg interpreter; skips the test when the environment is missing."""
    if not PYTHON.exists():
        pytest.skip(
            "pyiceberg oracle venv missing: run `bash scripts/setup.sh --oracle` "
            "(creates .venv-iceberg with pyiceberg)"
        )
    return PYTHON


def iceberg_read(
    metadata_json: str | os.PathLike[str],
    row_filter: str | None = None,
    snapshot_id: int | None = None,
) -> tuple[pa.Table, dict[str, Any]]:
    """The rows pyiceberg reads from ``metadata_json`` (those ``row_filter`` keeps, in
    pyiceberg's expression syntax; of snapshot ``snapshot_id``, time travel, or the current
    one) and facts of its scan (snapshot ids, the data files planned, the partition
    fields)."""
    python = require_pyiceberg()
    with tempfile.TemporaryDirectory(prefix="lakeops-iceberg-") as tmp:
        out = Path(tmp) / "out.parquet"
        proc = subprocess.run(
            [
                str(python),
                str(SCRIPT),
                os.fspath(metadata_json),
                str(out),
                row_filter or "",
                *([str(snapshot_id)] if snapshot_id is not None else []),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"pyiceberg failed on {metadata_json}:\n{proc.stderr}")
        info = json.loads(Path(f"{out}.json").read_text())
        return pq.read_table(out), info
