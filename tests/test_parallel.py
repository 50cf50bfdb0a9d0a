"""The ordered pool (``lakeops.parallel``): results in input order at every parallelism, the
default capped by the units of work, and on a failure every finished unit reported to
``on_success`` before the first error (in input order) is raised."""

from __future__ import annotations

import threading

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
