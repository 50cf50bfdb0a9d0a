"""Exactly-once commits: whether a commit is already in the table's history, and what a skipped
commit leaves behind.

A writer that may run a commit twice (a retried Airflow task, a replayed Spark micro-batch, a
caller retrying after :class:`~lakeops.errors.CommitStateUnknownError`) commits under a stable
*commit user* with a *commit identifier* that grows with each of its commits (Paimon's batch
commits use ``Long.MAX_VALUE``). As Paimon's ``FileStoreCommitImpl.filterCommitted``, a commit
is already in the history when the newest snapshot of its commit user (scanning back from the
latest snapshot) has an identifier at or above the commit's; only that newest snapshot is
consulted.

Limit (Paimon has the same one): the scan sees only retained snapshots. When expiry removed
every snapshot of the commit user, the earlier commit can no longer be found and a retry
commits again. Paimon's default retention (``snapshot.num-retained.min`` 10,
``snapshot.time-retained`` 1 h) keeps a snapshot for an hour at least.

The scan reads one snapshot per retained snapshot newer than the user's newest one (a user
that never committed reads every retained snapshot), a few at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from lakeops.commit.confine import entry_paths_with_extras, index_paths
from lakeops.errors import SnapshotNotFoundError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.parallel import imap_ordered
from lakeops.store import TableStore
from lakeops.store.context import TableContext

__all__ = [
    "already_committed",
    "discard_uncommitted_files",
    "latest_snapshot_of_user",
    "snapshots_of_user",
]

#: snapshots read at once while scanning back for a commit user
_SCAN_PARALLELISM = 8


def snapshots_of_user(store: TableStore, commit_user: str) -> Iterator[Snapshot]:
    """The retained snapshots of ``commit_user``, newest first (scanning back from the latest
    snapshot). A snapshot that cannot be read ends the scan when expiry removed it meanwhile
    (it is older than the new earliest snapshot); otherwise its error is raised, since a
    snapshot of the user may be the one that cannot be read."""
    latest = store.latest_snapshot_id()
    earliest = store.earliest_snapshot_id()
    if latest is None or earliest is None:
        return

    def read(snapshot_id: int) -> Snapshot | Exception:
        try:
            return store.snapshot(snapshot_id)
        except Exception as exc:  # judged in order, below
            return exc

    step = _SCAN_PARALLELISM * 4
    for top in range(latest, earliest - 1, -step):
        ids = list(range(top, max(top - step, earliest - 1), -1))
        for snapshot_id, result in zip(
            ids, imap_ordered(read, ids, _SCAN_PARALLELISM), strict=True
        ):
            if isinstance(result, Exception):
                now_earliest = store.earliest_snapshot_id()
                if isinstance(result, SnapshotNotFoundError) and (
                    now_earliest is None or snapshot_id < now_earliest
                ):
                    return  # expired while scanning: every older one is gone too
                raise result
            if result.commit_user == commit_user:
                yield result


def latest_snapshot_of_user(store: TableStore, commit_user: str) -> Snapshot | None:
    """The newest retained snapshot of ``commit_user`` (None if it has none)."""
    return next(snapshots_of_user(store, commit_user), None)


def already_committed(
    store: TableStore, commit_user: str, commit_identifier: int
) -> Snapshot | None:
    """The newest snapshot of ``commit_user`` when its identifier is at or above
    ``commit_identifier`` — the commit is then already in the history — else None."""
    newest = latest_snapshot_of_user(store, commit_user)
    if newest is not None and newest.commit_identifier >= commit_identifier:
        return newest
    return None


def discard_uncommitted_files(
    context: TableContext,
    messages: Sequence[CommitMessage],
    commit_user: str,
    commit_identifier: int,
) -> int:
    """Delete the files ``messages`` add (new data, changelog, compaction outputs, index
    files) that no snapshot of ``commit_user`` with ``commit_identifier`` names: the files of
    an attempt whose commit is skipped. Messages that were themselves committed (a caller
    retrying the same messages) keep every file. Returns how many files were deleted."""
    added: list[tuple[str, ManifestEntry | IndexManifestEntry]] = []
    for m in messages:
        kept = {f.file_name for f in m.compact_before}  # an upgrade keeps its file's name
        for f in (*m.new_files, *m.changelog_files, *m.compact_after, *m.compact_changelog_files):
            if f.file_name not in kept:
                added.append(
                    (
                        f.file_name,
                        ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f),
                    )
                )
        for i in m.new_index_files:
            added.append((i.file_name, IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, i)))
        for e in m.compact_index_changes:
            if e.kind == FileKind.ADD:
                added.append((e.file.file_name, e))
    if not added:
        return 0
    committed = _names_committed(context.store, commit_user, commit_identifier)
    locations = context.locations
    doomed = [
        *entry_paths_with_extras(
            locations, [e for n, e in added if isinstance(e, ManifestEntry) and n not in committed]
        ),
        *index_paths(
            locations,
            [e for n, e in added if isinstance(e, IndexManifestEntry) and n not in committed],
        ),
    ]
    for path in doomed:
        context.store.file_io.delete(path)
    return len(doomed)


def _names_committed(store: TableStore, commit_user: str, commit_identifier: int) -> set[str]:
    """Names of the data, changelog and index files the retained snapshots of ``commit_user``
    with ``commit_identifier`` name (what its earlier commit added)."""
    names: set[str] = set()
    for snapshot in snapshots_of_user(store, commit_user):
        if snapshot.commit_identifier != commit_identifier:
            continue
        names.update(e.file.file_name for e in store.delta_entries(snapshot))
        names.update(e.file.file_name for e in store.changelog_entries(snapshot))
        names.update(e.file.file_name for e in store.index_entries(snapshot))
    return names
