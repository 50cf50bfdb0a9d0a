"""The ordered pool (``lakeops.parallel``): results in input order at every parallelism, the
default capped by the units of work, and on a failure every finished unit reported to
``on_success`` before the first error (in input order) is raised."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from lakeops import parallel
from lakeops.errors import ConfigurationError


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_results_come_in_input_order(workers: int) -> None:
    seen: list[int] = []
    out = parallel.run_ordered(
        lambda n: n * n, list(range(20)), workers, on_success=lambda n, _: seen.append(n)
    )
    assert out == [n * n for n in range(20)]
    assert seen == list(range(20))


def test_the_default_is_the_cores_capped_by_the_units(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "available_cores", lambda: 6)
    assert parallel.workers_for(None, 4) == 4
    assert parallel.workers_for(None, 40) == 6
    assert parallel.workers_for(3, 40) == 3
    assert parallel.workers_for(None, 0) == 1


def test_a_failure_reports_every_finished_unit_then_raises_the_first_error() -> None:
    # units 2 and 5 fail; a barrier makes every unit start before any fails, so all run
    barrier = threading.Barrier(8)
    finished: list[int] = []

    def work(n: int) -> int:
        barrier.wait(timeout=10)
        if n in (2, 5):
            raise ValueError(f"unit {n}")
        return n

    with pytest.raises(ValueError, match="unit 2"):
        parallel.run_ordered(work, list(range(8)), 8, on_success=lambda n, _: finished.append(n))
    assert finished == [0, 1, 3, 4, 6, 7]


@pytest.mark.parametrize("bad", [0, -1, 2.0, False, "2"])
def test_parallelism_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="positive integer"):
        parallel.check_parallelism(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_imap_ordered_yields_in_input_order_with_bounded_read_ahead(workers: int) -> None:
    """Model: the results of ``work`` in input order; no unit starts more than ``2 * workers``
    units ahead of the one the caller consumes."""
    started: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> int:
        with lock:
            started.append(n)
        return n * n

    consumed = 0
    for i, result in enumerate(parallel.imap_ordered(work, list(range(50)), workers)):
        assert result == i * i
        with lock:
            assert max(started) < i + 2 * workers + 1
        consumed += 1
    assert consumed == 50 and sorted(started) == list(range(50))


def test_imap_ordered_raises_the_first_error_after_the_earlier_results() -> None:
    def work(n: int) -> int:
        if n in (5, 9):
            raise ValueError(f"unit {n}")
        return n

    got: list[int] = []
    with pytest.raises(ValueError, match="unit 5"):
        for n in parallel.imap_ordered(work, list(range(30)), 4):
            got.append(n)
    assert got == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("workers", [1, 2])
def test_on_done_reports_each_unit_as_it_finishes_in_the_calling_thread(workers: int) -> None:
    # with a pool, unit 1 finishes only after on_done saw unit 0: progress is live, not
    # reported when everything is over
    reported = threading.Event()
    done: list[tuple[int, bool]] = []
    caller = threading.current_thread()

    def work(n: int) -> int:
        if n == 1 and workers > 1 and not reported.wait(timeout=10):
            raise AssertionError("unit 0 was not reported while unit 1 ran")
        return n

    def on_done(n: int) -> None:
        done.append((n, threading.current_thread() is caller))
        reported.set()

    assert parallel.run_ordered(work, [0, 1, 2], workers, on_done=on_done) == [0, 1, 2]
    assert sorted(done) == [(0, True), (1, True), (2, True)]
    assert done[0] == (0, True)


def test_on_done_stops_at_a_failure() -> None:
    done: list[int] = []

    def work(n: int) -> int:
        if n == 0:
            raise ValueError("unit 0")
        return n

    with pytest.raises(ValueError, match="unit 0"):
        parallel.run_ordered(work, [0, 1], 1, on_done=done.append)
    assert done == []


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_many_units_packed_by_cost_come_back_in_input_order_each_run_once(workers: int) -> None:
    """Model: ``[work(n) for n in items]``; every unit runs exactly once, in a pool thread,
    with thousands of units packed into few tasks by their cost (a few costly units)."""
    items = list(range(3000))
    runs: dict[int, int] = {}
    lock = threading.Lock()

    def work(n: int) -> int:
        with lock:
            runs[n] = runs.get(n, 0) + 1
        return 3 * n + 1

    seen: list[int] = []
    done: list[int] = []
    out = parallel.run_ordered(
        work,
        items,
        workers,
        on_success=lambda n, r: seen.append(n),
        on_done=done.append,
        cost=lambda n: 500.0 if n % 997 == 0 else 1.0,
    )
    assert out == [3 * n + 1 for n in items]
    assert seen == items and sorted(done) == items
    assert runs == {n: 1 for n in items}


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_task_groups_cover_every_unit_once_in_order(workers: int) -> None:
    costs = [float((i * 7919) % 13 + 1) for i in range(1000)]
    costs[500] = 10_000.0  # costlier than a task's share: a task of its own
    groups = parallel.task_groups(costs, len(costs), workers)
    assert [i for g in groups for i in g] == list(range(len(costs)))
    assert all(len(g) > 0 for g in groups)
    assert any(list(g) == [500] for g in groups)
    assert len(groups) <= workers * parallel.TASKS_PER_WORKER + 2
    # without costs (or with few units), one task per unit
    assert parallel.task_groups(None, 50, workers) == [range(i, i + 1) for i in range(50)]
    few = workers * parallel.TASKS_PER_WORKER
    assert len(parallel.task_groups([1.0] * few, few, workers)) == few


def test_a_failure_in_a_packed_task_skips_its_later_units_and_reports_the_rest() -> None:
    """Model: every unit before the failing one in its task ran and is reported to
    ``on_success`` (in input order); units of that task after it never run; the error is
    the first one in input order."""
    ran: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> int:
        with lock:
            ran.append(n)
        if n == 1500:
            raise ValueError(f"unit {n}")
        return n

    finished: list[int] = []
    with pytest.raises(ValueError, match="unit 1500"):
        parallel.run_ordered(
            work, list(range(3000)), 2, on_success=lambda n, _: finished.append(n), cost=lambda n: 1
        )
    groups = parallel.task_groups([1.0] * 3000, 3000, 2)
    failing = next(g for g in groups if 1500 in g)
    assert all(n not in ran for n in failing if n > 1500)
    assert all(n in ran for n in failing if n < 1500)
    assert finished == sorted(n for n in ran if n != 1500)


def test_waiting_is_linear_in_the_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calling thread reads each unit's report once: it never waits over the pending
    futures again at every completion (the old loop did: quadratic in the units)."""
    waits: list[int] = []
    real = parallel.wait

    def counted(*args: Any, **kwargs: Any) -> Any:
        waits.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "wait", counted)
    out = parallel.run_ordered(lambda n: n, list(range(20_000)), 4)
    assert out == list(range(20_000))
    assert waits == []


