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


_FORKS = """
import os, signal, sys, threading
import numpy as np
import pyarrow as pa
from lakeops import Catalog
Catalog(sys.argv[1])  # the pool lakeops chooses
pa.array(np.arange(3)).take(pa.array([0]))  # pyarrow's lazy imports done before any fork
stop = threading.Event()

def churn():
    while not stop.is_set():
        a = pa.array(np.arange(200_000))
        a.take(pa.array(np.arange(0, 200_000, 3)))

threads = [threading.Thread(target=churn, daemon=True) for _ in range(3)]
for t in threads:
    t.start()
failed = 0
for _ in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:  # allocate in the child while the parent's threads were allocating
        signal.alarm(30)  # a child stuck on an inherited allocator lock dies instead
        taken = pa.array(np.arange(1_000_000)).take(pa.array(np.arange(0, 1_000_000, 7)))
        os._exit(0 if len(taken) == 142_858 else 1)
    _, status = os.waitpid(pid, 0)
    failed += status != 0
stop.set()
print(pa.default_memory_pool().backend_name, failed)
"""


def test_a_forked_child_allocates_while_the_parent_allocates(tmp_path: Path) -> None:
    """Airflow's task runners and Spark's Python daemon fork processes that lakeops runs in:
    the pool lakeops chooses must let a child allocate although the parent's threads held
    its locks at the fork."""
    env = {k: v for k, v in os.environ.items() if k != POOL_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", _FORKS, str(tmp_path / "wh"), "40"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    pool, failed = done.stdout.split()
    assert failed == "0", f"{failed} of 40 forked children failed or hung ({pool})"
