"""The ordered window: the serial loop's items in its order, with a bounded number of items
produced ahead of the consumer, errors raised in order, and threads joined on an early stop."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lakeops.read.window import ordered_streams


@pytest.mark.parametrize(("window", "depth"), [(1, 2), (2, 1), (3, 2), (8, 3)])
def test_items_come_in_the_serial_order_with_a_bounded_lead(window: int, depth: int) -> None:
    units = list(range(12))
    lock = threading.Lock()
    produced = 0
    lead = 0

    def produce(unit: int) -> Iterator[tuple[int, int]]:
        nonlocal produced
        for i in range(unit % 5 + 1):
            with lock:
                produced += 1
            yield unit, i

    got = []
    for consumed, item in enumerate(ordered_streams(units, produce, window, depth), start=1):
        with lock:
            lead = max(lead, produced - consumed)
        got.append(item)
    assert got == [(u, i) for u in units for i in range(u % 5 + 1)]
    # every running unit holds at most `depth` queued items plus the one it is putting
    assert lead <= window * (depth + 1)


def test_the_first_error_in_unit_order_is_raised() -> None:
    def produce(unit: int) -> Iterator[int]:
        yield unit
        if unit in (2, 4):
            raise ValueError(f"unit {unit}")

    seen = []
    with pytest.raises(ValueError, match="unit 2"):
        for item in ordered_streams(list(range(6)), produce, 3):
            seen.append(item)
    assert seen == [0, 1, 2]


def test_an_early_stop_closes_every_running_stream() -> None:
    closed: list[int] = []
    lock = threading.Lock()

    def produce(unit: int) -> Iterator[int]:
        try:
            yield from range(1000)
        finally:
            with lock:
                closed.append(unit)

    before = threading.active_count()
    stream = ordered_streams(list(range(5)), produce, 3, 1)
    assert next(stream) == 0
    stream.close()
    assert sorted(closed) == [0, 1, 2]  # the three running units, none of the others
    assert threading.active_count() == before


def test_depth_zero_lets_a_later_unit_finish_before_the_first_is_consumed() -> None:
    """Unbounded queues (what a whole read uses): unit 1 yields all its items while unit 0,
    whose items the consumer waits for, is still running — with a bounded queue unit 1
    would block on its full queue and unit 0 would wait in vain."""
    later_done = threading.Event()

    def produce(unit: int) -> Iterator[tuple[int, int]]:
        if unit == 0:
            yield 0, 0
            if not later_done.wait(timeout=30):
                raise AssertionError("unit 1 did not finish ahead of unit 0")
            yield 0, 1
            return
        yield from ((1, i) for i in range(10))
        later_done.set()

    got = list(ordered_streams([0, 1], produce, window=2, depth=0))
    assert got == [(0, 0), (0, 1), *((1, i) for i in range(10))]