def test_task_batch_runs_units_in_few_tasks_with_executor_semantics() -> None:
    """Model: each unit's future holds its result or its exception, a unit cancelled before
    the dispatch never runs, and 2,000 units go to the pool as at most
    ``workers * TASKS_PER_WORKER`` tasks."""
    submitted: list[object] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    ran: list[int] = []

    def unit(n: int) -> int:
        ran.append(n)
        if n == 7:
            raise ValueError("unit 7")
        return n * n

    with Counting(max_workers=2) as pool:
        batch = parallel.TaskBatch(pool, 2)
        futures = [batch.submit(lambda n=n: unit(n)) for n in range(2000)]
        assert not ran  # nothing starts before the dispatch
        assert futures[9].cancel()
        batch.dispatch()
        for n, f in enumerate(futures):
            if n == 9:
                assert f.cancelled()
            elif n == 7:
                with pytest.raises(ValueError, match="unit 7"):
                    f.result(timeout=60)
            else:
                assert f.result(timeout=60) == n * n
    assert 9 not in ran and sorted(ran) == [n for n in range(2000) if n != 9]
    assert len(submitted) <= 2 * parallel.TASKS_PER_WORKER


def test_task_batch_without_an_executor_runs_in_the_calling_thread_in_order() -> None:
    caller = threading.current_thread()
    ran: list[tuple[int, bool]] = []
    batch = parallel.TaskBatch(None, 1)
    futures = [
        batch.submit(lambda n=n: ran.append((n, threading.current_thread() is caller)))
        for n in range(5)
    ]
    batch.dispatch()
    assert ran == [(n, True) for n in range(5)]
    assert all(f.done() for f in futures)


def test_task_batch_units_of_a_shut_down_pool_are_cancelled() -> None:
    pool = ThreadPoolExecutor(max_workers=1)
    pool.shutdown()
    batch = parallel.TaskBatch(pool, 1)
    future = batch.submit(lambda: 1)
    batch.dispatch()
    with pytest.raises(RuntimeError):
        future.result(timeout=10)
