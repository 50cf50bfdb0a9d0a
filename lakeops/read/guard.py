"""Expiry under a read, told apart from corruption.

A read plans on one snapshot and then reads the manifests and data files it names. Snapshot
expiry may remove that snapshot — and the files only it referenced — while the read runs; the
read then finds a file missing. That is not corruption: the table is healthy and a new read
succeeds. A file is missing *because of corruption* only while a snapshot that still lives (a
retained one at or after ``EARLIEST``, a tag's or a branch's) references it.

:func:`guard_read` and :func:`guard_batches` run a read and, when it finds a file missing, ask
whether the snapshots it planned on are still held: if all are, the missing file is real
corruption and the original error (which names the file and the way out) is raised; if one is
not, a :class:`~lakeops.errors.SnapshotExpiredError` says the read must be done again — never a
restore or a rollback, which would discard newer commits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from lakeops.errors import (
    CommitConflictError,
    CorruptTableError,
    MissingDataFileError,
    MissingMetadataError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore
from lakeops.store.keep_alive import protected_snapshots

__all__ = [
    "EXPIRED_RETRIES",
    "at_latest",
    "guard_batches",
    "guard_read",
    "planned_on",
    "lost_race",
    "replaced_meanwhile",
    "still_held",
]

T = TypeVar("T")

#: what a read raises when a file it planned on is gone
_MISSING = (MissingDataFileError, MissingMetadataError)
#: how many more times :func:`at_latest` reads when expiry removed the snapshot it was reading
EXPIRED_RETRIES = 3

log = logging.getLogger(__name__)


def _key(s: Snapshot) -> tuple[int, str, str]:
    return (s.id, s.base_manifest_list, s.delta_manifest_list)


def planned_on(snapshot: Snapshot | None) -> list[Snapshot]:
    """The snapshots a read of ``snapshot`` plans on (none for an empty table)."""
    return [] if snapshot is None else [snapshot]


def still_held(store: TableStore, snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is still alive: the retained snapshot of its id (at or after
    ``EARLIEST``, with the same manifest lists), or a tag's or a branch's snapshot."""
    earliest = store.earliest_snapshot_id()
    if earliest is not None and snapshot.id >= earliest:
        try:
            current = store.snapshot(snapshot.id)
        except SnapshotNotFoundError:
            current = None
        if current is not None and _key(current) == _key(snapshot):
            return True
    return any(_key(s) == _key(snapshot) for s in protected_snapshots(store))


def _explain(
    store: TableStore, planned: Sequence[Snapshot], error: CorruptTableError
) -> SnapshotExpiredError | None:
    """A :class:`SnapshotExpiredError` when one of ``planned`` is no longer held, else None."""
    for snapshot in planned:
        if not still_held(store, snapshot):
            gone = getattr(error, "path", None) or "a file it references"
            return SnapshotExpiredError(
                f"snapshot {snapshot.id} of table {store.root}, which this read was planned "
                f"on, was expired while the read ran ({gone} is gone). Nothing is wrong with the "
                "table and nothing needs restoring or rolling back: read again (it plans on a "
                "retained snapshot); to keep a snapshot readable for long reads, tag it or "
                "raise snapshot.time-retained",
                snapshot_id=snapshot.id,
            )
    return None


def guard_read(store: TableStore, planned: Sequence[Snapshot], read: Callable[[], T]) -> T:
    """``read()``; a file found missing while one of the snapshots it ``planned`` on is no
    longer held becomes a :class:`SnapshotExpiredError` (see the module docstring)."""
    try:
        return read()
    except _MISSING as exc:
        expired = _explain(store, planned, exc)
        if expired is not None:
            raise expired from exc
        raise


def guard_batches(
    store: TableStore, planned: Sequence[Snapshot], batches: Iterator[T]
) -> Iterator[T]:
    """``batches``, read lazily as :func:`guard_read` reads (a streaming read)."""
    try:
        yield from batches
    except _MISSING as exc:
        expired = _explain(store, planned, exc)
        if expired is not None:
            raise expired from exc
        raise


def replaced_meanwhile(
    store: TableStore, before: Snapshot | None, error: CorruptTableError
) -> bool:
    """Whether ``error`` — a file found missing by work (a compaction) planned on the latest
    snapshot, which was ``before`` or a later one when the work began — comes from other jobs,
    not corruption: another commit replaced the file and an expiry deleted it. So only when
    ``before`` is no longer held (expiry removes the oldest snapshots first: while ``before``
    lives, so does every later one, and a file one of them names cannot be missing), a later
    snapshot exists, and, for a data file, the latest snapshot no longer names it."""
    if before is None or still_held(store, before):
        return False
    latest = store.latest_snapshot()
    if latest is None or latest.id <= before.id:
        return False
    path = getattr(error, "path", None)
    if isinstance(error, MissingDataFileError) and path:
        name = str(path).rsplit("/", 1)[-1]
        return all(e.file.file_name != name for e in store.live_entries(latest))
    return True


def at_latest(store: TableStore, read: Callable[[Snapshot | None], T]) -> T:
    """``read(the latest snapshot)``, read again on the then latest snapshot — at most
    :data:`EXPIRED_RETRIES` more times — when it raises :class:`SnapshotExpiredError` because
    expiry removed the snapshot it was reading (every Paimon writer expires after its commit,
    so a read of a busy table can lose its snapshot). ``read`` must publish nothing (a change
    commits after it has read)."""
    retries = 0
    while True:
        try:
            return read(store.latest_snapshot())
        except SnapshotExpiredError as exc:
            if retries == EXPIRED_RETRIES:
                raise
            retries += 1
            log.warning("%s: %s; reading the latest snapshot again", store.root, exc)


def lost_race(
    store: TableStore, before: Snapshot | None, error: BaseException, what: str = "compaction"
) -> CommitConflictError | None:
    """For a rewrite (a compaction, ``what``) planned on the latest snapshot when it began
    (``before`` or later) that failed with ``error``: a :class:`CommitConflictError` saying it
    lost a race, where ``error`` is a missing file :func:`replaced_meanwhile` blames on another
    job's commit and an expiry; None otherwise (the error stands)."""
    if not isinstance(error, _MISSING) or not replaced_meanwhile(store, before, error):
        return None
    return CommitConflictError(
        f"table {store.root}: another job compacted files this {what} read and an expiry "
        "deleted them meanwhile (the snapshot it was planned on is expired); nothing was "
        "committed and its new files were deleted. Nothing is wrong with the table: run the "
        f"{what} again"
    )
