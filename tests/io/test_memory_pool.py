"""lakeops makes jemalloc pyarrow's default memory pool when it first opens storage, unless the
user chose one with ``ARROW_DEFAULT_MEMORY_POOL`` (:mod:`lakeops.io.memory_pool`). The pool is
process-wide, so each case runs in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops.io.memory_pool import POOL_VARIABLE

_CHILD = """
import sys
import pyarrow as pa
before = pa.default_memory_pool().backend_name
from lakeops import Catalog
Catalog(sys.argv[1])
print(before, pa.default_memory_pool().backend_name)
"""


def _pools(tmp_path: Path, chosen: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != POOL_VARIABLE}
    if chosen is not None:
        env[POOL_VARIABLE] = chosen
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "wh")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.split()


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _has_jemalloc(), reason="this pyarrow is built without jemalloc")
def test_opening_storage_switches_the_default_pool_to_jemalloc(tmp_path: Path) -> None:
    _before, after = _pools(tmp_path, None)  # before: mimalloc in pyarrow's wheels
    assert after == "jemalloc"


def test_a_pool_the_user_chose_is_kept(tmp_path: Path) -> None:
    assert _pools(tmp_path, "system") == ["system", "system"]
