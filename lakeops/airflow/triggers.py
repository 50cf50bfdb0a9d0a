"""Triggers for the deferrable sensors. They poll the table from a worker thread
(``asyncio.to_thread``), so the triggerer's event loop never blocks on storage I/O."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from lakeops.airflow.conditions import health_violations, new_snapshot

__all__ = ["LakeopsHealthTrigger", "LakeopsSnapshotTrigger"]


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
            self._open().health(recent_snapshots=1),
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
