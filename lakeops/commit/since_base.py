"""What other commits did to a table since a writer's base snapshot.

A writer plans against one snapshot (its *base*): it takes each bucket's next sequence number
from the files live there, and the bucket (dynamic buckets) or partition (cross-partition
updates) of every known key from the index or the data there. When it commits on top of a newer
snapshot, the committer asks what happened in between:

* :func:`sequence_ceilings` — per (partition, bucket), the largest sequence number of any file
  another commit added since the base: the writer's records must sort above it;
* :func:`index_changed` — the partitions whose HASH index files other commits replaced;
* :func:`data_committed` — whether any other commit since the base added or removed rows;
* :func:`replaced_since` — whether one of them was an ``OVERWRITE`` (a rollback is one).

They read the snapshots after the base and their delta manifests. When one of those is gone
(expired), or there are too many to read cheaply, :func:`sequence_ceilings` answers from the
latest snapshot's live files instead (always correct, only slower) and the others answer None
("cannot tell"), which callers treat as a conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.store import TableStore

__all__ = [
    "MAX_DELTAS",
    "data_committed",
    "index_changed",
    "partitions_changed",
    "replaced_since",
    "sequence_ceilings",
    "since",
]

#: beyond this many newer snapshots the latest snapshot's live files are read instead
MAX_DELTAS = 32


def since(store: TableStore, base_id: int | None, latest: Snapshot | None) -> list[Snapshot] | None:
    """The snapshots after ``base_id`` up to ``latest``, oldest first; None when they cannot all
    be read (no base known, one expired, more than :data:`MAX_DELTAS`, or a latest snapshot
    older than the base: Paimon's own rollback deletes snapshots and lets their ids be taken
    again, so what happened since the base is unknown)."""
    if latest is None:
        return []
    if base_id is None or latest.id - base_id > MAX_DELTAS or latest.id < base_id:
        return None
    out = []
    for sid in range(base_id + 1, latest.id):
        if not store.snapshot_exists(sid):
            return None
        try:
            out.append(store.snapshot(sid))
        except Exception:
            if store.snapshot_exists(sid):
                raise
            return None  # expired while read
    return [*out, latest] if latest.id > base_id else []


def _delta_entries(store: TableStore, snapshots: list[Snapshot]) -> list[ManifestEntry] | None:
    entries: list[ManifestEntry] = []
    for s in snapshots:
        try:
            entries.extend(store.delta_entries(s))
        except FileNotFoundError:
            return None  # its manifests were expired meanwhile
    return entries


def sequence_ceilings(
    store: TableStore,
    base_id: int | None,
    latest: Snapshot | None,
    buckets: Collection[tuple[bytes, int]],
) -> dict[tuple[bytes, int], int]:
    """For each of ``buckets`` (serialized partition, bucket) holding files another commit added
    after ``base_id``: the largest sequence number in them. Without a readable history, the
    largest in each bucket's live files of ``latest``."""
    wanted = set(buckets)
    snapshots = since(store, base_id, latest)
    entries = None if snapshots is None else _delta_entries(store, snapshots)
    if entries is None:
        entries = store.live_entries(latest)
    out: dict[tuple[bytes, int], int] = {}
    for e in entries:
        where = (e.partition, e.bucket)
        if e.kind == FileKind.ADD and where in wanted:
            out[where] = max(out.get(where, -1), e.file.max_sequence_number)
    return out


def index_changed(
    store: TableStore,
    base_index: str | None,
    latest: Snapshot | None,
    partitions: Collection[bytes],
) -> set[bytes] | None:
    """Which of ``partitions`` have other index files in ``latest`` than in the base, whose
    index manifest was ``base_index``; None when the base's index manifest is gone."""
    now_name = latest.index_manifest if latest else None
    if now_name == base_index:
        return set()
    try:
        before = _index_files(store.index_manifest_entries(base_index), partitions)
    except FileNotFoundError:
        return None
    now = _index_files(store.index_manifest_entries(now_name), partitions)
    return {p for p in partitions if now.get(p, set()) != before.get(p, set())}


def _index_files(
    entries: list[IndexManifestEntry], partitions: Collection[bytes]
) -> dict[bytes, set[str]]:
    wanted = set(partitions)
    out: dict[bytes, set[str]] = {}
    for e in entries:
        if e.partition in wanted:
            out.setdefault(e.partition, set()).add(e.file.file_name)
    return out


def replaced_since(store: TableStore, base_id: int | None, latest: Snapshot | None) -> bool | None:
    """Whether a commit after ``base_id`` was an ``OVERWRITE`` (a partition or table
    overwrite, or a rollback: the only commits that take keys out of a key index); None when
    the history cannot be read."""
    snapshots = since(store, base_id, latest)
    if snapshots is None:
        return None
    return any(s.commit_kind == CommitKind.OVERWRITE for s in snapshots)


def data_committed(store: TableStore, base_id: int | None, latest: Snapshot | None) -> bool | None:
    """Whether a commit after ``base_id`` changed rows (any kind but ``COMPACT``, which only
    rewrites them); None when the history cannot be read."""
    snapshots = since(store, base_id, latest)
    if snapshots is None:
        return None
    return any(s.commit_kind != CommitKind.COMPACT for s in snapshots)


def partitions_changed(
    store: TableStore, base_id: int, latest: Snapshot | None, partitions: Callable[[bytes], bool]
) -> bool | None:
    """Whether a commit after ``base_id`` other than a ``COMPACT`` (which only rewrites rows)
    added or removed files of a partition ``partitions`` accepts; None when the history cannot
    be read."""
    snapshots = since(store, base_id, latest)
    if snapshots is None:
        return None
    changed = [s for s in snapshots if s.commit_kind != CommitKind.COMPACT]
    entries = _delta_entries(store, changed)
    if entries is None:
        return None
    return any(partitions(e.partition) for e in entries)
