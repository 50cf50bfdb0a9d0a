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
parallelism: they are returned in the order of the inputs. Where thousands of small units meet
(a write to thousands of partitions), consecutive units are packed into a few pool tasks per
worker (:func:`run_ordered`'s ``cost``, :class:`TaskBatch`), and waiting for them costs one
queue read per unit.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from lakeops.errors import ConfigurationError

__all__ = [
    "IO_THREADS",
    "available_cores",
    "pool_for",
    "check_parallelism",
    "delete_files",
    "imap_ordered",
    "run_ordered",
    "task_groups",
    "TASKS_PER_WORKER",
    "TaskBatch",
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
    cost: Callable[[T], float] | None = None,
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

    ``cost(item)`` (optional: the relative cost of a unit, e.g. its bytes plus a fixed
    per-unit overhead) packs consecutive units into fewer pool tasks of about equal cost,
    :data:`TASKS_PER_WORKER` per worker (a unit costlier than that share runs alone), so
    thousands of small units do not pay a pool task each; a task runs its units one after
    another, in input order. Without it every unit is a task of its own. Either way the
    results, their order and the failure semantics above are the same; a unit of a task that
    has not reached it when another unit fails counts as not started (cancelled).

    Waiting is linear in the number of units: every unit reports its outcome once, to a queue
    the calling thread drains (no rescan of the units still pending).
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
    groups = task_groups([cost(item) for item in items] if cost else None, len(items), workers)
    if executor is not None:
        outcomes = _run_all(executor, work, items, groups, on_done)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lakeops") as pool:
            outcomes = _run_all(pool, work, items, groups, on_done)
    error: BaseException | None = None
    results = []
    for item, outcome in zip(items, outcomes, strict=True):
        if outcome is _CANCELLED:
            continue
        if isinstance(outcome, _Failed):
            error = error or outcome.error
            continue
        if on_success is not None:
            on_success(item, outcome)
        results.append(outcome)
    if error is not None:
        raise error
    return results


TASKS_PER_WORKER = 8
"""How many pool tasks per worker :func:`run_ordered` packs units into when it is given their
cost: enough for the workers to balance uneven estimates, few enough that the per-task cost
of the pool (a future, a lock, a thread wake-up) stays negligible next to the units."""


def task_groups(costs: Sequence[float] | None, units: int, workers: int) -> list[range]:
    """The pool tasks of ``units`` units: consecutive ranges of unit indexes covering every
    unit once, in order. Without ``costs`` one range per unit; with them, ranges of about
    ``sum(costs) / (workers * TASKS_PER_WORKER)`` cost each — a range is closed as soon as it
    reaches that share, and a unit costing at least the share is a range of its own — so no
    more than about ``workers * TASKS_PER_WORKER`` ranges (plus one per such costly unit)
    come out."""
    if costs is None or units <= workers * TASKS_PER_WORKER:
        return [range(i, i + 1) for i in range(units)]
    if len(costs) != units:
        raise ValueError(f"{len(costs)} costs for {units} units")
    share = sum(costs) / (workers * TASKS_PER_WORKER)
    groups: list[range] = []
    start, filled = 0, 0.0
    for i, c in enumerate(costs):
        if c >= share and i > start:  # a costly unit: a task of its own
            groups.append(range(start, i))
            start, filled = i, 0.0
        filled += c
        if filled >= share:
            groups.append(range(start, i + 1))
            start, filled = i + 1, 0.0
    if start < units:
        groups.append(range(start, units))
    return groups


class _Failed:
    """The outcome of a unit that raised ``error``."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


#: the outcome of a unit that never ran (cancelled, or skipped after another unit failed)
_CANCELLED: Any = object()


def _run_all(
    executor: Executor,
    work: Callable[[T], R],
    items: Sequence[T],
    groups: Sequence[range],
    on_done: Callable[[T], None] | None = None,
) -> list[Any]:
    """Run every unit (one pool task per range of ``groups``) and wait for all; the outcome of
    each unit, in the order of ``items``: its result, a :class:`_Failed`, or
    :data:`_CANCELLED`.

    Every unit reports its outcome exactly once to a queue the calling thread drains — a
    task reports each of its units as it finishes them, a task cancelled before it started
    reports all of its units as cancelled (from its future's done callback) — so waiting costs
    one queue read per unit. On the first failure (or an interrupt of the calling thread) the
    tasks not yet started are cancelled and the running ones skip the units they have not
    reached; ``on_done(item)`` is called in the calling thread as each unit finishes without
    error (in the order they finish), until a failure is seen."""
    outcomes: list[Any] = [_CANCELLED] * len(items)
    reports: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def run(group: range) -> None:
        for i in group:
            if stop.is_set():
                reports.put((i, _CANCELLED))
                continue
            try:
                outcome: Any = work(items[i])
            except BaseException as failure:  # reported; raised by the calling thread
                outcome = _Failed(failure)
                stop.set()  # this task's later units, and every task's, are skipped
            reports.put((i, outcome))

    def report_cancelled(group: range, future: Future[None]) -> None:
        if future.cancelled():
            for i in group:
                reports.put((i, _CANCELLED))

    futures: list[Future[None]] = []
    try:
        for group in groups:
            future = executor.submit(run, group)
            future.add_done_callback(functools.partial(report_cancelled, group))
            futures.append(future)
        failed = False
        for _ in range(len(items)):
            i, outcome = reports.get()
            outcomes[i] = outcome
            if failed or outcome is _CANCELLED:
                continue
            if isinstance(outcome, _Failed):
                failed = True
                _stop(stop, futures)
            elif on_done is not None:
                on_done(items[i])
    except BaseException:
        _stop(stop, futures)
        wait(futures)
        raise
    return outcomes


def _stop(stop: threading.Event, futures: Sequence[Future[None]]) -> None:
    """Make running tasks skip their remaining units and cancel those not started."""
    stop.set()
    for future in futures:
        future.cancel()


class TaskBatch:
    """Units of work submitted one by one and started together, packed into few pool tasks.

    :meth:`submit` returns a :class:`~concurrent.futures.Future` at once without starting
    anything; :meth:`dispatch` then starts every unit submitted since, packed into consecutive
    groups of about equal count (:func:`task_groups`, :data:`TASKS_PER_WORKER` per worker) on
    ``executor``, each group running its units one after another in submission order. Each
    unit's future behaves as an executor's: cancelled while its group has not reached it
    (its group then skips it), done with its result or exception once it ran. Without an
    executor (parallelism 1) :meth:`dispatch` runs every unit in the calling thread, in order.

    What it saves: one pool task (a submission, a queue hand-off, a thread wake-up) per unit
    when thousands of units each do little — a writer's per-bucket background compactions
    after a flush to thousands of (partition, bucket) pairs, most of which find nothing to do.
    """

    def __init__(self, executor: Executor | None, workers: int) -> None:
        self.executor = executor
        self.workers = max(workers, 1)
        self._units: list[tuple[Future[Any], Callable[[], Any]]] = []

    def submit(self, fn: Callable[[], R]) -> Future[R]:
        """A future of ``fn()``, which starts at the next :meth:`dispatch`."""
        future: Future[R] = Future()
        self._units.append((future, fn))
        return future

    def dispatch(self) -> None:
        """Start every unit submitted since the last dispatch (see the class docstring)."""
        units, self._units = self._units, []
        if not units:
            return
        if self.executor is None:
            _run_units(units)
            return
        for group in task_groups([1.0] * len(units), len(units), self.workers):
            chunk = units[group.start : group.stop]
            try:
                task = self.executor.submit(_run_units, chunk)
            except BaseException as failure:  # a pool shut down: the units cannot run
                for future, _ in chunk:
                    if future.set_running_or_notify_cancel():
                        future.set_exception(failure)
                continue
            task.add_done_callback(functools.partial(_cancel_units, chunk))


def _cancel_units(
    units: Sequence[tuple[Future[Any], Callable[[], Any]]], task: Future[None]
) -> None:
    """A group's task was cancelled before it started (its pool was shut down): so are its
    units."""
    if task.cancelled():
        for future, _ in units:
            future.cancel()


def _run_units(units: Sequence[tuple[Future[Any], Callable[[], Any]]]) -> None:
    """Run each unit whose future was not cancelled, setting its result or exception."""
    for future, fn in units:
        if not future.set_running_or_notify_cancel():
            continue
        try:
            result = fn()
        except BaseException as failure:  # the unit's outcome, raised by its future
            future.set_exception(failure)
        else:
            future.set_result(result)


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
