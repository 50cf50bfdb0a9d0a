"""Triggers for the deferrable sensors, and :class:`LakeopsCommitTrigger`, the event trigger
that schedules a DAG on a table's commits (``AssetWatcher``). They poll the table from a worker
thread (``asyncio.to_thread``), so the triggerer's event loop never blocks on storage I/O."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from lakeops.airflow.conditions import health_violations, new_snapshot
from lakeops.airflow.consumer import check_consumer_id, read_next_snapshot, write_next_snapshot
from lakeops.table import primary_key_table

__all__ = ["LakeopsCommitTrigger", "LakeopsHealthTrigger", "LakeopsSnapshotTrigger"]


class _PollingTrigger(BaseTrigger):
    """Runs ``self.check()`` in a thread every ``poll_interval`` seconds until it returns a
    payload, then fires one ``{"status": "met", ...}`` event (``"error"`` if the check raised)."""

    def __init__(self, *, lakeops_conn_id: str, table: str, poll_interval: float) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.lakeops_conn_id = lakeops_conn_id
        self.table = table
        self.poll_interval = poll_interval

    def _open(self) -> Any:
        from lakeops.airflow.hook import LakeopsHook

        return LakeopsHook(self.lakeops_conn_id).get_table(self.table)

    def _arguments(self) -> dict[str, Any]:
        """The subclass's own constructor arguments, for :meth:`serialize`."""
        raise NotImplementedError

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "lakeops_conn_id": self.lakeops_conn_id,
                "table": self.table,
                **self._arguments(),
                "poll_interval": self.poll_interval,
            },
        )

    def check(self) -> dict[str, Any] | None:  # runs in a thread
        raise NotImplementedError

    async def run(self) -> AsyncIterator[TriggerEvent]:
        check: Callable[[], dict[str, Any] | None] = self.check
        while True:
            try:
                payload = await asyncio.to_thread(check)
            except Exception as exc:
                error = {"status": "error", "table": self.table, "message": str(exc)}
                yield TriggerEvent(error)  # type: ignore[no-untyped-call]
                return
            if payload is not None:
                met = {"status": "met", "table": self.table, **payload}
                yield TriggerEvent(met)  # type: ignore[no-untyped-call]
                return
            await asyncio.sleep(self.poll_interval)


class LakeopsHealthTrigger(_PollingTrigger):
    """Fires when a bucket has more than ``max_sorted_runs`` sorted runs or a level-0 file older
    than ``max_level0_age_s`` seconds (see :class:`~lakeops.airflow.sensors.
    LakeopsTableHealthSensor`)."""

    def __init__(
        self,
        *,
        lakeops_conn_id: str,
        table: str,
        max_sorted_runs: int | None,
        max_level0_age_s: float | None,
        poll_interval: float = 60.0,
    ) -> None:
        super().__init__(lakeops_conn_id=lakeops_conn_id, table=table, poll_interval=poll_interval)
        self.max_sorted_runs = max_sorted_runs
        self.max_level0_age_s = max_level0_age_s

    def _arguments(self) -> dict[str, Any]:
        return {
            "max_sorted_runs": self.max_sorted_runs,
            "max_level0_age_s": self.max_level0_age_s,
        }

    def check(self) -> dict[str, Any] | None:
        age = None if self.max_level0_age_s is None else dt.timedelta(seconds=self.max_level0_age_s)
        found = health_violations(
            primary_key_table(self._open(), "health").health(recent_snapshots=1),
            max_sorted_runs=self.max_sorted_runs,
            max_level0_age=age,
        )
        return {"buckets": found} if found else None


class LakeopsSnapshotTrigger(_PollingTrigger):
    """Fires when the table has a snapshot newer than ``since_snapshot_id`` / committed after
    ``since`` (ISO timestamp)."""

    def __init__(
        self,
        *,
        lakeops_conn_id: str,
        table: str,
        since_snapshot_id: int | None,
        since: str | None,
        poll_interval: float = 60.0,
    ) -> None:
        super().__init__(lakeops_conn_id=lakeops_conn_id, table=table, poll_interval=poll_interval)
        self.since_snapshot_id = since_snapshot_id
        self.since = since

    def _arguments(self) -> dict[str, Any]:
        return {
            "since_snapshot_id": self.since_snapshot_id,
            "since": self.since,
        }

    def check(self) -> dict[str, Any] | None:
        since = dt.datetime.fromisoformat(self.since) if self.since else None
        return new_snapshot(self._open(), since_snapshot_id=self.since_snapshot_id, since=since)


