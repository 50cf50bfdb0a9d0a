"""Snapshot ids only grow: did the ``snapshot-N`` a writer just created re-use an id?

An exclusive create of ``snapshot-N`` proves only that no file had that name *at that moment*.
A writer that planned on ``N-1`` and stalled before its create finds the name free again when
others published ``N``, ``N+1``, … meanwhile and expiry deleted ``N``: its create succeeds, and
the table would have an old id newer than a higher one. So, after every win, the committer asks
:func:`verify_new_id` whether an id ``>= N`` existed before its create, and withdraws the file
when one did (see docs/commit-protocol.md for the argument in full).

The facts it rests on: snapshots are published with contiguous ids (each is the latest plus
one, and the latest is read before it is published), the newest snapshot is never expired,
expiry deletes snapshots oldest first, and lakeops's expiry moves ``EARLIEST`` past the ids it
deletes *before* it deletes them. Hence, for a create of ``N`` at time *t*:

* the id was re-used exactly when a former ``snapshot-N`` had been deleted before *t*; then
  ``N-1`` had been deleted before *t* too, ``EARLIEST`` was above ``N`` before *t* (it never
  moves back), and at every time after *t* a snapshot above ``N`` exists that was not built on
  the new file (the former ``N+1``, or what succeeded it);
* otherwise ``N-1`` existed at *t*, and every snapshot above ``N`` was built on the new file.

The verdict, from what is on storage after the create:

1. ``EARLIEST`` not above ``N`` and ``N-1`` present (or ``N`` is 1): :data:`IdVerdict.NEW`.
2. Else, ``snapshot-(N+1)`` present: NEW exactly when it was built on the new file — its base
   names this commit's own manifests, or (manifests merged) holds the same live files.
3. Else, ``EARLIEST`` not above ``N`` (``N-1`` was expired after the create, nothing above ``N``
   yet): NEW.
4. Else (``EARLIEST`` above ``N``, no ``N+1``): a snapshot built on the new file would have
   been expired before ``N+1`` went, with ``N`` itself; so the new file still there means the id
   was re-used (:data:`IdVerdict.REUSED`). The new file gone means the commit was built upon
   and expired — or that an expiry swept a re-used file below ``EARLIEST``: NEW when the latest
   snapshot still names one of this commit's manifests or holds one of the files it added
   (nothing else can), else :data:`IdVerdict.UNKNOWN`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence

from lakeops.errors import CorruptTableError, SnapshotNotFoundError
from lakeops.format.manifest import ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore, fold_entries

__all__ = ["IdVerdict", "verify_new_id"]


class IdVerdict(enum.Enum):
    """What :func:`verify_new_id` found."""

    #: the create was the first of its id: the commit stands
    NEW = "new"
    #: an id at or above the new one existed before the create: withdraw it and retry
    REUSED = "reused"
    #: what would tell has expired meanwhile: the commit's state is unknown
    UNKNOWN = "unknown"


def verify_new_id(
    store: TableStore,
    snapshot: Snapshot,
    *,
    own_manifests: Sequence[str],
    live: Callable[[], Iterable[ManifestEntry]],
    added: Callable[[], Iterable[str]],
    still_ours: Callable[[], bool | None],
) -> IdVerdict:
    """Whether ``snapshot``, just created exclusively by this process, re-used an id (see the
    module docstring).

    ``own_manifests``: the data manifests only this commit wrote (its delta); ``live``: the
    live files of the new snapshot (its base and delta folded), read only when a successor
    merged manifests; ``added``: the names of the files this commit added; ``still_ours``:
    whether ``snapshot-N`` on storage is still this commit's
    (None: cannot tell)."""
    n = snapshot.id
    earliest = store.earliest_hint()
    announced = earliest is not None and earliest > n
    if not announced and (n == 1 or store.snapshot_exists(n - 1)):
        return IdVerdict.NEW
    try:
        successor: Snapshot | None = store.snapshot(n + 1)
    except SnapshotNotFoundError:
        successor = None
    except CorruptTableError:
        return IdVerdict.UNKNOWN
    if successor is not None:
        built = _built_on(store, successor, own_manifests, live)
        if built is None:
            return IdVerdict.UNKNOWN
        return IdVerdict.NEW if built else IdVerdict.REUSED
    if not announced:
        return IdVerdict.NEW
    ours = still_ours()
    if ours:
        return IdVerdict.REUSED
    if ours is None or not _descends(store, own_manifests, added):
        return IdVerdict.UNKNOWN
    return IdVerdict.NEW


def _descends(
    store: TableStore, own_manifests: Sequence[str], added: Callable[[], Iterable[str]]
) -> bool:
    """Whether the latest snapshot names one of ``own_manifests`` or holds a file this commit
    added (unique names: only a snapshot built on the new one can); False when unreadable."""
    try:
        latest = store.latest_snapshot()
        if latest is None:
            return False
        if set(own_manifests) & {m.file_name for m in store.data_manifests(latest)}:
            return True
        files = set(added())
        return any(e.file.file_name in files for e in store.live_entries(latest))
    except (FileNotFoundError, CorruptTableError):
        return False


def _built_on(
    store: TableStore,
    successor: Snapshot,
    own_manifests: Sequence[str],
    live: Callable[[], Iterable[ManifestEntry]],
) -> bool | None:
    """Whether ``successor`` was planned on the new snapshot (None: its base is unreadable).

    A manifest this commit wrote is named by nothing but the new snapshot, so a base naming
    them was planned on it; a base whose manifests were merged is compared by its live files."""
    try:
        metas = store.manifest_list(successor.base_manifest_list)
        names = [m.file_name for m in metas]
        if own_manifests and set(own_manifests) <= set(names):
            return True
        theirs = fold_entries(e for name in names for e in store.manifest(name))
        return theirs.keys() == fold_entries(live()).keys()
    except (FileNotFoundError, CorruptTableError):
        return None
