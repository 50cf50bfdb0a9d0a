"""What one snapshot changed: files and bytes added and removed (from its delta manifests)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from lakeops.format.manifest import FileKind
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.store import TableStore

__all__ = ["CommitStats", "commit_stats"]


@dataclass(frozen=True)
class CommitStats:
    """The data-file changes of one snapshot (a compaction's ``files_deleted`` are the files it
    rewrote; a level-only upgrade counts as one deleted and one added file of the same bytes)."""

    snapshot_id: int
    commit_kind: CommitKind
    files_added: int
    files_deleted: int
    bytes_added: int
    bytes_deleted: int
    rows_added: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def commit_stats(store: TableStore, snapshot: Snapshot) -> CommitStats:
    """Count the ADD and DELETE entries of ``snapshot``'s delta manifests."""
    added = [e.file for e in store.delta_entries(snapshot) if e.kind == FileKind.ADD]
    deleted = [e.file for e in store.delta_entries(snapshot) if e.kind == FileKind.DELETE]
    return CommitStats(
        snapshot_id=snapshot.id,
        commit_kind=snapshot.commit_kind,
        files_added=len(added),
        files_deleted=len(deleted),
        bytes_added=sum(f.file_size for f in added),
        bytes_deleted=sum(f.file_size for f in deleted),
        rows_added=sum(f.row_count for f in added),
    )
