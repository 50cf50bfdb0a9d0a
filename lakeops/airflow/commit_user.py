"""The commit user of an Airflow task instance: stable across its retries, so that a retried
task's commit is recognised as already made (:mod:`lakeops.commit.exactly_once`).

The user is a hash of the task instance's identity — DAG id, task id, run id and map index —
and nothing that changes between tries (not the try number, the host or the time). Its commits
use Paimon's batch identifier (``Long.MAX_VALUE``), so the first commit of a task instance is
its only one: a retry (or a clear and re-run of the same task instance) publishes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["COMMIT_USER_PREFIX", "task_commit_user", "task_instance_commit_user"]

#: how every task instance's commit user starts (its snapshots name it)
COMMIT_USER_PREFIX = "lakeops-airflow-"


def task_instance_commit_user(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """The commit user of one task instance: ``lakeops-airflow-`` and 32 hex digits of a
    SHA-256 over its identity (unambiguous: the parts are hashed as a JSON list)."""
    identity = json.dumps([dag_id, task_id, run_id, int(map_index)], ensure_ascii=True)
    return COMMIT_USER_PREFIX + hashlib.sha256(identity.encode()).hexdigest()[:32]


def task_commit_user(context: Mapping[str, Any]) -> str | None:
    """The commit user of the task instance running with ``context`` (its ``ti``), or None when
    the context does not identify one (an operator executed outside Airflow)."""
    ti = context.get("ti")
    parts = [getattr(ti, name, None) for name in ("dag_id", "task_id", "run_id")]
    map_index = getattr(ti, "map_index", None)
    if not all(isinstance(p, str) and p for p in parts):
        return None
    dag_id, task_id, run_id = parts
    assert dag_id is not None and task_id is not None and run_id is not None
    return task_instance_commit_user(
        dag_id, task_id, run_id, -1 if map_index is None else int(map_index)
    )
