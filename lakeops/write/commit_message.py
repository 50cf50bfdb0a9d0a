"""Commit messages: what a writer hands to the committer (picklable, so Spark can ship them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lakeops.spec.data_file import DataFileMeta

__all__ = ["CommitMessage"]


@dataclass(frozen=True)
class CommitMessage:
    """New (and, for compactions, removed) files of one (partition, bucket).

    Attributes:
        partition: the serialized partition BinaryRow (as in manifests).
        bucket: bucket number.
        total_buckets: the table's bucket count when written.
        new_files: files to ADD.
        deleted_files: files to DELETE (compaction inputs); empty for plain writes.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = field(default=())

    @property
    def is_empty(self) -> bool:
        return not self.new_files and not self.deleted_files
