"""The event trigger behind event-driven scheduling: :class:`LakeopsCommitTrigger`'s ``run()``
on an event loop against a real table, committed to from another thread; and the DAG that
watches lookup tables with it."""

from __future__ import annotations

import asyncio
import importlib
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.airflow.triggers import LakeopsCommitTrigger

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _write(table: Any, v: int) -> None:
    table.write(pa.table({"id": list(range(20)), "v": [v] * 20}, schema=SCHEMA))


def _roundtrip(trigger: Any) -> Any:
    """What the triggerer does: rebuild the trigger from ``serialize()``."""
    path, kwargs = trigger.serialize()
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)


def test_commit_trigger_fires_with_each_new_commit(catalog: Catalog, lakeops_conn: str) -> None:
    """The trigger takes the latest snapshot when it starts as its baseline; a commit made by
    another thread while it polls fires an event with the new snapshot id and kind; a
    compaction (not among ``commit_kinds``) is skipped, the append after it fires."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    _write(table, 1)
    trigger = _roundtrip(
        LakeopsCommitTrigger(table="db.t", commit_kinds=["APPEND"], poll_interval=0.02)
    )
    from airflow.triggers.base import BaseEventTrigger

    assert isinstance(trigger, BaseEventTrigger)
    polled = threading.Event()
    latest_id = trigger.latest_id

    def observed() -> int | None:
        value = latest_id()
        polled.set()  # the baseline has been read: commits from now on are new
        return value  # type: ignore[no-any-return]

    trigger.latest_id = observed

    def commit_once_polled() -> None:
        assert polled.wait(30)
        _write(table, 2)

    async def two_events() -> list[dict[str, Any]]:
        events = trigger.run()
        committer = threading.Thread(target=commit_once_polled)
        committer.start()
        first = await asyncio.wait_for(anext(events), 30)
        committer.join()
        # a compaction then an append, between two polls or not: only the append fires
        await asyncio.to_thread(table.compact, full=True)
        await asyncio.to_thread(_write, table, 3)
        second = await asyncio.wait_for(anext(events), 30)
        await events.aclose()
        return [first.payload, second.payload]

    first, second = asyncio.run(two_events())
    kinds = {s.id: s.commit_kind for s in table.snapshots()}
    assert kinds == {1: "APPEND", 2: "APPEND", 3: "COMPACT", 4: "APPEND"}
    assert first["snapshot_id"] == 2 and first["commit_kind"] == "APPEND"
    assert first["previous_snapshot_id"] == 1 and first["table"] == "db.t"
    assert second["snapshot_id"] == 4 and second["commit_kind"] == "APPEND"
    assert second["previous_snapshot_id"] == 2


def test_commit_trigger_resumes_from_its_paimon_consumer(
    catalog: Catalog, lakeops_conn: str
) -> None:
    """A triggerer restart loses and repeats nothing: trigger A fires snapshot 2 and records
    ``nextSnapshot`` 3 in ``consumer/consumer-<id>`` once the event is handed over; A stops;
    while nothing runs, two appends and a compaction commit and expiry keeps every snapshot
    from 3 on (the consumer pins them); B, rebuilt from A's serialized kwargs, fires once, for
    the newest append, after snapshot 2, and never snapshot 2 again."""
    import json

    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    _write(table, 1)
    original = LakeopsCommitTrigger(
        table="db.t", commit_kinds=["APPEND"], poll_interval=0.02, consumer_id="airflow-test"
    )
    consumer = Path(table.root) / "consumer" / "consumer-airflow-test"

    def instrumented() -> tuple[Any, threading.Event, asyncio.Queue[int | None]]:
        trigger = _roundtrip(original)
        polled, remembered = threading.Event(), asyncio.Queue[int | None]()
        latest_id, remember = trigger.latest_id, trigger.remember
        loop = asyncio.get_running_loop()

        def observed() -> int | None:
            value = latest_id()
            polled.set()
            return value  # type: ignore[no-any-return]

        def recorded(seen: int | None) -> None:
            remember(seen)
            loop.call_soon_threadsafe(remembered.put_nowait, seen)

        trigger.latest_id, trigger.remember = observed, recorded
        return trigger, polled, remembered

    async def first_life() -> dict[str, Any]:
        trigger, polled, remembered = instrumented()
        events = trigger.run()
        # the runner's loop: take an event, then ask for the next one (resumes the trigger)
        pending = asyncio.ensure_future(anext(events))
        assert await asyncio.wait_for(remembered.get(), 30) == 1  # a new consumer: after 1
        assert await asyncio.to_thread(polled.wait, 30)
        await asyncio.to_thread(_write, table, 2)
        event = await asyncio.wait_for(pending, 30)
        pending = asyncio.ensure_future(anext(events))
        assert await asyncio.wait_for(remembered.get(), 30) == 2
        pending.cancel()  # the triggerer shuts down
        with pytest.raises(asyncio.CancelledError):
            await pending
        await events.aclose()
        return event.payload  # type: ignore[no-any-return]

    first = asyncio.run(first_life())
    assert (first["snapshot_id"], first["previous_snapshot_id"]) == (2, 1)
    assert json.loads(consumer.read_text()) == {"nextSnapshot": 3}

    _write(table, 3)
    table.compact(full=True)
    _write(table, 4)
    expired = table.expire_snapshots(retain_min=1, retain_max=1)
    assert sorted(expired.expired_snapshots) == [1, 2]  # 3.. are the consumer's to read
    assert [s.id for s in table.snapshots()] == [3, 4, 5]

    async def second_life() -> dict[str, Any]:
        trigger, _, remembered = instrumented()
        events = trigger.run()
        event = await asyncio.wait_for(anext(events), 30)
        pending = asyncio.ensure_future(anext(events))
        assert await asyncio.wait_for(remembered.get(), 30) == 5
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await events.aclose()
        return event.payload  # type: ignore[no-any-return]

    second = asyncio.run(second_life())
    assert (second["snapshot_id"], second["commit_kind"]) == (5, "APPEND")
    assert second["previous_snapshot_id"] == 2  # it covers 3..5: nothing lost, 2 not repeated
    assert json.loads(consumer.read_text()) == {"nextSnapshot": 6}


def test_commit_trigger_refuses_a_bad_consumer_id() -> None:
    from lakeops.errors import ConfigurationError

    for bad in ("", "../x", "a/b", " x"):
        with pytest.raises(ConfigurationError, match="consumer id"):
            LakeopsCommitTrigger(table="db.t", consumer_id=bad)


def test_trigger_events_count_as_commits_for_the_flush_plan() -> None:
    from lakeops.airflow.conditions import committed_tables

    extras = [
        ("lakeops://c/db/a", [{"from_trigger": True, "payload": {"commit_kind": "APPEND"}}]),
        ("lakeops://c/db/b", [{"from_trigger": True, "payload": {"commit_kind": "COMPACT"}}]),
    ]
    assert committed_tables(extras) == ["db.a"]


def test_flush_on_commit_dag_watches_the_listed_tables(
    airflow_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.airflow.test_dags import _load

    monkeypatch.setenv("LAKEOPS_WATCHED_LOOKUP_TABLES", "db.users")
    monkeypatch.setenv("LAKEOPS_WATCH_POLL_SECONDS", "5")
    dag = _load("lakeops_lookup_flush_on_commit")
    (asset,) = dag.timetable.asset_condition.objects
    assert asset.uri == "lakeops://lakeops_default/db/users"
    (watcher,) = asset.watchers
    path, kwargs = watcher.trigger.serialize()
    assert path == "lakeops.airflow.triggers.LakeopsCommitTrigger"
    assert kwargs["table"] == "db.users" and kwargs["poll_interval"] == 5.0
    assert kwargs["commit_kinds"] == ["APPEND", "OVERWRITE"]
    assert kwargs["consumer_id"] == "airflow-lakeops-lookup-flush-on-commit"


def test_a_commit_queues_the_flush_dag_through_the_watcher(
    airflow_db: Path, catalog: Catalog, lakeops_conn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Airflow's event-driven path without its daemons: ``airflow dags reserialize`` (what the
    DAG processor does) stores the watcher's trigger; it is rebuilt from its database row and
    run as the triggerer would; a commit fires it; ``Trigger.submit_event`` (what the triggerer
    calls) queues a run of ``lakeops_lookup_flush_on_commit`` for the table's Asset — what the
    scheduler turns into a DAG run."""
    import os

    from airflow.models.asset import AssetDagRunQueue, AssetModel
    from airflow.models.dag import DagModel
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from tests.airflow.conftest import airflow_cli

    table = catalog.create_table(
        "db.firsts",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "first-row", "write-only": "true"},
    )
    _write(table, 1)
    monkeypatch.setenv("LAKEOPS_WATCHED_LOOKUP_TABLES", "db.firsts")
    monkeypatch.setenv("LAKEOPS_WATCH_POLL_SECONDS", "0.02")
    # a paused DAG's Assets get no watchers: the DAG is created unpaused
    env = {**os.environ, "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
    airflow_cli("dags", "reserialize", env=env)
    # an earlier test of this session's database may have created the DAG paused: unpause it
    # and serialize again, so that its Assets get their watchers
    with create_session() as session:
        dag_model = session.get(DagModel, "lakeops_lookup_flush_on_commit")
        was_paused = dag_model is not None and dag_model.is_paused
        if was_paused:
            dag_model.is_paused = False
    if was_paused:
        airflow_cli("dags", "reserialize", env=env)
    uri = "lakeops://lakeops_default/db/firsts"
    with create_session() as session:
        asset = session.scalars(select(AssetModel).where(AssetModel.uri == uri)).one()
        (watcher,) = asset.watchers
        trigger_id, classpath = watcher.trigger.id, watcher.trigger.classpath
    assert classpath == "lakeops.airflow.triggers.LakeopsCommitTrigger"
    # the row's kwargs are encrypted with the CLI's Fernet key: take them from the DAG file
    from tests.airflow.test_dags import _load

    (dag_asset,) = _load("lakeops_lookup_flush_on_commit").timetable.asset_condition.objects
    trigger = _roundtrip(dag_asset.watchers[0].trigger)
    polled = threading.Event()
    latest_id = trigger.latest_id

    def observed() -> int | None:
        value = latest_id()
        polled.set()  # the baseline has been read: the commit below is new
        return value  # type: ignore[no-any-return]

    trigger.latest_id = observed
    committer = threading.Thread(target=lambda: polled.wait(30) and _write(table, 2))

    async def first_event() -> Any:
        events = trigger.run()
        committer.start()
        event = await asyncio.wait_for(anext(events), 30)
        await events.aclose()
        return event

    event = asyncio.run(first_event())
    committer.join()
    assert event.payload["snapshot_id"] == 2
    Trigger.submit_event(trigger_id, event)
    with create_session() as session:
        queued = session.scalars(
            select(AssetDagRunQueue.target_dag_id).where(AssetDagRunQueue.asset_id == asset.id)
        ).all()
    assert queued == ["lakeops_lookup_flush_on_commit"]
