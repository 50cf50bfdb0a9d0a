"""The Arrow memory pool lakeops' work allocates from.

pyarrow allocates every buffer from its default memory pool, mimalloc in pyarrow's wheels. On
lakeops' work — large column buffers made, sorted, taken and freed a section or a file at a
time — jemalloc, which pyarrow's Linux and macOS wheels ship as well, holds less and varies
less: measured side by side (``benchmarks/runs_read.md``), a merged read of 4M rows written
took 0.25-0.27 s and peaked at 401-411 MiB (mimalloc: 0.27-0.49 s, 436-480 MiB), 8M rows
405-417 MiB (mimalloc: 462-492 MiB); a full compaction of 4M keys 0.67 s and 397 MiB
(mimalloc: 0.83 s, 437 MiB); a 4M-row insert 1.43-1.46 s of CPU every time (mimalloc:
1.25-2.15 s: its best is faster, its median is not) — ``benchmarks/README.md``.

So the first time lakeops opens storage (:class:`lakeops.io.file_io.FileIO`) it makes
jemalloc pyarrow's default pool for the process — unless the user chose a pool, by the
``ARROW_DEFAULT_MEMORY_POOL`` environment variable pyarrow itself reads (set it, to
``mimalloc`` say, to keep pyarrow's choice) — and only where pyarrow was built with it. Buffers
allocated before stay with the pool that made them (every buffer frees into its own pool), so
the switch is safe at any time; it changes speed and memory, never a result. What pyarrow made
before the switch keeps the old pool: its local file system's reads among them, which is why
:class:`lakeops.io.data_formats.ParquetFormat` opens local files with the current pool. Setting
``ARROW_DEFAULT_MEMORY_POOL=jemalloc`` before the process starts moves the rest too (the 8M
read above: 384-390 MiB). Processes forked while threads allocate (Airflow's task runners,
Spark's Python daemon) allocate from it safely (``tests/io/test_memory_pool.py``).
"""

from __future__ import annotations

import contextlib
import os

import pyarrow as pa

__all__ = ["POOL_VARIABLE", "use_lakeops_pool"]

#: pyarrow's own environment variable for its default memory pool
POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"

_chosen = False


def use_lakeops_pool() -> str:
    """Make jemalloc pyarrow's default memory pool, once per process, unless the user chose a
    pool (``ARROW_DEFAULT_MEMORY_POOL``) or pyarrow lacks jemalloc. Returns the name of the
    default pool afterwards."""
    global _chosen
    if not _chosen:
        _chosen = True
        if not os.environ.get(POOL_VARIABLE):
            # a pyarrow built without jemalloc raises NotImplementedError: keep its pool
            with contextlib.suppress(NotImplementedError):
                pa.set_memory_pool(pa.jemalloc_memory_pool())
    name: str = pa.default_memory_pool().backend_name
    return name
