"""How many buckets lakeops writes or compacts at once, and the pool that runs them.

The knob is the keyword-only ``parallelism`` argument of ``Table.new_write``, ``Table.write``,
``Table.compact`` and ``Table.flush_level0``. It is deliberately not a table option: how many
cores one process uses is a property of the machine and the job that runs the write, not of the
table (a table option would be stored in the schema and seen by every engine and every writer
of the table on every machine). Paimon's own parallelism settings (``sink.parallelism``,
``scan.parallelism`` …) are Flink settings that lakeops stores untouched and ignores.

Default (``None``): the cores this process may run on (``os.sched_getaffinity``, else
``os.cpu_count()``), capped by the number of buckets in play. Parallelism 1 runs everything
in the calling thread, in order.

Work runs on a thread pool: the heavy steps (sorting, merging, Parquet encoding and writing)
are pyarrow and numpy calls that release the GIL. Each unit of work is one (partition, bucket),
and every unit is a function of its own inputs, so the results do not depend on the
parallelism: they are returned in the order of the inputs.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ThreadPoolExecutor,
    wait,
)
from typing import TypeVar

from lakeops.errors import ConfigurationError

__all__ = [
    "IO_THREADS",
    "available_cores",
    "pool_for",
    "check_parallelism",
    "delete_files",
    "imap_ordered",
    "run_ordered",
    "workers_for",
]

IO_THREADS = 16
"""Default pool size for work that waits on storage (deleting files): the count
:mod:`lakeops.maintenance.check` checks files with, independent of the cores."""

T = TypeVar("T")
R = TypeVar("R")


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


def check_parallelism(parallelism: int | None) -> int | None:
    """``parallelism`` itself if it is None or a positive int; a ConfigurationError
    otherwise (raised before anything is written)."""
    if parallelism is None:
        return None
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ConfigurationError(
            f"parallelism must be a positive integer (or None for the cores available, "
            f"{available_cores()} here), got {parallelism!r}"
        )
    return parallelism


def workers_for(parallelism: int | None, units: int) -> int:
    """How many workers run ``units`` units of work: ``parallelism`` (default: the cores
    available), capped by ``units``, at least 1."""
    wanted = check_parallelism(parallelism) or available_cores()
    return max(min(wanted, units), 1)


def pool_for(parallelism: int | None) -> ThreadPoolExecutor | None:
    """A pool of ``parallelism`` threads (default: the cores available) for work that outlives
    one call, such as a writer's background compactions; None where that is one thread (the
    caller then runs the work itself, in order). The caller shuts it down."""
    workers = check_parallelism(parallelism) or available_cores()
    if workers == 1:
        return None
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakeops")


def run_ordered(
    work: Callable[[T], R],
    items: Sequence[T],
    parallelism: int | None,
    *,
    on_success: Callable[[T, R], None] | None = None,
    executor: Executor | None = None,
    on_done: Callable[[T], None] | None = None,
) -> list[R]:
    """``[work(item) for item in items]``, on up to ``parallelism`` threads — those of
    ``executor`` when one is given (it is not shut down), else a pool of this call's own.

    ``on_success(item, result)`` is called in the calling thread for every unit that finished
    without error, in the order of ``items`` — also when another unit failed, so the caller can
    record (and later delete) what the successful units wrote. When any unit fails, the units
    not yet started are cancelled, the running ones are waited for, and the first error (in the
    order of ``items``) is raised after ``on_success`` saw every successful unit.
    ``on_done(item)`` (for progress reports) is called in the calling thread as soon as a unit
    finishes without error, in the order units finish, while no unit has failed.
    """
    workers = workers_for(parallelism, len(items))
    if workers == 1:
        results: list[R] = []
        for item in items:
            result = work(item)
            if on_done is not None:
                on_done(item)
            if on_success is not None:
                on_success(item, result)
            results.append(result)
        return results
    if executor is not None:
        futures = _run_all(executor, work, items, on_done)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakeops") as pool:
            futures = _run_all(pool, work, items, on_done)
    error: BaseException | None = None
    results = []
    for item, future in zip(items, futures, strict=True):
        if future.cancelled():
            continue
        failure = future.exception()
        if failure is not None:
            error = error or failure
            continue
        result = future.result()
        if on_success is not None:
            on_success(item, result)
        results.append(result)
    if error is not None:
        raise error
    return results


def _run_all(
    executor: Executor,
    work: Callable[[T], R],
    items: Sequence[T],
    on_done: Callable[[T], None] | None = None,
) -> list[Future[R]]:
    """Submit every item and wait for all; on the first failure, cancel what has not
    started. ``on_done(item)`` is called in the calling thread as each unit finishes without
    error (in the order they finish), until a failure is seen."""
    futures: list[Future[R]] = [executor.submit(work, item) for item in items]
    index = {f: i for i, f in enumerate(futures)}
    pending: set[Future[R]] = set(futures)
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        failed = any(f.exception() is not None for f in done if not f.cancelled())
        if failed:
            for f in futures:
                f.cancel()
            break
        if on_done is not None:
            for f in sorted(done, key=index.__getitem__):
                on_done(items[index[f]])
    wait(futures)
    return futures


def imap_ordered(
    work: Callable[[T], R], items: Sequence[T], parallelism: int | None
) -> Iterator[R]:
    """``work(item)`` for every item, yielded in the order of ``items``, computed on up to
    ``parallelism`` threads — with at most twice as many units submitted ahead of the one the
    caller consumes, so at most that many results are held at once whatever the number of
    items (listings that fold thousands of manifests stay bounded in memory).

    The first error (in the order of ``items``) is raised where its result would have been
    yielded, after every earlier result; the units not yet started are cancelled and the
    running ones waited for. Parallelism 1 runs in the calling thread, in order."""
    workers = workers_for(parallelism, len(items))
    if workers == 1:
        for item in items:
            yield work(item)
        return
    remaining = iter(items)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakeops-io") as pool:
        pending: deque[Future[R]] = deque()
        try:
            for item in remaining:
                pending.append(pool.submit(work, item))
                if len(pending) >= 2 * workers:
                    break
            while pending:
                result = pending.popleft().result()
                for item in remaining:
                    pending.append(pool.submit(work, item))
                    break
                yield result
        finally:
            for future in pending:
                future.cancel()


def delete_files(
    delete: Callable[[str], None],
    files: Sequence[str],
    parallelism: int | None = None,
    on_deleted: Callable[[str], None] | None = None,
) -> None:
    """``delete(path)`` for every path of ``files``, on up to ``parallelism`` threads (default
    :data:`IO_THREADS`: deleting is waiting on storage, not computing). Every deletion is
    attempted or cancelled, and the first error (in the order of ``files``) is raised once the
    running ones finished — what ``delete`` itself suppresses (a missing file) stays
    suppressed. Parallelism 1 deletes in order in the calling thread. ``on_deleted(path)`` is
    called in the calling thread as each deletion finishes (progress reports)."""
    run_ordered(
        delete, files, IO_THREADS if parallelism is None else parallelism, on_done=on_deleted
    )
