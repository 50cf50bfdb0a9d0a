"""In-writer compaction: when a writer compacts its buckets, and what those compactions changed.

As Paimon's merge-tree writer does, unless ``write-only`` is set:

* after each flush of a bucket, the bucket's compaction strategy runs the units it picks until
  it is satisfied; if the bucket still has more sorted runs than
  ``num-sorted-run.stop-trigger``, it is compacted fully (back-pressure: the write waits);
* when a commit is prepared, every bucket is compacted fully if ``commit.force-compact`` is set
  or, with ``changelog-producer = full-compaction``, when the commit being prepared completes
  ``full-compaction.delta-commits`` appends since the last full compaction that produced a
  changelog (the changelog cadence).

:class:`BucketLsm` holds one bucket's live files during the write and folds each compaction
result into the changes its commit message reports.
"""

from __future__ import annotations

from collections.abc import Iterable

from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.compact.levels import level_runs
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.task import BucketContext, CompactResult
from lakeops.context import TableContext
from lakeops.errors import SnapshotNotFoundError
from lakeops.io.file_io import FileIO
from lakeops.parallel import run_ordered
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.locations import ExternalPaths, FileLocations

__all__ = ["BucketLsm", "CompactionCadence"]

#: compaction rounds after one flush before the stop trigger decides
_MAX_ROUNDS = 16


def _id(f: DataFileMeta) -> tuple[str, int]:
    return (f.file_name, f.level)


class BucketLsm:
    """The live files of one (partition, bucket) during a write, and what this write's
    compactions removed, produced and wrote there."""

    def __init__(
        self,
        live: Iterable[DataFileMeta],
        compactor: BucketCompactor | None,
        file_io: FileIO,
        locations: FileLocations,
        directory: str,
    ) -> None:
        self.live = list(live)
        #: None with ``write-only``: the writer never compacts
        self.compactor = compactor
        self.file_io = file_io
        self.locations = locations
        self.directory = directory
        #: files of the base snapshot that compactions removed
        self.before: dict[tuple[str, int], DataFileMeta] = {}
        #: files that compactions produced and are still live
        self.after: dict[tuple[str, int], DataFileMeta] = {}
        #: the storage path of every file compactions wrote
        self.written: list[str] = []
        #: changelog files compactions produced
        self.changelog: list[DataFileMeta] = []

    def add(self, files: Iterable[DataFileMeta]) -> None:
        """New level-0 files of a flush."""
        self.live.extend(files)

    def apply(self, result: CompactResult) -> None:
        """Fold a compaction result into the live files and the pending changes; a file an
        earlier compaction of this write produced and this one replaced is deleted at once."""
        after_names = {f.file_name for f in result.after}
        gone = {_id(f) for f in result.before}
        self.live = [f for f in self.live if _id(f) not in gone]
        for f in result.before:
            if _id(f) in self.after:  # produced by an earlier compaction of this write
                del self.after[_id(f)]
                if f.file_name not in after_names:
                    self.file_io.delete(
                        self.locations.data_file(self.directory, f.file_name, f.external_path)
                    )
            else:
                self.before[_id(f)] = f
        for f in result.after:
            self.live.append(f)
            self.after[_id(f)] = f
        self.written.extend(result.written)
        self.changelog.extend(result.changelog)

    def compact(self, stop_trigger: int, full: bool = False) -> None:
        """Run picked units until the strategy is satisfied, then compact fully if sorted runs
        still exceed ``stop_trigger``; with ``full``, one full compaction."""
        if self.compactor is None:
            return
        for _ in range(_MAX_ROUNDS):
            result = self.compactor.compact(self.live, full=full)
            if result is None:
                break
            self.apply(result)
            if full:
                break
        if not full and len(level_runs(self.live)) > stop_trigger:
            self.compact(stop_trigger, full=True)


class CompactionCadence:
    """When one writer compacts (see the module docstring), and the compactors it runs."""

    def __init__(self, table: TableContext) -> None:
        self.table = table
        self.store = table.store
        self.locations = table.locations
        self.compact_options = table.compaction
        self.changelog_options = table.changelog
        self._lookup_cache: RowGroupCache | None = None

    def bucket(
        self, live: Iterable[DataFileMeta], directory: str, external: ExternalPaths | None
    ) -> BucketLsm:
        """The LSM state of the bucket in ``directory`` whose live files are ``live``."""
        live = list(live)
        compactor = None
        if not self.compact_options.write_only:
            compactor = BucketCompactor(self.bucket_context(directory, external), live)
        return BucketLsm(live, compactor, self.store.file_io, self.locations, directory)

    def bucket_context(
        self, directory: str, external: ExternalPaths | None = None
    ) -> BucketContext:
        """What compaction of a bucket in ``directory`` needs (``external``: where its new
        files go when the table writes external paths)."""
        if self._lookup_cache is None:
            self._lookup_cache = RowGroupCache(self.changelog_options.lookup_cache_bytes)
        return BucketContext.of(self.table, directory, external=external, cache=self._lookup_cache)

    def after_flush(self, lsm: BucketLsm) -> None:
        """Compact a bucket that a flush just added level-0 files to."""
        lsm.compact(self.compact_options.stop_trigger)

    def before_commit(self, lsms: Iterable[BucketLsm], parallelism: int | None = 1) -> None:
        """Compact every bucket fully if the commit being prepared calls for it (on up to
        ``parallelism`` threads, one bucket per thread at a time)."""
        if self.compact_options.force_compact_on_commit or self.full_compaction_due():
            stop = self.compact_options.stop_trigger
            run_ordered(lambda lsm: lsm.compact(stop, full=True), list(lsms), parallelism)

    def full_compaction_due(self) -> bool:
        """``changelog-producer=full-compaction``: full-compact every
        ``full-compaction.delta-commits`` commits (counting the one being prepared)."""
        if self.changelog_options.producer != "full-compaction":
            return False
        every = self.changelog_options.full_compaction_delta_commits
        appends, sid = 0, self.store.latest_snapshot_id()
        while sid is not None and sid >= 1 and appends < every:
            try:
                snapshot = self.store.snapshot(sid)
            except SnapshotNotFoundError:
                break
            if snapshot.commit_kind == "COMPACT" and snapshot.changelog_manifest_list:
                break
            appends += snapshot.commit_kind == "APPEND"
            sid -= 1
        return appends + 1 >= every
