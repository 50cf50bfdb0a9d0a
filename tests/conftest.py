"""Shared fixtures: a fresh local warehouse per test, and paths to the shared golden data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lakeops import Catalog

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(__import__("os").environ.get("LAKEOPS_SHARED", REPO.parent / "shared"))
GOLDEN = SHARED / "examples" / "golden"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "wh"
    path.mkdir()
    return path


@pytest.fixture
def catalog(warehouse: Path) -> Catalog:
    cat = Catalog(str(warehouse))
    cat.create_database("db")
    return cat


@pytest.fixture
def golden_copy(tmp_path: Path):
    """Copy a golden warehouse ('pypaimon-wh' or 'java-compacted-wh') to a writable place."""

    def copy(name: str) -> Path:
        source = GOLDEN / name
        if not source.is_dir():
            raise FileNotFoundError(
                f"golden warehouse {source} is missing (shared/ not beside "
                "the repository? set LAKEOPS_SHARED)"
            )
        target = tmp_path / name
        shutil.copytree(source, target)
        for p in target.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        target.chmod(0o755)
        return target

    return copy
