"""Paimon's consumers of a table: how far each streaming reader got (``ConsumerManager``).

A consumer is one file, ``consumer/consumer-<id>`` (under ``branch/branch-<name>/`` for a
branch), holding ``{"nextSnapshot": N}``: the snapshot the reader reads next, so snapshots
``N`` and later stay while the consumer lives (snapshot expiry stops below the smallest
``nextSnapshot``: :func:`lakeops.store.keep_alive.consumer_floor`). Paimon writes it with
Jackson's pretty printer; lakeops writes the same bytes, replacing the file atomically (readers
see the old or the new position, never a mix).

* **Read as a consumer** (Paimon's ``consumer-id`` startup): a read of changes with a consumer id
  whose file exists starts at its ``nextSnapshot``, whatever start it was given (that start is
  only a new consumer's); once the read of snapshots up to ``N`` has been consumed the consumer
  records ``nextSnapshot = N + 1`` (:func:`read_as_consumer`). One reader per consumer id: two
  readers of one id each read the same range, and the last to finish wins.
* **Reset and clear** (Paimon's ``reset_consumer`` and ``clear_consumers`` procedures):
  :func:`reset_consumer` sets a consumer's ``nextSnapshot`` or deletes it;
  :func:`clear_consumers` deletes every consumer whose id matches the ``including`` regular
  expression (default all) and not the ``excluding`` one, each matched against the whole id as
  Java's ``Matcher.matches``.
* **Expiry** (``consumer.expiration-time``, Paimon's ``ConsumerManager.expire``): a consumer
  whose file was last modified longer ago than the expiration time is deleted
  (:func:`expire_consumers`); every read as that consumer rewrites the file, so only a reader
  that stopped expires.

Consumers are listed from the directory: every ``consumer-<id>`` file but temporary ones (a
name ending ``.tmp``, or starting with ``.``), sorted by id, whatever characters Paimon allowed
in the id. Ids lakeops writes are checked by :func:`check_consumer_id` (safe file-name parts).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import TypeVar

from lakeops.errors import (
    ConfigurationError,
    CorruptMetadataError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from lakeops.io.file_io import join
from lakeops.store.table_store import MAX_JSON_METADATA_BYTES, TableStore

__all__ = [
    "CONSUMER_DIR",
    "CONSUMER_PREFIX",
    "check_consumer_id",
    "clear_consumers",
    "consumer_path",
    "delete_consumer",
    "expire_consumers",
    "list_consumers",
    "read_as_consumer",
    "read_next_snapshot",
    "reset_consumer",
    "write_next_snapshot",
]

log = logging.getLogger(__name__)

#: the directory of a table's (or branch's) consumers
CONSUMER_DIR = "consumer"
#: the file-name prefix of a consumer (Paimon's ``ConsumerManager.CONSUMER_PREFIX``)
CONSUMER_PREFIX = "consumer-"

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")

T = TypeVar("T")


def check_consumer_id(consumer_id: str) -> str:
    """``consumer_id`` if it is a safe file-name part: 1-200 letters, digits, ``_ . -``,
    starting with a letter or digit, not ending ``.tmp`` (a temporary file's name, which
    listings skip); else a :class:`ConfigurationError`."""
    if (
        not isinstance(consumer_id, str)
        or not _ID.fullmatch(consumer_id)
        or consumer_id.endswith(".tmp")
    ):
        raise ConfigurationError(
            f"consumer id {consumer_id!r} must be 1-200 letters, digits, '_', '.' or '-' "
            "(starting with a letter or digit, not ending '.tmp'), e.g. 'airflow-lookup-flush'"
        )
    return consumer_id


def consumer_path(store: TableStore, consumer_id: str) -> str:
    """``<table>/consumer/consumer-<id>`` (a branch's under its directory)."""
    return store.path(f"{CONSUMER_DIR}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id)}")


def _parse(path: str, data: bytes) -> int:
    """The ``nextSnapshot`` of consumer file ``path`` holding ``data``."""
    try:
        if len(data) > MAX_JSON_METADATA_BYTES:
            raise ValueError(f"larger than {MAX_JSON_METADATA_BYTES >> 20} MiB")
        value = json.loads(data)["nextSnapshot"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"nextSnapshot {value!r} is not a snapshot id")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CorruptMetadataError(
            f"{path} cannot be read as a Paimon consumer ({exc}); nothing was changed — "
            "delete it (reset_consumer(id) without next_snapshot, or 'lakeops consumer reset') "
            "to let its reader start afresh"
        ) from None
    return int(value)


def _read(store: TableStore, path: str) -> int | None:
    """The ``nextSnapshot`` in ``path`` (None: no such file)."""
    try:
        data = store.file_io.read_bytes(path, MAX_JSON_METADATA_BYTES)
    except FileNotFoundError:
        return None
    return _parse(path, data)


def read_next_snapshot(store: TableStore, consumer_id: str) -> int | None:
    """The consumer's ``nextSnapshot`` (None: no such consumer)."""
    return _read(store, consumer_path(store, consumer_id))


def write_next_snapshot(store: TableStore, consumer_id: str, next_snapshot: int) -> None:
    """Record (replace atomically) that the consumer reads ``next_snapshot`` next, in the bytes
    Paimon writes (``{\\n  "nextSnapshot" : N\\n}``)."""
    if isinstance(next_snapshot, bool) or not isinstance(next_snapshot, int) or next_snapshot < 1:
        raise ConfigurationError(f"next snapshot {next_snapshot!r} must be a snapshot id >= 1")
    path = consumer_path(store, consumer_id)
    fio = store.file_io
    fio.mkdirs(store.path(CONSUMER_DIR))
    fio.overwrite_atomic(path, f'{{\n  "nextSnapshot" : {int(next_snapshot)}\n}}'.encode())


def delete_consumer(store: TableStore, consumer_id: str) -> None:
    """Delete the consumer (nothing if there is none), as Paimon's ``deleteConsumer``."""
    store.file_io.delete(consumer_path(store, consumer_id))


def _files(store: TableStore) -> list[tuple[str, str]]:
    """``(id, path)`` of every consumer file, by id (temporary files skipped)."""
    directory = store.path(CONSUMER_DIR)
    names = store.file_io.list_names(directory)
    return sorted(
        (name[len(CONSUMER_PREFIX) :], join(directory, name))
        for name in names
        if name.startswith(CONSUMER_PREFIX)
        and len(name) > len(CONSUMER_PREFIX)
        and not name.endswith(".tmp")
    )


def list_consumers(store: TableStore, *, modified_since_ms: float | None = None) -> dict[str, int]:
    """``{id: nextSnapshot}`` of every consumer, by id (Paimon's ``ConsumerManager.consumers``,
    what ``$consumers`` shows); with ``modified_since_ms`` only those whose file was modified
    at or after it (the consumers ``consumer.expiration-time`` keeps alive). A file deleted
    while listing is left out; a malformed one is a :class:`CorruptMetadataError`."""
    out: dict[str, int] = {}
    for consumer_id, path in _files(store):
        if modified_since_ms is not None:
            try:
                if store.file_io.modified_ms(path) < modified_since_ms:
                    continue
            except FileNotFoundError:
                continue
        value = _read(store, path)
        if value is not None:
            out[consumer_id] = value
    return out


def _pattern(option: str, text: str | None) -> re.Pattern[str] | None:
    """``text`` compiled (None for None or blank, as Paimon treats a blank pattern)."""
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigurationError(f"{option} {text!r} is not a regular expression: {exc}") from None


def clear_consumers(
    store: TableStore, *, including: str | None = None, excluding: str | None = None
) -> list[str]:
    """Delete every consumer whose id matches ``including`` (default: every one) and does not
    match ``excluding``, each matched against the whole id (Paimon's ``clear_consumers``,
    ``Matcher.matches``); the deleted ids, sorted. Both patterns are checked before anything is
    deleted."""
    keep_in = _pattern("including", including)
    keep_out = _pattern("excluding", excluding)
    deleted = []
    for consumer_id, path in _files(store):
        if keep_in is not None and not keep_in.fullmatch(consumer_id):
            continue
        if keep_out is not None and keep_out.fullmatch(consumer_id):
            continue
        store.file_io.delete(path)
        deleted.append(consumer_id)
    return deleted


def expire_consumers(store: TableStore, expiration_ms: int, now_ms: float) -> list[str]:
    """Delete every consumer whose file was last modified before ``now_ms - expiration_ms``
    (Paimon's ``ConsumerManager.expire``, run before snapshot expiry so a stopped reader no
    longer holds it back); the deleted ids, sorted."""
    cutoff = now_ms - expiration_ms
    deleted = []
    for consumer_id, path in _files(store):
        try:
            modified = store.file_io.modified_ms(path)
        except FileNotFoundError:
            continue
        if modified < cutoff:
            store.file_io.delete(path)
            deleted.append(consumer_id)
    if deleted:
        log.info("expired consumers of %s (consumer.expiration-time): %s", store.root, deleted)
    return deleted


def reset_consumer(store: TableStore, consumer_id: str, next_snapshot: int | None) -> None:
    """Set the consumer to read ``next_snapshot`` next, or delete it (None), as Paimon's
    ``reset_consumer``. ``next_snapshot`` must be a snapshot still on storage, a snapshot whose
    changelog is kept, or the one after the latest (the consumer has read everything); anything
    else is a :class:`~lakeops.errors.SnapshotNotFoundError` and nothing changes."""
    check_consumer_id(consumer_id)
    if next_snapshot is None:
        delete_consumer(store, consumer_id)
        return
    if isinstance(next_snapshot, bool) or not isinstance(next_snapshot, int) or next_snapshot < 1:
        raise ConfigurationError(f"next_snapshot {next_snapshot!r} must be a snapshot id >= 1")
    latest = store.latest_snapshot_id() or 0
    if next_snapshot != latest + 1 and not store.snapshot_exists(next_snapshot):
        try:
            store.changelog(next_snapshot)
        except FileNotFoundError:
            raise SnapshotNotFoundError(
                f"cannot reset consumer {consumer_id!r} of {store.root} to snapshot "
                f"{next_snapshot}: it is not on storage (snapshots "
                f"{store.earliest_snapshot_id() or '-'}..{latest}; {latest + 1} = after the "
                "latest); nothing was changed",
                snapshot_id=next_snapshot,
            ) from None
    write_next_snapshot(store, consumer_id, next_snapshot)


def read_as_consumer(
    store: TableStore,
    consumer_id: str,
    from_snapshot: int,
    to_snapshot: int | None,
    read: Callable[[int, int], T],
) -> T:
    """``read(start, end)`` (the changes after snapshot ``start`` up to ``end``) for consumer
    ``consumer_id``, then recorded (see the module docstring): ``start`` is the consumer's
    ``nextSnapshot - 1`` where its file exists, else ``from_snapshot``; ``end`` is
    ``to_snapshot`` (default the latest). Once ``read`` returns, the consumer records
    ``nextSnapshot = end + 1``. A consumer already past ``end`` reads nothing
    (``read(end, end)``) and stays where it is. If ``read`` raises, the consumer is unchanged;
    a consumer whose next snapshot has expired (a
    :class:`~lakeops.errors.SnapshotExpiredError`) is named, with how to move it."""
    next_snapshot = read_next_snapshot(store, consumer_id)
    start = from_snapshot if next_snapshot is None else next_snapshot - 1
    end = (store.latest_snapshot_id() or 0) if to_snapshot is None else to_snapshot
    if next_snapshot is not None and start > end:
        return read(end, end)
    try:
        result = read(start, end)
    except SnapshotExpiredError as exc:
        if next_snapshot is None:
            raise
        first = store.earliest_snapshot_id() or end + 1
        raise SnapshotExpiredError(
            f"consumer {consumer_id!r} reads snapshot {next_snapshot} next, whose changes have "
            f"expired ({exc}); the consumer is unchanged — move it with "
            f"reset_consumer({consumer_id!r}, next_snapshot=...) (e.g. {first}, skipping what "
            "expired) or delete it to start afresh",
            snapshot_id=exc.snapshot_id,
        ) from exc
    write_next_snapshot(store, consumer_id, end + 1)
    return result
