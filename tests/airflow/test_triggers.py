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
