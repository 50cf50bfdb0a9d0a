"""Rollback as a commit: a new snapshot whose live files are those of an older one.

Paimon's own rollback deletes the newer snapshots and lets the next commit take their ids. That
reuses snapshot ids, hides concurrent writers' snapshots and deletes files that published
snapshots (and the readers on them) still reference. lakeops rolls back forward instead: it
publishes snapshot N+1 as an ``OVERWRITE`` whose delta deletes every file live in N but not in
the target and re-adds every file live in the target but not in N (the target's index files
likewise), through the same exclusive, re-planned commit as every write. A writer that commits
afterwards builds on the rolled-back state; one that publishes first makes the rollback re-plan
on top of it. The newer snapshots stay, readable, until expiry removes them; no file is deleted
here.
"""

from __future__ import annotations

from lakeops.commit.committer import Committer, PlannedChange
from lakeops.errors import LakeopsError
from lakeops.options import TableOptions
from lakeops.spec.index_manifest import IndexManifestEntry
from lakeops.spec.manifest import FileKind, ManifestEntry
from lakeops.spec.schema import TableSchema
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore, fold_entries

__all__ = ["holds", "rollback_to"]


def rollback_to(
    store: TableStore, schema: TableSchema, options: TableOptions, snapshot_id: int
) -> Snapshot | None:
    """Publish a snapshot with the contents of ``snapshot_id``; returns it, or None when the
    latest snapshot already has exactly those files."""
    if not store.snapshot_exists(snapshot_id):
        ids = store.snapshot_ids()
        raise LakeopsError(
            f"cannot roll back to snapshot {snapshot_id}: it does not exist "
            f"(snapshots {ids[0] if ids else None}..{ids[-1] if ids else None})"
        )
    target = store.snapshot(snapshot_id)
    wanted = fold_entries(store.live_entries(target))
    wanted_index = {_index_key(e): e for e in store.index_entries(target)}
    nothing = PlannedChange(())

    def plan(latest: Snapshot | None) -> PlannedChange:
        now = fold_entries(store.live_entries(latest))
        entries = [_as(FileKind.DELETE, e) for key, e in now.items() if key not in wanted]
        entries += [_as(FileKind.ADD, e) for key, e in wanted.items() if key not in now]
        now_index = {_index_key(e): e for e in store.index_entries(latest)}
        index = [
            IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file)
            for key, e in now_index.items()
            if key not in wanted_index
        ]
        index += [
            IndexManifestEntry(FileKind.ADD, e.partition, e.bucket, e.file)
            for key, e in wanted_index.items()
            if key not in now_index
        ]
        if not entries and not index:
            return nothing
        return PlannedChange(entries, (), index)

    committer = Committer(store, schema, options)
    latest = store.latest_snapshot()
    if plan(latest) is nothing:
        return None
    return committer.commit_planned(plan, "OVERWRITE")


def _as(kind: int, e: ManifestEntry) -> ManifestEntry:
    return ManifestEntry(kind, e.partition, e.bucket, e.total_buckets, e.file)


def _index_key(e: IndexManifestEntry) -> tuple[bytes, int, str, str]:
    return (e.partition, e.bucket, e.file.index_type, e.file.file_name)


def holds(store: TableStore, snapshot_id: int) -> bool:
    """Whether the latest snapshot already holds exactly the files of ``snapshot_id``."""
    if not store.snapshot_exists(snapshot_id):
        return False
    target, latest = store.snapshot(snapshot_id), store.latest_snapshot()
    same_files = (
        fold_entries(store.live_entries(target)).keys()
        == fold_entries(store.live_entries(latest)).keys()
    )
    return same_files and {_index_key(e) for e in store.index_entries(target)} == {
        _index_key(e) for e in store.index_entries(latest)
    }
