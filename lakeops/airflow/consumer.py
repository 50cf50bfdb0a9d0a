"""The position of :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger` as a Paimon consumer.

Paimon records how far a streaming reader got in ``<table>/consumer/consumer-<id>``:
``{"nextSnapshot": N}``, the snapshot it reads next (``ConsumerManager``). Keeping the trigger's
position there makes it durable (it lives with the table, so a restarted triggerer, another
triggerer host or a re-created trigger continues where the last one stopped) and visible to
Paimon: snapshot expiry (lakeops' and Java Paimon's) keeps snapshot N and every later one while
the consumer lives, so the trigger can still read the headers of the commits it has not seen;
``consumer.expiration-time`` on the table bounds how long a stopped trigger holds expiry back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lakeops.errors import ConfigurationError, CorruptMetadataError
from lakeops.io.file_io import join
from lakeops.store import MAX_JSON_METADATA_BYTES

__all__ = ["check_consumer_id", "consumer_path", "read_next_snapshot", "write_next_snapshot"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


def check_consumer_id(consumer_id: str) -> str:
    """``consumer_id`` if it is a safe file-name part (letters, digits, ``_ . -``)."""
    if not isinstance(consumer_id, str) or not _ID.fullmatch(consumer_id):
        raise ConfigurationError(
            f"consumer id {consumer_id!r} must be 1-200 letters, digits, '_', '.' or '-' "
            "(starting with a letter or digit), e.g. 'airflow-lookup-flush'"
        )
    return consumer_id


def consumer_path(store: Any, consumer_id: str) -> str:
    """``<table>/consumer/consumer-<id>``."""
    return join(store.root, "consumer", f"consumer-{check_consumer_id(consumer_id)}")


def read_next_snapshot(store: Any, consumer_id: str) -> int | None:
    """The consumer's ``nextSnapshot`` (None: no such consumer)."""
    path = consumer_path(store, consumer_id)
    fio = store.file_io
    if not fio.exists(path):
        return None
    data = fio.read_bytes(path, MAX_JSON_METADATA_BYTES)
    try:
        value = json.loads(data)["nextSnapshot"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"nextSnapshot {value!r} is not a snapshot id")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CorruptMetadataError(
            f"{path} cannot be read as a Paimon consumer ({exc}); delete it to let the trigger "
            "start again from the latest snapshot"
        ) from None
    return value


def write_next_snapshot(store: Any, consumer_id: str, next_snapshot: int) -> None:
    """Record (replace atomically) that the consumer reads ``next_snapshot`` next."""
    fio = store.file_io
    path = consumer_path(store, consumer_id)
    fio.mkdirs(join(store.root, "consumer"))
    fio.overwrite_atomic(path, json.dumps({"nextSnapshot": int(next_snapshot)}).encode())
