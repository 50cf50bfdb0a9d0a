"""An ordered window of streams in flight: bounded memory, several cores.

:func:`ordered_streams` yields every item of ``produce(unit)`` for each unit, in the order of
the units and of each stream — what the serial loop yields — while up to ``window`` units run
on worker threads ahead of the one being consumed. Each running unit hands its items through a
queue of ``depth`` items and blocks when it is full, so at most ``window`` units are in memory
at once, each holding at most ``depth`` finished items plus the one it is working on, however
many units there are. The work is pyarrow calls that release the GIL.

The first error of a unit is raised when the consumer reaches that unit. When the consumer
stops early (closes the generator, or drops it), the running units stop after their current
item and every thread is joined before the generator returns. The threads are daemons: a
generator abandoned without being closed never keeps the interpreter from exiting.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["ordered_streams"]

T = TypeVar("T")
R = TypeVar("R")

_ITEM, _ERROR, _END = 0, 1, 2


def ordered_streams(
    units: Sequence[T],
    produce: Callable[[T], Iterator[R]],
    window: int,
    depth: int = 2,
) -> Iterator[R]:
    """``for u in units: yield from produce(u)``, with up to ``window`` units running ahead
    on threads (see the module docstring). ``window`` 1 runs in the calling thread."""
    if window <= 1 or len(units) <= 1:
        for unit in units:
            yield from produce(unit)
        return
    stop = threading.Event()

    def run(unit: T, out: queue.Queue[tuple[int, Any]]) -> None:
        try:
            stream = produce(unit)
            try:
                for item in stream:
                    out.put((_ITEM, item))
                    if stop.is_set():
                        break
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:  # handed to the consumer, raised there
            out.put((_ERROR, exc))
            return
        out.put((_END, None))

    pending: deque[tuple[queue.Queue[tuple[int, Any]], threading.Thread]] = deque()
    upcoming = iter(units)

    def start_next() -> None:
        for unit in upcoming:
            out: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=depth)
            worker = threading.Thread(
                target=run, args=(unit, out), name="lakeops-read", daemon=True
            )
            worker.start()
            pending.append((out, worker))
            return

    try:
        for _ in range(window):
            start_next()
        while pending:
            head, _ = pending[0]
            while True:
                tag, item = head.get()
                if tag == _ITEM:
                    yield item
                    continue
                pending.popleft()
                if tag == _ERROR:
                    raise item
                break
            start_next()
    finally:
        stop.set()
        for out, worker in pending:  # unblock the running units: each ends after one item
            while out.get()[0] == _ITEM:
                pass
            worker.join()
