"""Sensors on a table: its health (does it need maintenance?) and its snapshots (did something
commit?). Both can defer to a trigger (``deferrable=True``), freeing the worker slot while they
wait."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from lakeops.airflow.conditions import health_violations, new_snapshot
from lakeops.airflow.hook import LakeopsHook
from lakeops.airflow.triggers import LakeopsHealthTrigger, LakeopsSnapshotTrigger
from lakeops.errors import ConfigurationError, LakeopsError
from lakeops.table import primary_key_table

__all__ = ["LakeopsSnapshotSensor", "LakeopsTableHealthSensor"]


class _TableSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("table", "lakeops_conn_id")

    def __init__(
        self,
        *,
        table: str,
        lakeops_conn_id: str = LakeopsHook.default_conn_name,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.lakeops_conn_id = lakeops_conn_id
        self.deferrable = deferrable

    def _table(self) -> Any:
        return LakeopsHook(self.lakeops_conn_id).get_table(self.table)

    def _trigger(self) -> Any:
        raise NotImplementedError

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)  # no need to defer if it already holds
        if isinstance(first, PokeReturnValue) and first.is_done:
            return first.xcom_value
        self.defer(
            trigger=self._trigger(),
            method_name="execute_complete",
            timeout=dt.timedelta(seconds=self.timeout) if self.timeout else None,
        )

    # Airflow calls execute_complete(context=..., event=...) and poke(context): the names are
    # its protocol's, whether or not a sensor reads the context
    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG002
        """Resumed from the trigger: its event is the XCom; an error event fails the task."""
        if event.get("status") != "met":
            raise LakeopsError(f"lakeops sensor on {self.table} failed: {event.get('message')}")
        return event


class LakeopsTableHealthSensor(_TableSensor):
    """Waits until the table needs maintenance: a bucket has more than ``max_sorted_runs``
    sorted runs, or holds a level-0 file older than ``max_level0_age``. The XCom lists those
    buckets (partition, bucket, sorted_runs, level0_files, level0_age_s), ready to hand to a
    compaction or flush.
    """

    def __init__(
        self,
        *,
        max_sorted_runs: int | None = None,
        max_level0_age: dt.timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if max_sorted_runs is None and max_level0_age is None:
            raise ConfigurationError(
                "LakeopsTableHealthSensor needs max_sorted_runs and/or max_level0_age"
            )
        self.max_sorted_runs = max_sorted_runs
        self.max_level0_age = max_level0_age

    def poke(self, context: Context) -> PokeReturnValue:  # noqa: ARG002
        found = health_violations(
            primary_key_table(self._table(), "health").health(recent_snapshots=1),
            max_sorted_runs=self.max_sorted_runs,
            max_level0_age=self.max_level0_age,
        )
        return PokeReturnValue(
            bool(found), {"status": "met", "table": self.table, "buckets": found}
        )

    def _trigger(self) -> LakeopsHealthTrigger:
        return LakeopsHealthTrigger(
            lakeops_conn_id=self.lakeops_conn_id,
            table=self.table,
            max_sorted_runs=self.max_sorted_runs,
            max_level0_age_s=None
            if self.max_level0_age is None
            else self.max_level0_age.total_seconds(),
            poll_interval=self.poke_interval,
        )


class LakeopsSnapshotSensor(_TableSensor):
    """Waits for a snapshot newer than ``since_snapshot_id`` and/or committed after ``since``
    (both templated; with neither, any snapshot). The XCom is the snapshot's id, commit kind and
    commit time."""

    template_fields: Sequence[str] = ("table", "lakeops_conn_id", "since_snapshot_id", "since")

    def __init__(
        self,
        *,
        since_snapshot_id: int | str | None = None,
        since: dt.datetime | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.since_snapshot_id = since_snapshot_id
        self.since = since

    def _since_id(self) -> int | None:
        value = self.since_snapshot_id
        if value in (None, "", "None"):
            return None
        try:
            return int(value)
        except ValueError:
            raise ConfigurationError(
                f"since_snapshot_id must be a snapshot id, got {value!r}"
            ) from None

    def _since(self) -> dt.datetime | None:
        if self.since in (None, "", "None"):
            return None
        if isinstance(self.since, dt.datetime):
            return self.since
        return dt.datetime.fromisoformat(str(self.since))

    def poke(self, context: Context) -> PokeReturnValue:  # noqa: ARG002
        found = new_snapshot(self._table(), since_snapshot_id=self._since_id(), since=self._since())
        return PokeReturnValue(
            found is not None, {"status": "met", "table": self.table, **(found or {})}
        )

    def _trigger(self) -> LakeopsSnapshotTrigger:
        since = self._since()
        return LakeopsSnapshotTrigger(
            lakeops_conn_id=self.lakeops_conn_id,
            table=self.table,
            since_snapshot_id=self._since_id(),
            since=since.isoformat() if since else None,
            poll_interval=self.poke_interval,
        )