class LakeopsCommitTrigger(BaseEventTrigger):
    """Fires a :class:`TriggerEvent` for every new commit of ``table`` — for event-driven
    scheduling: ``Asset(..., watchers=[AssetWatcher(name=..., trigger=LakeopsCommitTrigger(
    table="db.orders"))])`` starts the DAGs scheduled on that Asset when the table commits,
    whoever commits (Airflow operators, Spark, Flink, the CLI).

    Every ``poll_interval`` seconds it reads the latest snapshot id (the ``LATEST`` hint and a
    probe of the next id: no manifest is read); only when that moved does it read the new
    snapshots' headers. Commits whose kind is not in ``commit_kinds`` (e.g. ``COMPACT``, so a
    flush's own commits do not start the flush again) are skipped; several commits between two
    polls fire one event, for the newest that counts. The payload is ``{"table", "snapshot_id",
    "commit_kind", "time_millis", "previous_snapshot_id"}``.

    Where it starts, and how it remembers: with ``consumer_id`` the position is a Paimon
    consumer of the table (``consumer/consumer-<id>``, ``{"nextSnapshot": N}``; see
    :mod:`lakeops.airflow.consumer`). A trigger that finds its consumer continues from it, so a
    triggerer restart (a fresh trigger from the same serialized kwargs) fires the commits made
    meanwhile (one event, whose ``previous_snapshot_id`` is where it stopped) and never one it
    fired before; snapshot expiry keeps the snapshots the consumer has not read. A new consumer
    starts after ``since_snapshot_id`` if given, else after the snapshot that is latest when
    the trigger first runs, and is written at once. The position advances when the event has
    been handed to the triggerer (the generator resumes), before the next poll. Without
    ``consumer_id`` the position lives only in memory: each start begins anew as above
    (commits while no triggerer runs it are not replayed).

    A failing check (storage unreachable) is logged and retried at the next poll.
    """

    def __init__(
        self,
        *,
        table: str,
        lakeops_conn_id: str = "lakeops_default",
        commit_kinds: list[str] | None = None,
        since_snapshot_id: int | None = None,
        poll_interval: float = 30.0,
        consumer_id: str | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.table = table
        self.lakeops_conn_id = lakeops_conn_id
        self.commit_kinds = None if commit_kinds is None else [str(k) for k in commit_kinds]
        self.since_snapshot_id = since_snapshot_id
        self.poll_interval = poll_interval
        self.consumer_id = None if consumer_id is None else check_consumer_id(consumer_id)
        self._opened: Any = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "lakeops_conn_id": self.lakeops_conn_id,
                "commit_kinds": self.commit_kinds,
                "since_snapshot_id": self.since_snapshot_id,
                "poll_interval": self.poll_interval,
                "consumer_id": self.consumer_id,
            },
        )

    def _table(self) -> Any:
        if self._opened is None:
            from lakeops.airflow.hook import LakeopsHook

            self._opened = LakeopsHook(self.lakeops_conn_id).get_table(self.table)
        return self._opened

    def latest_id(self) -> int | None:
        """The table's latest snapshot id (the cheap check; runs in a thread)."""
        return self._table().store.latest_snapshot_id()  # type: ignore[no-any-return]

    def newest_counted(self, after: int | None, latest: int) -> dict[str, Any] | None:
        """The newest snapshot in ``(after, latest]`` whose kind counts, as the event payload
        (None if none counts; expired ones are skipped). Runs in a thread."""
        store = self._table().store
        first = 1 if after is None else after + 1
        for snapshot_id in range(latest, first - 1, -1):
            try:
                snapshot = store.snapshot(snapshot_id)
            except FileNotFoundError:
                continue
            if self.commit_kinds is None or snapshot.commit_kind in self.commit_kinds:
                return {
                    "table": self.table,
                    "snapshot_id": snapshot.id,
                    "commit_kind": snapshot.commit_kind,
                    "time_millis": snapshot.time_millis,
                    "previous_snapshot_id": after,
                }
        return None

    def resume_point(self) -> tuple[bool, int | None]:
        """(found, last snapshot seen) from the consumer: ``(False, None)`` without
        ``consumer_id`` or before the consumer's first run. Runs in a thread."""
        if self.consumer_id is None:
            return False, None
        next_snapshot = read_next_snapshot(self._table().store, self.consumer_id)
        if next_snapshot is None:
            return False, None
        return True, (None if next_snapshot <= 1 else next_snapshot - 1)

    def remember(self, seen: int | None) -> None:
        """Record in the consumer that every snapshot up to ``seen`` is handled (nothing
        without ``consumer_id``). Runs in a thread."""
        if self.consumer_id is not None:
            next_snapshot = 1 if seen is None else seen + 1
            write_next_snapshot(self._table().store, self.consumer_id, next_snapshot)

    async def _retry(self, what: str, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)`` in a thread, retried every poll until storage answers."""
        while True:
            try:
                return await asyncio.to_thread(call, *args)
            except Exception as exc:
                self.log.warning("lakeops %s: %s failed: %s", self.table, what, exc)
            await asyncio.sleep(self.poll_interval)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        found, seen = await self._retry("reading the consumer", self.resume_point)
        if not found:
            seen = self.since_snapshot_id
            if seen is None:  # the baseline: what is latest now (retried until storage answers)
                while (baseline := await self._poll()) is False:
                    await asyncio.sleep(self.poll_interval)
                seen = None if baseline is None else int(baseline)
            await self._retry("writing the consumer", self.remember, seen)
        while True:
            latest = await self._poll()
            if latest is not False and latest is not None and (seen is None or latest > seen):
                try:
                    payload = await asyncio.to_thread(self.newest_counted, seen, latest)
                except Exception as exc:  # storage hiccup: try again at the next poll
                    self.log.warning("lakeops %s: reading snapshots failed: %s", self.table, exc)
                else:
                    seen = latest
                    if payload is not None:
                        yield TriggerEvent(payload)  # type: ignore[no-untyped-call]
                    # handed over (or nothing counted): the consumer moves past ``latest``
                    await self._retry("writing the consumer", self.remember, seen)
            await asyncio.sleep(self.poll_interval)

    async def _poll(self) -> int | bool | None:
        """The latest snapshot id (None: never written), or False if storage failed to answer
        (logged; retried at the next poll)."""
        try:
            return await asyncio.to_thread(self.latest_id)
        except Exception as exc:
            self.log.warning("lakeops %s: reading the latest snapshot failed: %s", self.table, exc)
            return False
