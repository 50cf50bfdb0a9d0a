"""In-writer compaction: when a writer compacts its buckets, and what those compactions changed.

As Paimon's merge-tree writer does, unless ``write-only`` is set:

* after each flush of a bucket, a compaction of the bucket starts **in the background** (on the
  writer's pool) while the writer goes on accepting and flushing data: the bucket's compaction
  strategy runs the units it picks until it is satisfied, and if the bucket still has more sorted
  runs than ``num-sorted-run.stop-trigger`` it is compacted fully;
* a bucket has at most one compaction in flight. Its result is taken at the bucket's next flush,
  after that flush's level-0 files are written, waiting for it if it is still running
  (back-pressure: a writer never runs ahead of a bucket's compaction by more than one flush, so
  the bucket holds at most ``stop-trigger`` runs plus one flush's files), and when a commit is
  prepared, which waits for every bucket's compaction — Paimon's batch writer waits there too;
* when a commit is prepared, every bucket is then compacted fully if ``commit.force-compact`` is
  set or, with ``changelog-producer = full-compaction``, when the commit being prepared completes
  ``full-compaction.delta-commits`` appends since the last full compaction that produced a
  changelog (the changelog cadence);
* aborting a write cancels what has not started and waits for what runs; nothing a background
  compaction wrote is committed unless its result was taken, and a failed one deletes what it
  wrote before its error is raised (at the point its result would have been taken);
* a compaction that finds its input files deleted because another job compacted them and an
  expiry then removed every snapshot naming them (:func:`lakeops.read.guard.replaced_meanwhile`
  against the write's base snapshot) is dropped instead, and the bucket compacts no more in this
  write: its commit could not have taken that compaction anyway (a writer's compaction whose
  inputs another commit replaced is dropped there), and the write's own data is unaffected.
  The skipped work is left to the next compaction, as with ``write-only``.

Where Paimon takes a finished result at whichever flush first finds it done, lakeops takes it at
a fixed point, so the files a write produces depend only on its input and options, never on
thread timing or on the parallelism: parallelism 1 runs each compaction in the calling thread
when it starts, with the same result.

:class:`BucketLsm` holds one bucket's live files during the write and folds each compaction
result into the changes its commit message reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future

from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.compact.levels import level_runs
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.task import BucketContext, CompactResult
from lakeops.errors import (
    CorruptTableError,
    MissingDataFileError,
    MissingMetadataError,
    SnapshotNotFoundError,
)
from lakeops.format.data_file import DataFileMeta
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO
from lakeops.parallel import TaskBatch, run_ordered
from lakeops.read.guard import replaced_meanwhile
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths, FileLocations

__all__ = ["BucketLsm", "CompactionCadence", "CompactorSlot"]

#: compaction rounds after one flush before the stop trigger decides
_MAX_ROUNDS = 16

log = logging.getLogger(__name__)


def _id(f: DataFileMeta) -> tuple[str, int]:
    return (f.file_name, f.level)


class BucketLsm:
    """The live files of one (partition, bucket) during a write, and what this write's
    compactions removed, produced and wrote there."""

    def __init__(
        self,
        live: Iterable[DataFileMeta],
        compactor: BucketCompactor | CompactorSlot | None,
        file_io: FileIO,
        locations: FileLocations,
        directory: str,
        lost_race: Callable[[CorruptTableError], bool] = lambda _error: False,
    ) -> None:
        self.live = list(live)
        #: None with ``write-only``: the writer never compacts
        self._slot = (
            compactor
            if compactor is None or isinstance(compactor, CompactorSlot)
            else CompactorSlot(lambda: compactor)
        )
        self.file_io = file_io
        self.locations = locations
        self.directory = directory
        #: whether a missing input file means another job replaced it and an expiry deleted it
        self.lost_race = lost_race
        #: files of the base snapshot that compactions removed
        self.before: dict[tuple[str, int], DataFileMeta] = {}
        #: files that compactions produced and are still live
        self.after: dict[tuple[str, int], DataFileMeta] = {}
        #: the storage path of every file compactions wrote
        self.written: list[str] = []
        #: changelog files compactions produced
        self.changelog: list[DataFileMeta] = []
        #: the compaction running in the background on a copy of this state, if any
        self.pending: Future[BucketLsm] | None = None

    @property
    def compactor(self) -> BucketCompactor | None:
        """The bucket's compactor (made at its first use); None when it never compacts."""
        return None if self._slot is None else self._slot.get()

    def add(self, files: Iterable[DataFileMeta]) -> None:
        """New level-0 files of a flush."""
        self.live.extend(files)

    def apply(self, result: CompactResult) -> None:
        """Fold a compaction result into the live files and the pending changes.

        A file an earlier compaction of this write wrote and this one replaced is deleted at
        once: nothing will ever reference it. A file an earlier compaction only moved up a
        level (an upgrade: the same file under its new level) is kept whatever replaces it
        next, as Paimon's writer keeps it: its file is one the commit's APPEND adds (a level-0
        file this write flushed) or one the base snapshot references."""
        after_names = {f.file_name for f in result.after}
        moved = {name for name, _level in self.before}
        gone = {_id(f) for f in result.before}
        self.live = [f for f in self.live if _id(f) not in gone]
        for f in result.before:
            if _id(f) in self.after:  # produced by an earlier compaction of this write
                del self.after[_id(f)]
                if f.file_name not in after_names and f.file_name not in moved:
                    self.file_io.delete(
                        self.locations.data_file(self.directory, f.file_name, f.external_path)
                    )
            else:
                self.before[_id(f)] = f
                moved.add(f.file_name)
        for f in result.after:
            self.live.append(f)
            self.after[_id(f)] = f
        self.written.extend(result.written)
        self.changelog.extend(result.changelog)

    def copy(self) -> BucketLsm:
        """The live files of this bucket with nothing pending: what a background compaction
        works on (it shares the compactor, which only one compaction at a time uses)."""
        return BucketLsm(
            self.live, self._slot, self.file_io, self.locations, self.directory, self.lost_race
        )

    def absorb(self, done: BucketLsm) -> None:
        """Take the result of compactions that ran on :meth:`copy` as if they had run here."""
        self.apply(
            CompactResult(
                list(done.before.values()), list(done.after.values()), done.written, done.changelog
            )
        )

    def discard(self) -> None:
        """Delete every file this state's compactions wrote (a copy whose result is not
        taken)."""
        for path in self.written:
            self.file_io.delete(path)

    def start(
        self, stop_trigger: int, executor: Executor | TaskBatch | None, full: bool = False
    ) -> None:
        """Start compacting (see :meth:`compact`) on ``executor`` (a :class:`TaskBatch`: when
        the batch is dispatched), or now in the calling thread when there is none; the bucket
        must have no compaction in flight."""
        if self._slot is None:
            return
        if self.pending is not None:
            raise AssertionError("a bucket has one compaction in flight at a time")
        work = self.copy()

        def run() -> BucketLsm:
            try:
                work.compact(stop_trigger, full)
            except BaseException:
                work.discard()
                raise
            return work

        if executor is None:
            self._take(run)
        else:
            self.pending = executor.submit(run)

    def sync(self) -> None:
        """Wait for the compaction in flight, if any, and take its result; its error, if it
        failed (having deleted what it wrote), is raised here."""
        if self.pending is not None:
            future, self.pending = self.pending, None
            self._take(future.result)

    def _take(self, result: Callable[[], BucketLsm]) -> None:
        """Take a finished compaction's ``result()``; one that lost its input files to
        another job and an expiry is dropped (it deleted what it wrote), and the bucket
        compacts no more in this write (see the module docstring)."""
        try:
            done = result()
        except (MissingDataFileError, MissingMetadataError) as exc:
            if not self.lost_race(exc):
                raise
            log.warning(
                "%s: a compaction of this write is dropped: %s is gone — another job compacted "
                "it and an expiry removed the snapshots naming it; the write goes on",
                self.directory,
                getattr(exc, "path", None) or "an input file",
            )
            self._slot = None
            return
        self.absorb(done)

    def cancel(self) -> None:
        """Drop the compaction in flight: cancelled if it has not started, else waited for;
        whatever it wrote is deleted and nothing of it is taken."""
        if self.pending is None:
            return
        future, self.pending = self.pending, None
        if future.cancel():
            return
        try:
            done = future.result()
        except BaseException:
            return  # a failed compaction already deleted what it wrote
        done.discard()

    def compact(self, stop_trigger: int, full: bool = False) -> None:
        """Run picked units until the strategy is satisfied, then compact fully if sorted runs
        still exceed ``stop_trigger``; with ``full``, one full compaction."""
        compactor = self.compactor
        if compactor is None:
            return
        for _ in range(_MAX_ROUNDS):
            result = compactor.compact(self.live, full=full)
            if result is None:
                break
            self.apply(result)
            if full:
                break
        if not full and len(level_runs(self.live)) > stop_trigger:
            self.compact(stop_trigger, full=True)


