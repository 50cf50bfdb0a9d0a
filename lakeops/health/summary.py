"""One line of figures per table, for a page that shows a whole lake at once.

:func:`summarize_table` reads one table's latest snapshot and its manifests — never a data
file — and, for a primary-key table, takes every per-bucket figure from
:func:`lakeops.compact.health.snapshot_buckets` (the code behind ``lakeops health``, the
table page and the sensors):

* the latest snapshot: id and commit time;
* the most sorted runs of any bucket, against the table's ``num-sorted-run.compaction-trigger``
  and ``num-sorted-run.stop-trigger`` (:attr:`TableSummary.state`: ``ok`` below
  :func:`near_from`, ``near`` from there up to the trigger, ``over`` at or beyond the trigger,
  where lakeops' and Paimon's compaction picks the bucket);
* the age of the oldest level-0 file of any bucket;
* space amplification of the whole table (stored ÷ estimated live bytes);
* live files and their bytes;
* the newest COMPACT snapshot: the snapshots from the latest back are read newest first
  (:data:`SNAPSHOT_READS` at once), at most :data:`COMPACTION_LOOKBACK` of them (snapshot files
  only, no manifests).

An append table (no primary key) has no sorted runs, levels or duplicate keys: its line has
the snapshot, live files, bytes and last compaction, and ``None`` for the rest.

:func:`summarize_tables` computes the lines of many tables on a thread pool (the work is
waiting on storage), in the order given. A table whose metadata cannot be read gets a line
with :attr:`TableSummary.error` set instead of failing the others.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from lakeops.compact.health import retained_snapshot, snapshot_buckets
from lakeops.errors import ConfigurationError, LakeopsError
from lakeops.store import TableStore

__all__ = [
    "COMPACTION_LOOKBACK",
    "SNAPSHOT_READS",
    "SUMMARY_THREADS",
    "RunState",
    "TableSummary",
    "near_from",
    "run_state",
    "summarize_table",
    "summarize_tables",
]

log = logging.getLogger(__name__)

#: snapshots read back from the latest one to find the newest compaction
COMPACTION_LOOKBACK = 100

#: tables summarised at once by :func:`summarize_tables`
SUMMARY_THREADS = 8

#: snapshot files read at once while looking for the newest compaction
SNAPSHOT_READS = 10

RunState = Literal["ok", "near", "over"]


def near_from(trigger: int) -> int:
    """The sorted-run count from which a bucket is ``near`` its compaction ``trigger``: four
    fifths of it rounded up, at most one below it and at least 2 (2 of 3, 4 of 5, 8 of 10); a
    trigger of 1 or 2 has no ``near`` (one run is never near)."""
    return max(min(math.ceil(0.8 * trigger), trigger - 1), 2)


def run_state(sorted_runs: int, trigger: int) -> RunState:
    """``over`` at or beyond ``trigger``, ``near`` from :func:`near_from`, else ``ok``."""
    if sorted_runs >= trigger:
        return "over"
    if sorted_runs >= near_from(trigger):
        return "near"
    return "ok"


@dataclass(frozen=True)
class TableSummary:
    """The figures of one table's latest snapshot (module docstring). Times are epoch
    milliseconds; ``computed_at_millis`` is when the figures were read (the reference of the
    level-0 age). ``last_compaction_millis`` is None when no compaction was found: then
    ``compaction_searched`` says how many snapshots were read back,
    ``compaction_search_complete`` whether they reached the earliest retained snapshot and
    ``history_from_first`` whether that is snapshot 1 (then the table was never compacted)."""

    conn_id: str
    identifier: str
    primary_key: bool
    computed_at_millis: int
    snapshot_id: int | None = None
    snapshot_millis: int | None = None
    max_sorted_runs: int | None = None
    trigger: int | None = None
    stop_trigger: int | None = None
    oldest_level0_age_s: float | None = None
    space_amplification: float | None = None
    live_files: int = 0
    total_bytes: int = 0
    buckets: int = 0
    last_compaction_millis: int | None = None
    last_compaction_snapshot: int | None = None
    compaction_searched: int = 0
    compaction_search_complete: bool = True
    history_from_first: bool = True
    error: str | None = None

    @property
    def state(self) -> RunState | None:
        """How the worst bucket stands against the compaction trigger (None without runs)."""
        if self.max_sorted_runs is None or self.trigger is None:
            return None
        return run_state(self.max_sorted_runs, self.trigger)


def _last_compaction(store: TableStore, latest: int) -> tuple[int | None, int | None, int, bool]:
    """(commit time, snapshot id) of the newest COMPACT snapshot at or before ``latest``, the
    snapshots read, and whether the search reached the earliest retained snapshot (or found
    one). Snapshots are read newest first, :data:`SNAPSHOT_READS` at once."""
    earliest = store.earliest_snapshot_id() or 1
    stop = max(earliest, latest - COMPACTION_LOOKBACK + 1)
    ids = list(range(latest, stop - 1, -1))
    read = 0
    with ThreadPoolExecutor(max_workers=SNAPSHOT_READS) as pool:
        for start in range(0, len(ids), SNAPSHOT_READS):
            chunk = ids[start : start + SNAPSHOT_READS]
            for snapshot in pool.map(lambda sid: retained_snapshot(store, sid), chunk):
                if snapshot is None:
                    return None, None, read, True  # expired: nothing older is retained
                read += 1
                if snapshot.commit_kind == "COMPACT":
                    return snapshot.time_millis, snapshot.id, read, True
    return None, None, read, stop == earliest


def _triggers(table: Any) -> tuple[int | None, int | None]:
    """The table's compaction and stop triggers (None if its options do not parse)."""
    try:
        copts = table.context.compaction
    except ConfigurationError:
        return None, None
    return copts.trigger, copts.stop_trigger


