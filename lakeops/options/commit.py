"""How long a commit waits for its turn: ``commit.timeout``, ``commit.max-retries``,
``commit.min-retry-wait`` and ``commit.max-retry-wait``, parsed once.

Paimon's defaults for the waits (10 ms, 10 s) and for ``commit.timeout`` (none: unbounded).
``commit.max-retries`` bounds the retries only when it is set: Paimon 1.x defaults it to 10,
which gives a writer about ten seconds of patience, and concurrent writers on an object store
lose commits to that bound although nothing conflicts. Without it a writer retries while other
writers keep winning, until ``commit.timeout`` (when set) has passed; a writer whose table does
not move at all gives up on its own (:mod:`lakeops.commit.retry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakeops.options.parsing import parse_duration
from lakeops.options.values import check_option_values

__all__ = ["COMMIT_RETRY_KEYS", "CommitRetryOptions"]

#: the options this family reads
COMMIT_RETRY_KEYS = (
    "commit.timeout",
    "commit.max-retries",
    "commit.min-retry-wait",
    "commit.max-retry-wait",
)


@dataclass(frozen=True)
class CommitRetryOptions:
    """When a commit that lost the race for the next snapshot tries again, and when it stops.

    Attributes:
        timeout_ms: ``commit.timeout``: no retry starts once this much time has passed since
            the commit's first attempt (None: no time bound).
        max_retries: ``commit.max-retries``: at most this many retries (None: no count bound).
        min_wait_ms: ``commit.min-retry-wait``: the pause before the first retry, doubled
            before each further one.
        max_wait_ms: ``commit.max-retry-wait``: the longest pause (before jitter).
    """

    timeout_ms: int | None = None
    max_retries: int | None = None
    min_wait_ms: int = 10
    max_wait_ms: int = 10_000

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CommitRetryOptions:
        """Parse the commit options of a table; values outside their ranges (see
        :mod:`lakeops.options.values`) raise :class:`~lakeops.errors.ConfigurationError`."""
        present = {k: str(options[k]) for k in COMMIT_RETRY_KEYS if k in options}
        check_option_values(present)
        timeout = present.get("commit.timeout")
        retries = present.get("commit.max-retries")
        return cls(
            timeout_ms=None if timeout is None else parse_duration(timeout, "commit.timeout"),
            max_retries=None if retries is None else int(retries),
            min_wait_ms=parse_duration(
                present.get("commit.min-retry-wait", "10 ms"), "commit.min-retry-wait"
            ),
            max_wait_ms=parse_duration(
                present.get("commit.max-retry-wait", "10 s"), "commit.max-retry-wait"
            ),
        )
