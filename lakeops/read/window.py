"""An ordered window of streams in flight: bounded memory, several cores.

:func:`ordered_streams` yields every item of ``produce(unit)`` for each unit, in the order of
the units and of each stream — what the serial loop yields — while up to ``window`` units run
on worker threads ahead of the one being consumed. There are ``window`` worker threads (slots);
slot ``k`` runs units ``k, k + window, …`` in turn and hands their items through its own queue
of ``depth`` items, blocking when it is full, and the consumer reads the slots round-robin, a
whole unit at a time. So at most ``window`` units are in memory at once, each holding at most
``depth`` finished items plus the one it is working on, however many units there are; the
threads live as long as the stream (the allocator's per-thread caches are reused). The work is
pyarrow calls that release the GIL.

The first error of a unit is raised when the consumer reaches that unit. When the consumer
stops early (closes the generator, or drops it), the running units stop after their current
item and every thread is joined before the generator returns. The threads are daemons: a
generator abandoned without being closed never keeps the interpreter from exiting.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["ordered_streams"]

T = TypeVar("T")
R = TypeVar("R")

_ITEM, _ERROR, _END, _DONE = 0, 1, 2, 3


def ordered_streams(
    units: Sequence[T],
    produce: Callable[[T], Iterator[R]],
    window: int,
    depth: int = 2,
) -> Iterator[R]:
    """``for u in units: yield from produce(u)``, with up to ``window`` units running ahead
    on threads (see the module docstring). ``window`` 1 runs in the calling thread. ``depth``
    0 leaves the queues unbounded: for a consumer that keeps every item anyway."""
    if window <= 1 or len(units) <= 1:
        for unit in units:
            yield from produce(unit)
        return
    slots = min(window, len(units))
    stop = threading.Event()
    queues: list[queue.Queue[tuple[int, Any]]] = [queue.Queue(maxsize=depth) for _ in range(slots)]
    workers = [
        threading.Thread(
            target=_run_slot,
            args=(units, produce, queues[k], range(k, len(units), slots), stop),
            name="lakeops-read",
            daemon=True,
        )
        for k in range(slots)
    ]
    for worker in workers:
        worker.start()
    finished: set[int] = set()  # slots whose error the consumer took: nothing more comes
    try:
        for index in range(len(units)):
            slot = index % slots
            while True:
                tag, item = queues[slot].get()
                if tag == _ITEM:
                    yield item
                    continue
                if tag == _ERROR:
                    finished.add(slot)
                    raise item
                break  # this unit is done
    finally:
        stop.set()
        for slot, out in enumerate(queues):  # unblock the slots: each stops after one item
            if slot not in finished:
                while out.get()[0] in (_ITEM, _END):  # until _DONE or _ERROR
                    pass
        for worker in workers:
            worker.join()


def _run_slot(
    units: Sequence[T],
    produce: Callable[[T], Iterator[R]],
    out: queue.Queue[tuple[int, Any]],
    indexes: range,
    stop: threading.Event,
) -> None:
    """One slot's thread: the units at ``indexes`` in order, their items into ``out``, each
    unit closed by ``_END``, the slot by ``_DONE`` (or by the first error)."""
    for index in indexes:
        if stop.is_set():
            break
        try:
            _stream_into(out, produce(units[index]), stop)
        except BaseException as exc:  # handed to the consumer, raised there
            out.put((_ERROR, exc))
            return
        out.put((_END, None))
    out.put((_DONE, None))


def _stream_into(
    out: queue.Queue[tuple[int, Any]], stream: Iterator[R], stop: threading.Event
) -> None:
    """Every item of ``stream`` into ``out`` until the consumer stops; the stream is closed."""
    try:
        for item in stream:
            out.put((_ITEM, item))
            if stop.is_set():
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
