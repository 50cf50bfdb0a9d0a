"""Waiting for a turn to commit: the pause between attempts and when a writer stops trying.

A commit that loses the race for the next snapshot tries again on the new latest one, as
Paimon's committer does. Paimon pauses before retry ``n`` (0-based) for its ceiling,
``commit.min-retry-wait`` doubled ``n`` times, at most ``commit.max-retry-wait``, plus a random
share of up to a fifth. lakeops draws each pause uniformly between ``commit.min-retry-wait`` and
that ceiling plus a fifth ("full jitter"): the same bounds, but writers that lost together are
spread over the whole range, and a writer that lost many times is not always the one that
waits longest while newcomers take the turns (with 8 and 32 processes appending on S3 the last
writer finished markedly sooner). The writer stops when

- ``commit.timeout`` (if set) has passed since its first attempt — the last pause is cut short
  so that one attempt is made at the deadline;
- ``commit.max-retries`` (if set) retries were made; or
- :data:`STALL_LIMIT` attempts in a row failed while the table's latest snapshot stayed the
  same: no other writer is winning, so waiting cannot help (the store refuses the publish, or
  the table's snapshot hints contradict each other) and the writer reports it instead of
  waiting for a timeout that may never come.

A lost race always means another commit was published, so with neither bound set a writer keeps
trying exactly as long as others keep committing before it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from lakeops.options.commit import CommitRetryOptions

__all__ = ["JITTER_SHARE", "STALL_LIMIT", "CommitRetry", "retry_wait_ms"]

#: the ceiling's extra share (Paimon's ``RetryWaiter`` adds up to 20 % to its pause)
JITTER_SHARE = 0.2
#: attempts in a row that may fail without the latest snapshot moving
STALL_LIMIT = 10
#: beyond this many doublings every pause is ``commit.max-retry-wait`` (keeps the numbers small)
_MAX_DOUBLINGS = 40


def retry_wait_ms(retry: int, min_wait_ms: int, max_wait_ms: int, jitter: float) -> float:
    """The pause in milliseconds before retry ``retry`` (0-based), ``jitter`` of the way
    (``jitter`` in [0, 1)) from ``min_wait_ms`` to the ceiling: ``min_wait_ms`` doubled
    ``retry`` times, at most ``max_wait_ms``, plus a fifth."""
    ceiling = min(min_wait_ms << min(retry, _MAX_DOUBLINGS), max_wait_ms) * (1.0 + JITTER_SHARE)
    return min_wait_ms + (ceiling - min_wait_ms) * jitter


def _duration(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


class CommitRetry:
    """The retries of one commit (or of one write run again): call :meth:`wait_turn` after
    each lost attempt; it pauses and returns True, or returns False when the writer must stop,
    with :attr:`verdict` saying why. ``clock`` (seconds, monotonic), ``sleep`` and ``jitter``
    (uniform in [0, 1)) are injectable for tests."""

    def __init__(
        self,
        options: CommitRetryOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.options = options
        self._clock = clock
        self._sleep = sleep
        self._jitter = jitter
        self._start = clock()
        #: retries made so far (attempts are one more)
        self.retries = 0
        #: attempts in a row that failed while the latest snapshot stayed the same
        self.stalled = 0
        #: why :meth:`wait_turn` returned False ("" before it did)
        self.verdict = ""

    @property
    def elapsed_ms(self) -> float:
        """Milliseconds since the first attempt."""
        return (self._clock() - self._start) * 1000.0

    def wait_turn(self, *, progressed: bool = True) -> bool:
        """After a lost attempt: pause and return True if the writer may try again, else
        return False (no pause) and set :attr:`verdict`. ``progressed`` says whether the table
        moved since the previous attempt (another commit was published)."""
        self.stalled = 0 if progressed else self.stalled + 1
        attempts = self.retries + 1
        elapsed = self.elapsed_ms
        o = self.options
        if self.stalled >= STALL_LIMIT:
            self.verdict = (
                f"{self.stalled} attempts in a row failed while the table's latest snapshot "
                "stayed the same, so no other writer is committing and waiting cannot help: the "
                "store refused the snapshot, or the table's snapshot hints contradict each other "
                "(`lakeops check <table>` lists problems)"
            )
            return False
        if o.max_retries is not None and self.retries >= o.max_retries:
            self.verdict = (
                f"other writers kept committing first through {attempts} attempts in "
                f"{_duration(elapsed)} ('commit.max-retries' = {o.max_retries}); raise "
                "'commit.max-retries', or remove it to keep trying until 'commit.timeout'"
            )
            return False
        if o.timeout_ms is not None and elapsed >= o.timeout_ms:
            self.verdict = (
                f"other writers kept committing first for {_duration(elapsed)} "
                f"({attempts} attempts; 'commit.timeout' = {_duration(o.timeout_ms)}); raise "
                "'commit.timeout' (or remove it: no time limit), or commit less often"
            )
            return False
        pause = retry_wait_ms(self.retries, o.min_wait_ms, o.max_wait_ms, self._jitter())
        if o.timeout_ms is not None:
            pause = min(pause, o.timeout_ms - elapsed)  # one last attempt at the deadline
        self._sleep(pause / 1000.0)
        self.retries += 1
        return True
