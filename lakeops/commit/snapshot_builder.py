"""The next snapshot, computed without I/O: what a commit publishes on top of the latest one.

Everything here is a pure function of its arguments — no storage, no clock (the commit time is a
parameter) — so the snapshot a commit produces can be checked against a plain model without a
table. The committer (:mod:`lakeops.commit.committer`) does the I/O: it writes the manifests
and manifest lists these functions describe, publishes the snapshot exclusively and retries.

* :func:`next_snapshot` — ids, total/delta record counts, changelog count, the index manifest
  the new snapshot names;
* :func:`manifest_file_meta` — the manifest-list record of one written manifest;
* :func:`overwrite_change` — an ``OVERWRITE`` on the given live files;
* :func:`check_deletes_live`, :func:`base_is_stale`, :func:`new_base_manifests` — the
  decisions of one commit attempt (the pauses between attempts: :mod:`lakeops.commit.retry`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from lakeops.errors import CommitConflictError, CommitError
from lakeops.format import binary_row
from lakeops.format.data_file import SimpleStats
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.format.types import DataType

__all__ = [
    "CommitLists",
    "PlannedChange",
    "base_is_stale",
    "check_deletes_live",
    "has_deletes",
    "manifest_file_meta",
    "new_base_manifests",
    "next_snapshot",
    "next_snapshot_id",
    "overwrite_change",
    "partition_stats",
    "record_delta",
]


@dataclass(frozen=True)
class PlannedChange:
    """What one commit attempt publishes: data-file entries (ADD/DELETE), changelog entries
    (ADD) and index-file changes (ADD/DELETE). ``next_row_id``: a row-tracking table's
    ``nextRowId`` after the change (:mod:`lakeops.commit.row_ids`; None: the latest
    snapshot's is carried forward)."""

    entries: Sequence[ManifestEntry]
    changelog: Sequence[ManifestEntry] = ()
    index_changes: Sequence[IndexManifestEntry] = ()
    next_row_id: int | None = None


@dataclass(frozen=True)
class CommitLists:
    """The manifest lists one commit attempt wrote, by name and size in bytes.

    ``changelog``/``changelog_size`` are set exactly when the change has changelog entries.
    ``index_manifest`` is the index manifest written for the change's index changes (None when
    none was written: no index change, or no index file stays live after them).
    """

    base: str
    base_size: int
    delta: str
    delta_size: int
    changelog: str | None = None
    changelog_size: int | None = None
    index_manifest: str | None = None


def next_snapshot_id(latest: Snapshot | None) -> int:
    """The id a commit on ``latest`` publishes: ids start at 1 and grow by one."""
    return latest.id + 1 if latest is not None else 1


def record_delta(entries: Iterable[ManifestEntry]) -> int:
    """Rows the entries add minus rows they delete (Paimon's ``deltaRecordCount``)."""
    added = removed = 0
    for e in entries:
        if e.kind == FileKind.ADD:
            added += e.file.row_count
        elif e.kind == FileKind.DELETE:
            removed += e.file.row_count
    return added - removed


def next_snapshot(
    latest: Snapshot | None,
    change: PlannedChange,
    lists: CommitLists,
    *,
    commit_kind: CommitKind,
    commit_identifier: int,
    schema_id: int,
    commit_user: str,
    time_millis: int,
    watermark: int | None = None,
) -> Snapshot:
    """The snapshot that publishes ``change`` on top of ``latest`` (None: the table is empty).

    * ``id`` is the latest id + 1 (1 for the first commit);
    * ``deltaRecordCount`` is the rows the entries add minus those they delete, and
      ``totalRecordCount`` the latest total plus that delta;
    * ``changelogRecordCount`` is the changelog's rows when it has entries, else absent;
    * the index manifest is the one written for the change's index changes (``lists``), or the
      latest snapshot's own when the change has none;
    * ``watermark`` is the larger of the commit's and the latest snapshot's (either may be
      absent), as Paimon's commit carries it forward;
    * ``nextRowId`` is the change's (a row-tracking table's) or else the latest snapshot's.
    """
    if bool(change.changelog) != (lists.changelog is not None):
        raise CommitError("a changelog manifest list is needed exactly when there is a changelog")
    if not change.index_changes and lists.index_manifest is not None:
        raise CommitError("an index manifest was written for a change without index changes")
    delta = record_delta(change.entries)
    if change.index_changes:
        index_manifest = lists.index_manifest
    else:
        index_manifest = latest.index_manifest if latest is not None else None
    return Snapshot(
        id=next_snapshot_id(latest),
        schema_id=schema_id,
        base_manifest_list=lists.base,
        delta_manifest_list=lists.delta,
        commit_user=commit_user,
        commit_identifier=commit_identifier,
        # a plain string, as in snapshots read back (a member compares equal to it)
        commit_kind=cast(CommitKind, str(commit_kind)),
        time_millis=time_millis,
        total_record_count=(latest.total_record_count if latest is not None else 0) + delta,
        delta_record_count=delta,
        base_manifest_list_size=lists.base_size,
        delta_manifest_list_size=lists.delta_size,
        changelog_manifest_list=lists.changelog,
        changelog_manifest_list_size=lists.changelog_size,
        changelog_record_count=sum(e.file.row_count for e in change.changelog)
        if change.changelog
        else None,
        index_manifest=index_manifest,
        watermark=_watermark(watermark, latest.watermark if latest is not None else None),
        next_row_id=change.next_row_id
        if change.next_row_id is not None
        else (latest.next_row_id if latest is not None else None),
    )


def _watermark(given: int | None, latest: int | None) -> int | None:
    if given is None or latest is None:
        return latest if given is None else given
    return max(given, latest)


def manifest_file_meta(
    entries: Sequence[ManifestEntry],
    *,
    file_name: str,
    file_size: int,
    schema_id: int,
    partition_types: Sequence[DataType],
) -> ManifestFileMeta:
    """The manifest-list record of a manifest holding ``entries`` (at least one): file counts,
    partition statistics (min/max/null count per partition field), bucket and level ranges."""
    return ManifestFileMeta(
        file_name=file_name,
        file_size=file_size,
        num_added_files=sum(1 for e in entries if e.kind == FileKind.ADD),
        num_deleted_files=sum(1 for e in entries if e.kind == FileKind.DELETE),
        partition_stats=partition_stats(entries, partition_types),
        schema_id=schema_id,
        min_bucket=min(e.bucket for e in entries),
        max_bucket=max(e.bucket for e in entries),
        min_level=min(e.file.level for e in entries),
        max_level=max(e.file.level for e in entries),
        total_buckets=entries[0].total_buckets,
    )


def partition_stats(
    entries: Iterable[ManifestEntry], partition_types: Sequence[DataType]
) -> SimpleStats:
    """Min, max and null count of each partition field over the entries' partitions."""
    if not partition_types:
        return SimpleStats(binary_row.serialize([], []), binary_row.serialize([], []), ())
    values = [binary_row.deserialize(p, partition_types) for p in {e.partition for e in entries}]
    mins, maxs, nulls = [], [], []
    for i in range(len(partition_types)):
        present = [v[i] for v in values if v[i] is not None]
        mins.append(min(present) if present else None)
        maxs.append(max(present) if present else None)
        nulls.append(sum(1 for v in values if v[i] is None))
    return SimpleStats(
        binary_row.serialize(mins, partition_types),
        binary_row.serialize(maxs, partition_types),
        tuple(nulls),
    )


def overwrite_change(
    live: Iterable[ManifestEntry],
    live_index: Iterable[IndexManifestEntry],
    replaces: Callable[[bytes], bool],
    appends: Sequence[ManifestEntry],
    changelog: Sequence[ManifestEntry] = (),
    index_changes: Sequence[IndexManifestEntry] = (),
) -> PlannedChange:
    """Paimon's ``OVERWRITE``: DELETE every live file (and index file) whose serialized
    partition ``replaces`` accepts, then the new files and index changes."""
    replaced = [
        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
        for e in live
        if replaces(e.partition)
    ]
    dropped = [
        IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file)
        for e in live_index
        if replaces(e.partition)
    ]
    return PlannedChange([*replaced, *appends], changelog, [*dropped, *index_changes])