class CompactorSlot:
    """A bucket's :class:`BucketCompactor`, made by ``make`` at its first use: a write to
    thousands of buckets most of which never compact does not make thousands of compactors
    (each with its bucket's reader) up front, in the writer's calling thread. The bucket's
    state and the copies its background compactions work on share one slot, used by one
    compaction at a time."""

    def __init__(self, make: Callable[[], BucketCompactor]) -> None:
        self._make: Callable[[], BucketCompactor] | None = make
        self._made: BucketCompactor | None = None

    def get(self) -> BucketCompactor:
        """The compactor, made now if this is its first use."""
        if self._made is None:
            assert self._make is not None
            self._made, self._make = self._make(), None
        return self._made


class CompactionCadence:
    """When one writer compacts (see the module docstring), and the compactors it runs."""

    def __init__(self, table: TableContext, base: Snapshot | None = None) -> None:
        self.table = table
        #: the snapshot the write builds on
        self.base = base
        self.store = table.store
        self.locations = table.locations
        self.compact_options = table.compaction
        self.changelog_options = table.changelog
        self._lookup_cache: RowGroupCache | None = None

    def bucket(
        self,
        live: Iterable[DataFileMeta],
        directory: str,
        external: ExternalPaths | None,
        *,
        compacts: bool = True,
    ) -> BucketLsm:
        """The LSM state of the bucket in ``directory`` whose live files are ``live``
        (``compacts=False``: never compacted by this writer, as with ``write-only``)."""
        live = list(live)
        slot = None
        # a deletion-vector table's compactions maintain the bucket's vectors: they run after
        # the commit (Table.commit flushes level 0), not inside the writer
        options = self.table.options
        if compacts and not self.compact_options.write_only and not options.deletion_vectors:
            # (strategy state from the files live now, as when made at once)
            initial = list(live)
            slot = CompactorSlot(
                lambda: BucketCompactor(self.bucket_context(directory, external), initial)
            )
        return BucketLsm(live, slot, self.store.file_io, self.locations, directory, self._lost_race)

    def _lost_race(self, error: CorruptTableError) -> bool:
        """Whether a compaction's missing input comes from another job's compaction and an
        expiry after the write's base snapshot (:func:`replaced_meanwhile`)."""
        return replaced_meanwhile(self.store, self.base, error)

    def bucket_context(
        self, directory: str, external: ExternalPaths | None = None
    ) -> BucketContext:
        """What compaction of a bucket in ``directory`` needs (``external``: where its new
        files go when the table writes external paths)."""
        if self._lookup_cache is None:
            self._lookup_cache = RowGroupCache(self.changelog_options.lookup_cache_bytes)
        return BucketContext.of(self.table, directory, external=external, cache=self._lookup_cache)

    def after_flush(
        self,
        lsm: BucketLsm,
        files: Iterable[DataFileMeta],
        executor: Executor | TaskBatch | None,
    ) -> None:
        """A flush added level-0 ``files`` to a bucket: take the bucket's compaction in flight
        (waiting for it), add the files, and start the next compaction (on ``executor``; a
        :class:`TaskBatch` starts it when the caller dispatches the batch)."""
        lsm.sync()
        lsm.add(files)
        lsm.start(self.compact_options.stop_trigger, executor)

    def before_commit(
        self,
        lsms: Iterable[BucketLsm],
        parallelism: int | None = 1,
        executor: Executor | None = None,
    ) -> None:
        """Take every bucket's compaction in flight, then compact every bucket fully if the
        commit being prepared calls for it (on up to ``parallelism`` threads — ``executor``'s
        when given — one bucket per thread at a time)."""
        lsms = list(lsms)
        for lsm in lsms:
            lsm.sync()
        if self.compact_options.force_compact_on_commit or self.full_compaction_due():
            stop = self.compact_options.stop_trigger
            run_ordered(
                lambda lsm: lsm.start(stop, None, full=True), lsms, parallelism, executor=executor
            )

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
