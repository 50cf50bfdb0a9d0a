"""Time travel: the snapshot a read (or a rollback) of a table is to see.

One resolver for every entry point (``Table.read``/``splits``/``rollback_to``, and the Spark data
source's ``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis``):

* by snapshot id — that snapshot; once it expired, a tag of it still serves it;
* by tag — the tagged snapshot, whether or not the snapshot itself is still retained;
* by time (Paimon's ``scan.timestamp-millis``) — the newest snapshot committed at or before
  that time (``timeMillis <= t``), among the retained snapshots and the tagged ones. A time before
  the table's first snapshot (snapshot 1, never expired) sees the empty table (None). A time
  whose snapshot cannot be told any more — before the earliest retained snapshot, where expired
  snapshots that no tag keeps may have been the answer — is a :class:`SnapshotNotFoundError`,
  never a guess (Paimon 0.9 answers the earliest snapshot there; master answers nothing).
"""

from __future__ import annotations

import datetime as dt

from lakeops.errors import ConfigurationError, SnapshotNotFoundError
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore
from lakeops.store.tags import get_tag, list_tags

__all__ = ["AsOf", "as_of_millis", "resolve_snapshot", "snapshot_at"]

#: a point in time: a datetime (naive = local time, as Paimon's ``scan.timestamp``) or epoch ms
AsOf = dt.datetime | int


def as_of_millis(as_of: AsOf) -> int:
    """Epoch milliseconds of ``as_of``: an ``int`` is taken as epoch milliseconds (Paimon's
    ``scan.timestamp-millis``); an aware ``datetime`` is exact, a naive one is local time."""
    if isinstance(as_of, bool) or not isinstance(as_of, dt.datetime | int):
        raise ConfigurationError(
            f"as_of must be a datetime or epoch milliseconds (int), not {type(as_of).__name__}"
        )
    if isinstance(as_of, dt.datetime):
        return int(as_of.timestamp() * 1000)
    return as_of


def snapshot_at(store: TableStore, millis: int) -> Snapshot | None:
    """The newest snapshot committed at or before ``millis`` (see the module docstring);
    None when the table had no snapshot then."""
    latest = store.latest_snapshot_id()
    earliest = store.earliest_snapshot_id()
    retained: Snapshot | None = None
    if latest is not None and earliest is not None:
        lo, hi = earliest, latest  # binary search: Paimon's snapshot times grow with the id
        while lo <= hi:
            mid = (lo + hi) // 2
            snapshot = store.snapshot(mid)
            if snapshot.time_millis <= millis:
                retained, lo = snapshot, mid + 1
            else:
                hi = mid - 1
    tagged = {t.snapshot.id: t.snapshot for t in list_tags(store)}
    older = [
        s
        for i, s in tagged.items()
        if (earliest is None or i < earliest) and s.time_millis <= millis
    ]
    found = max([*older, *([retained] if retained else [])], key=lambda s: s.id, default=None)
    known = sorted({*tagged, *(range(earliest, latest + 1) if earliest and latest else ())})
    when = f"{millis} ({dt.datetime.fromtimestamp(millis / 1000, dt.UTC):%Y-%m-%d %H:%M:%S.%f} UTC)"
    if found is None:
        if not known or known[0] == 1:
            return None  # before the first snapshot: the table was empty
        raise SnapshotNotFoundError(
            f"no snapshot of table {store.root} at or before {when} is kept: the earliest "
            f"snapshot kept is {known[0]}, and those before it expired (tag a snapshot to keep "
            "it for time travel)",
            snapshot_id=None,
        )
    if found.id == latest or found.id + 1 in known:
        return found
    after = min(i for i in known if i > found.id)
    raise SnapshotNotFoundError(
        f"the snapshot of table {store.root} at {when} cannot be told: tagged snapshot "
        f"{found.id} is older, and the snapshots after it up to {after} "
        "expired (read the tag, or a snapshot id, instead)",
        snapshot_id=None,
    )


def resolve_snapshot(
    store: TableStore,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    as_of: AsOf | None = None,
) -> Snapshot | None:
    """The snapshot to read: by ``snapshot_id``, ``tag`` or ``as_of`` (at most one), else the
    latest. None when there is nothing to read (no snapshot, or none yet at ``as_of``)."""
    given = [
        n
        for n, v in (("snapshot_id", snapshot_id), ("tag", tag), ("as_of", as_of))
        if v is not None
    ]
    if len(given) > 1:
        raise ConfigurationError(
            f"time travel takes one of snapshot_id, tag and as_of, not {given}"
        )
    if tag is not None:
        return get_tag(store, tag).snapshot
    if as_of is not None:
        return snapshot_at(store, as_of_millis(as_of))
    if snapshot_id is None:
        return store.latest_snapshot()
    if not store.snapshot_exists(snapshot_id):
        held = next((t for t in list_tags(store) if t.snapshot.id == snapshot_id), None)
        if held is not None:
            return held.snapshot
    return store.snapshot(snapshot_id)
