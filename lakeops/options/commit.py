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

from lakeops.options.registry import check_ordered
from lakeops.options.rows_retention import (
    COMMIT_MAX_RETRIES,
    COMMIT_MAX_RETRY_WAIT,
    COMMIT_MIN_RETRY_WAIT,
    COMMIT_TIMEOUT,
)

__all__ = ["COMMIT_RETRY_KEYS", "CommitRetryOptions"]

#: the options this family reads
COMMIT_RETRY_KEYS = tuple(
    row.key
    for row in (COMMIT_TIMEOUT, COMMIT_MAX_RETRIES, COMMIT_MIN_RETRY_WAIT, COMMIT_MAX_RETRY_WAIT)
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
    min_wait_ms: int = COMMIT_MIN_RETRY_WAIT.get({})
    max_wait_ms: int = COMMIT_MAX_RETRY_WAIT.get({})

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CommitRetryOptions:
        """Parse the commit options of a table; values outside their ranges (see
        :mod:`lakeops.options.rows_retention`) raise :class:`~lakeops.errors.ConfigurationError`."""
        present = {k: str(options[k]) for k in COMMIT_RETRY_KEYS if k in options}
        # parsed in key order, as the table's options are checked at create
        max_retries = COMMIT_MAX_RETRIES.find(present)
        max_wait_ms = COMMIT_MAX_RETRY_WAIT.get(present)
        min_wait_ms = COMMIT_MIN_RETRY_WAIT.get(present)
        timeout_ms = COMMIT_TIMEOUT.find(present)
        check_ordered(present)
        return cls(timeout_ms, max_retries, min_wait_ms, max_wait_ms)
