"""Commit messages: what a writer hands to the committer (picklable, so Spark can ship them)."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.format.data_file import DataFileMeta
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry

__all__ = ["CommitMessage"]


@dataclass(frozen=True)
class CommitMessage:
    """The changes of one (partition, bucket).

    Attributes:
        partition: the serialized partition BinaryRow (as in manifests).
        bucket: bucket number.
        total_buckets: the table's bucket count when written.
        new_files: files written from new data (committed as an ``APPEND`` snapshot).
        compact_before: files a compaction replaced (deleted in a ``COMPACT`` snapshot).
        compact_after: files a compaction produced, or upgraded to a new level.
        changelog_files: changelog of the new data (``changelog-producer=input``).
        compact_changelog_files: changelog a compaction produced (``lookup`` /
            ``full-compaction`` producers).
        new_index_files: the bucket's new complete HASH index file (dynamic-bucket tables),
            replacing its previous one when committed.
        compact_index_changes: index changes published with the compaction (``ADD`` and
            ``DELETE`` index manifest entries): an append table's deletion-vector index files
            rewritten without the vectors of the files it compacted away.
        base_snapshot_id: the snapshot the writer planned on (its sequence numbers, bucket
            assignments and compactions follow that snapshot's files): 0 for an empty table,
            None when unknown. The committer re-sequences or refuses the commit when other
            commits changed what the plan relied on since then.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_changelog_files: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexFileMeta, ...] = ()
    base_snapshot_id: int | None = None
    compact_index_changes: tuple[IndexManifestEntry, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            self.new_files
            or self.compact_before
            or self.compact_after
            or self.changelog_files
            or self.compact_changelog_files
            or self.new_index_files
            or self.compact_index_changes
        )