def has_deletes(entries: Iterable[ManifestEntry]) -> bool:
    """Whether the entries delete any file (only then must the live files be read)."""
    return any(e.kind == FileKind.DELETE for e in entries)


def check_deletes_live(
    entries: Iterable[ManifestEntry], live: Collection[tuple[bytes, int, int, str]]
) -> None:
    """Refuse (:class:`CommitConflictError`) entries that delete a file whose identifier is
    not in ``live`` (another job compacted or overwrote it since this commit was planned)."""
    gone = [
        e.file.file_name for e in entries if e.kind == FileKind.DELETE and e.identifier not in live
    ]
    if gone:
        raise CommitConflictError(
            f"files {gone[:3]} this commit replaces are no longer live (another job "
            "compacted or overwrote them); re-plan and retry"
        )


def base_is_stale(snapshot_id: int, earliest: int | None) -> bool:
    """Whether publishing ``snapshot_id`` must wait for a re-plan, given the ``EARLIEST`` hint.

    A snapshot newer than the commit's base exists or existed when ``EARLIEST`` is at or past
    ``snapshot_id``: that id may have been used (and expired) already, and ids only grow, so the
    commit re-plans on the new latest snapshot instead of publishing it. (A newer snapshot that
    still exists makes the exclusive publish fail anyway; one that was expired shows in
    ``EARLIEST``, which expiry moves before it deletes.)
    """
    return earliest is not None and earliest >= snapshot_id


def new_base_manifests(
    base: Iterable[ManifestFileMeta], latest_data: Iterable[ManifestFileMeta]
) -> list[str]:
    """The base manifests a lost attempt wrote itself (merged from ``latest_data``, the latest
    snapshot's data manifests): referenced by nothing published, so they can be deleted."""
    kept = {m.file_name for m in latest_data}
    return sorted({m.file_name for m in base} - kept)