def summarize_table(conn_id: str, identifier: str, table: Any) -> TableSummary:
    """The figures of ``table`` (a :class:`~lakeops.Table` or an
    :class:`~lakeops.table.append.AppendTable`, named ``identifier`` of connection
    ``conn_id``) at its latest snapshot; metadata errors propagate."""
    now = int(time.time() * 1000)
    store: TableStore = table.store
    primary_key = bool(table.schema.primary_keys)
    snapshot = store.latest_snapshot()
    if snapshot is None:
        return TableSummary(conn_id, identifier, primary_key, now)
    found_ms, found_id, searched, complete = _last_compaction(store, snapshot.id)
    first = store.earliest_snapshot_id() == 1
    common: dict[str, Any] = {
        "snapshot_id": snapshot.id,
        "snapshot_millis": snapshot.time_millis,
        "last_compaction_millis": found_ms,
        "last_compaction_snapshot": found_id,
        "compaction_searched": searched,
        "compaction_search_complete": complete,
        "history_from_first": first,
    }
    if not primary_key:
        entries = store.live_entries(snapshot)
        return TableSummary(
            conn_id,
            identifier,
            primary_key,
            now,
            live_files=len(entries),
            total_bytes=sum(e.file.file_size for e in entries),
            buckets=len({(e.partition, e.bucket) for e in entries}),
            **common,
        )
    buckets = snapshot_buckets(store, table.schema, snapshot)
    trigger, stop_trigger = _triggers(table)
    ages = [b.oldest_level0_age_s for b in buckets if b.oldest_level0_age_s is not None]
    stored = sum(b.total_bytes for b in buckets)
    live = sum(b.live_bytes for b in buckets)
    return TableSummary(
        conn_id,
        identifier,
        primary_key,
        now,
        max_sorted_runs=max((b.sorted_runs for b in buckets), default=0),
        trigger=trigger,
        stop_trigger=stop_trigger,
        oldest_level0_age_s=max(ages) if ages else None,
        space_amplification=stored / live if live else 1.0,
        live_files=sum(b.files for b in buckets),
        total_bytes=stored,
        buckets=len(buckets),
        **common,
    )


def _safe_summary(conn_id: str, identifier: str, open_table: Callable[[], Any]) -> TableSummary:
    try:
        return summarize_table(conn_id, identifier, open_table())
    except LakeopsError as exc:
        log.warning("lakeops: cannot summarise %s of %r: %s", identifier, conn_id, type(exc))
        return TableSummary(
            conn_id,
            identifier,
            False,
            int(time.time() * 1000),
            error="metadata could not be read",
        )


def summarize_tables(
    tables: Sequence[tuple[str, str, Callable[[], Any]]],
    *,
    threads: int = SUMMARY_THREADS,
) -> list[TableSummary]:
    """The summary of each ``(conn_id, identifier, open_table)`` (``open_table`` returns the
    table), in the given order, ``threads`` tables at once. A table whose metadata cannot be
    read (a :class:`~lakeops.errors.LakeopsError`) gets a line with ``error`` set; any other
    exception propagates."""
    if not tables:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(tables)))) as pool:
        return list(pool.map(lambda t: _safe_summary(*t), tables))
