"""Sensors poke real tables; deferrable ones defer to triggers whose events are checked by
running the triggers' ``run()`` on an event loop."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import threading
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import TaskDeferred

from lakeops import Catalog
from lakeops.airflow.sensors import LakeopsSnapshotSensor, LakeopsTableHealthSensor
from lakeops.airflow.triggers import LakeopsHealthTrigger, LakeopsSnapshotTrigger
from lakeops.errors import ConfigurationError, LakeopsError

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _table(catalog: Catalog):
    return catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"}
    )


def _write(table, v: int) -> None:
    table.write(pa.table({"id": list(range(40)), "v": [v] * 40}, schema=SCHEMA))


def _first_event(trigger: Any, timeout: float = 30) -> Any:
    async def first() -> Any:
        async for event in trigger.run():
            return event
        return None

    return asyncio.run(asyncio.wait_for(first(), timeout))


def _roundtrip(trigger: Any) -> Any:
    """What the triggerer does: rebuild the trigger from ``serialize()``."""
    path, kwargs = trigger.serialize()
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)


def test_health_sensor_pokes_until_the_table_needs_compaction(
    catalog: Catalog, lakeops_conn: str
) -> None:
    table = _table(catalog)
    sensor = LakeopsTableHealthSensor(task_id="h", table="db.t", max_sorted_runs=2)
    _write(table, 1)
    _write(table, 2)
    assert not sensor.poke({}).is_done  # 2 runs per bucket: not above the threshold
    _write(table, 3)
    result = sensor.poke({})
    assert result.is_done
    assert sorted(b["bucket"] for b in result.xcom_value["buckets"]) == [0, 1]
    assert {b["sorted_runs"] for b in result.xcom_value["buckets"]} == {3}

    old = LakeopsTableHealthSensor(
        task_id="age", table="db.t", max_level0_age=dt.timedelta(hours=1)
    )
    assert not old.poke({}).is_done  # level-0 files are seconds old
    fresh = LakeopsTableHealthSensor(task_id="age", table="db.t", max_level0_age=dt.timedelta(0))
    assert fresh.poke({}).is_done
    with pytest.raises(ConfigurationError):
        LakeopsTableHealthSensor(task_id="x", table="db.t")


def test_deferrable_health_sensor_defers_and_its_trigger_fires(
    catalog: Catalog, lakeops_conn: str
) -> None:
    table = _table(catalog)
    _write(table, 1)
    sensor = LakeopsTableHealthSensor(
        task_id="h", table="db.t", max_sorted_runs=1, deferrable=True, poke_interval=0.2
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, LakeopsHealthTrigger)
    assert deferred.value.method_name == "execute_complete"
    trigger = _roundtrip(trigger)
    polled = threading.Event()
    check = trigger.check

    def check_and_tell() -> Any:
        payload = check()
        polled.set()
        return payload

    trigger.check = check_and_tell

    async def write_later() -> Any:
        """The trigger polls (from a thread) while the loop stays free to run this."""
        task = asyncio.ensure_future(_collect(trigger))
        assert await asyncio.to_thread(polled.wait, 30)  # a first poll: 1 run, not met
        assert not task.done()
        await asyncio.to_thread(_write, table, 2)  # now 2 runs per bucket
        return await asyncio.wait_for(task, 30)

    event = asyncio.run(write_later())
    assert event.payload["status"] == "met"
    assert sorted(b["bucket"] for b in event.payload["buckets"]) == [0, 1]
    assert sensor.execute_complete({}, event.payload)["status"] == "met"
    with pytest.raises(LakeopsError, match="boom"):
        sensor.execute_complete({}, {"status": "error", "message": "boom"})


async def _collect(trigger: Any) -> Any:
    async for event in trigger.run():
        return event
    return None


def test_snapshot_sensor_and_trigger(catalog: Catalog, lakeops_conn: str) -> None:
    table = _table(catalog)
    sensor = LakeopsSnapshotSensor(task_id="s", table="db.t", since_snapshot_id="1")
    assert not sensor.poke({}).is_done  # no snapshot at all
    _write(table, 1)
    assert not sensor.poke({}).is_done  # snapshot 1 is not newer than 1
    assert LakeopsSnapshotSensor(task_id="any", table="db.t").poke({}).is_done

    deferrable = LakeopsSnapshotSensor(
        task_id="s", table="db.t", since_snapshot_id=1, deferrable=True, poke_interval=0.1
    )
    with pytest.raises(TaskDeferred) as deferred:
        deferrable.execute({})
    trigger = _roundtrip(deferred.value.trigger)
    assert isinstance(trigger, LakeopsSnapshotTrigger)
    _write(table, 2)
    event = _first_event(trigger)
    assert event.payload["status"] == "met" and event.payload["snapshot_id"] == 2
    assert event.payload["commit_kind"] == "APPEND"

    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    assert (
        not LakeopsSnapshotSensor(task_id="t", table="db.t", since=later.isoformat())
        .poke({})
        .is_done
    )
    with pytest.raises(ConfigurationError, match="since_snapshot_id"):
        LakeopsSnapshotSensor(task_id="t", table="db.t", since_snapshot_id="latest").poke({})


def test_trigger_reports_errors_as_events(catalog: Catalog, lakeops_conn: str) -> None:
    trigger = LakeopsSnapshotTrigger(
        lakeops_conn_id="lakeops_default", table="db.missing", since_snapshot_id=None, since=None
    )
    event = _first_event(trigger)
    assert event.payload["status"] == "error" and "db.missing" in event.payload["message"]


def test_a_missing_table_is_named_with_the_near_ones(catalog: Catalog, lakeops_conn: str) -> None:
    """Sensors (and operators: both open tables through the hook) say which table was meant,
    as the CLI does."""
    from lakeops.errors import TableNotFoundError

    _table(catalog)
    catalog.create_table("db.orders", schema=SCHEMA, primary_keys=["id"])
    sensor = LakeopsSnapshotSensor(task_id="s", table="db.order", since_snapshot_id=0)
    with pytest.raises(TableNotFoundError, match=r"did you mean db\.orders\?"):
        sensor.poke({})
    far = LakeopsTableHealthSensor(task_id="h", table="db.zzzzzzzz", max_sorted_runs=2)
    with pytest.raises(TableNotFoundError, match="the tables of connection 'lakeops_default' are"):
        far.poke({})
