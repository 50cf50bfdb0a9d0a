"""Shared fixtures: a fresh local warehouse per test, and paths to the golden data kept in
``tests/data`` (copied from the design folder, so a clone needs nothing beside it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakeops import Catalog

REPO = Path(__file__).resolve().parents[1]
#: the golden warehouses and sample cases, kept in the repository (tests/data/examples)
SHARED = Path(__import__("os").environ.get("LAKEOPS_SHARED", REPO / "tests" / "data"))
GOLDEN = SHARED / "examples" / "golden"


@pytest.fixture(autouse=True, scope="session")
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point lookups' local lookup files (``$XDG_CACHE_HOME/lakeops/lookup``) go to a directory
    of the test session, not the user's cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


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
                f"golden warehouse {source} is missing (tests/data/examples; or set LAKEOPS_SHARED)"
            )
        target = tmp_path / name
        shutil.copytree(source, target)
        for p in target.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        target.chmod(0o755)
        return target

    return copy
