"""Table-wide compaction jobs: per-bucket compaction of a snapshot, committed as one COMPACT
snapshot (``Table.compact`` and ``Table.flush_level0``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.task import BucketContext
from lakeops.compact.vectors import BucketVectors
from lakeops.errors import ConfigurationError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import ManifestEntry
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import join
from lakeops.options.registry import check_data_files, check_writable
from lakeops.parallel import IO_THREADS, delete_files, run_ordered
from lakeops.read.scan import PartitionSpec, partition_matches
from lakeops.store import TableStore
from lakeops.store.context import TableContext

__all__ = [
    "CompactionProgress",
    "BucketJob",
    "CompactionPlan",
    "PartitionSpec",
    "compact_jobs",
    "live_buckets",
    "plan_buckets",
    "plan_compaction",
    "remove_job_files",
    "run_bucket",
    "run_jobs",
]


@dataclass
class CompactionPlan:
    """The compaction results of every bucket, ready to commit."""

    messages: list[CommitMessage] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    def discard(self, table: TableContext) -> None:
        """Delete every file the compaction wrote (it will not be committed)."""
        for path in self.written:
            table.file_io.delete(path)

    @property
    def files_rewritten(self) -> int:
        return sum(len(m.compact_before) for m in self.messages)

    @property
    def bytes_written(self) -> int:
        return sum(
            f.file_size
            for m in self.messages
            for f in m.compact_after
            if f.file_name not in {b.file_name for b in m.compact_before}
        )


@dataclass(frozen=True)
class BucketJob:
    """One bucket to compact: picklable, so Spark can run it on an executor."""

    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    #: the bucket's live deletion-vector index entries (primary-key tables with deletion
    #: vectors): the compaction applies, updates and replaces them
    vectors: tuple[IndexManifestEntry, ...] = ()


def plan_buckets(
    store: TableStore, schema: TableSchema, partitions: Sequence[PartitionSpec] | None = None
) -> list[BucketJob]:
    """The buckets of the latest snapshot (or of the given partitions), with their files (the
    manifests read :data:`~lakeops.parallel.IO_THREADS` at once)."""
    matches = partition_matches(schema, partitions)
    check_writable(schema.options, "compact")
    snapshot = store.latest_snapshot()
    live = store.live_entries(snapshot, parallelism=IO_THREADS)
    check_data_files((e.file.file_name for e in live), "compact")
    jobs = live_buckets(live, matches)
    if not (schema.primary_keys and snapshot is not None and snapshot.index_manifest):
        return jobs
    vectors: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    for e in store.index_entries(snapshot):
        if e.file.index_type == DELETION_VECTORS_INDEX:
            vectors.setdefault((e.partition, e.bucket), []).append(e)
    return [
        dataclasses.replace(j, vectors=tuple(vectors.get((j.partition, j.bucket), ())))
        for j in jobs
    ]


def live_buckets(
    live: Iterable[ManifestEntry], keep: Callable[[bytes], bool] | None = None
) -> list[BucketJob]:
    """Every (partition, bucket) of the ``live`` entries in a partition ``keep`` accepts
    (None: every one), with its files in entry order, by (partition, bucket): what either
    table kind's compaction picks from."""
    buckets: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    totals: dict[tuple[bytes, int], int] = {}
    for e in live:
        if keep is not None and not keep(e.partition):
            continue
        if e.bucket == POSTPONE_BUCKET:
            continue  # moved into real buckets by lakeops.read.postpone, never compacted
        buckets.setdefault((e.partition, e.bucket), []).append(e.file)
        totals[(e.partition, e.bucket)] = e.total_buckets
    return [
        BucketJob(p, b, totals[(p, b)], tuple(files)) for (p, b), files in sorted(buckets.items())
    ]


def run_bucket(
    table: TableContext,
    job: BucketJob,
    *,
    full: bool = False,
    force_level0: bool = False,
    cache: RowGroupCache | None = None,
    name_token: str | None = None,
) -> tuple[CommitMessage | None, list[str]]:
    """Compact one bucket: its commit message (None if nothing to do) and the files written
    (named with ``name_token`` when given, see :meth:`FileLocations.new_name`)."""
    locations = table.locations
    locations.check_writable()
    ctx = BucketContext.of(
        table,
        locations.bucket_path(job.partition, job.bucket),
        external=locations.external_paths_of(job.partition, job.bucket),
        cache=cache,
        name_token=name_token,
    )
    if table.options.deletion_vectors:
        ctx.vectors = bucket_vectors(table, job)
    files = list(job.files)
    result = BucketCompactor(ctx, files).compact(files, full=full, force_level0=force_level0)
    if result is None:
        return None, []
    index_changes: tuple[IndexManifestEntry, ...] = ()
    written = list(result.written)
    if ctx.vectors is not None:
        try:
            index_changes, index_written = ctx.vectors.changes(
                job.partition, job.bucket, result.before, result.after, locations
            )
        except BaseException:
            for path in written:
                table.file_io.delete(path)
            raise
        written += index_written
    return CommitMessage(
        job.partition,
        job.bucket,
        job.total_buckets,
        (),
        tuple(result.before),
        tuple(result.after),
        compact_changelog_files=tuple(result.changelog),
        compact_index_changes=index_changes,
    ), written


def bucket_vectors(table: TableContext, job: BucketJob) -> BucketVectors:
    """The deletion vectors of ``job``'s bucket, for its compaction; a table whose merge
    engine or changelog producer Paimon forbids with deletion vectors is refused."""
    if table.options.merge_engine == "first-row":
        raise ConfigurationError(
            "deletion vectors cannot be used with merge-engine 'first-row' (Paimon refuses it: "
            "first-row never deletes older data); nothing was written — disable "
            "'deletion-vectors.enabled'"
        )
    if table.changelog.producer == "full-compaction":
        raise ConfigurationError(
            "deletion vectors need changelog-producer 'none', 'input' or 'lookup' (as Paimon "
            "requires), not 'full-compaction'; nothing was written"
        )
    paths = {
        e.file.file_name: table.locations.index_entry_path(e.partition, e.bucket, e.file)
        for e in job.vectors
    }
    return BucketVectors(
        table.file_io, job.vectors, paths, bitmap64=table.options.deletion_vectors_bitmap64
    )


@dataclass(frozen=True)
class CompactionProgress:
    """How far a compaction (or level-0 flush) is: buckets finished of those to process, and
    the input files and their bytes those buckets held (a bucket that needed nothing counts
    as done with its files)."""

    buckets_done: int
    buckets: int
    files_done: int
    files: int
    bytes_done: int
    bytes: int


ProgressCallback = Callable[[CompactionProgress], None]


def plan_compaction(
    table: TableContext,
    *,
    full: bool = False,
    force_level0: bool = False,
    partitions: Sequence[PartitionSpec] | None = None,
    parallelism: int | None = None,
    progress: ProgressCallback | None = None,
    keep: Callable[[bytes], bool] | None = None,
) -> CompactionPlan:
    """Compact every bucket of the latest snapshot (or only the given partitions, and of
    those only the serialized partitions ``keep`` takes: a ``where=`` selection).

    Buckets are compacted on up to ``parallelism`` threads (default: the cores available,
    capped by the number of buckets; see :mod:`lakeops.parallel`), sharing one thread-safe
    lookup cache. Each bucket's compaction streams, so memory is bounded by the number of
    workers, not by the table. The plan lists the buckets' messages in bucket order whatever
    the parallelism. If any bucket fails, every file any bucket wrote is deleted and the first
    error is raised. ``progress`` is called in the calling thread once before any bucket runs
    (nothing done) and after each bucket finishes, with a :class:`CompactionProgress`."""
    jobs = plan_buckets(table.store, table.schema, partitions)
    if keep is not None:
        jobs = [j for j in jobs if keep(j.partition)]
    return compact_jobs(
        table,
        jobs,
        full=full,
        force_level0=force_level0,
        parallelism=parallelism,
        progress=progress,
    )


def compact_jobs(
    table: TableContext,
    jobs: Sequence[BucketJob],
    *,
    full: bool = False,
    force_level0: bool = False,
    parallelism: int | None = None,
    progress: ProgressCallback | None = None,
    name_token: str | None = None,
) -> CompactionPlan:
    """Compact the buckets of ``jobs`` (see :func:`plan_compaction`; a distributed job runs
    this on each of its tasks, with the tasks' ``name_token``)."""
    cache = RowGroupCache(table.changelog.lookup_cache_bytes)
    # parse the option families once, before workers read them
    table.options, table.compaction, table.changelog, table.engine, table.locations  # noqa: B018

    def compact_one(job: BucketJob) -> tuple[CommitMessage | None, list[str]]:
        return run_bucket(
            table, job, full=full, force_level0=force_level0, cache=cache, name_token=name_token
        )

    return run_jobs(table, jobs, compact_one, parallelism, progress)


def run_jobs(
    table: TableContext,
    jobs: Sequence[BucketJob],
    work: Callable[[BucketJob], tuple[CommitMessage | None, list[str]]],
    parallelism: int | None,
    progress: ProgressCallback | None,
) -> CompactionPlan:
    """The lifecycle of both table kinds' compactions: ``work`` (one job's commit message, None
    if nothing to do, and the files it wrote) runs for each of ``jobs`` on up to
    ``parallelism`` threads; the plan lists the messages in job order whatever the
    parallelism. If any job fails, every file any job wrote is deleted and the first error is
    raised. ``progress`` is called in the calling thread once before any job runs (nothing
    done) and after each job finishes, with a :class:`CompactionProgress` whose buckets count
    the jobs."""
    plan = CompactionPlan()

    def record(_: BucketJob, done: tuple[CommitMessage | None, list[str]]) -> None:
        message, written = done
        plan.written.extend(written)
        if message is not None:
            plan.messages.append(message)

    on_done: Callable[[BucketJob], None] | None = None
    if progress is not None:
        report = progress
        done = [0, 0, 0]  # buckets, files, bytes
        files = sum(len(j.files) for j in jobs)
        size = sum(f.file_size for j in jobs for f in j.files)

        def on_done(job: BucketJob) -> None:
            done[0] += 1
            done[1] += len(job.files)
            done[2] += sum(f.file_size for f in job.files)
            report(CompactionProgress(done[0], len(jobs), done[1], files, done[2], size))

        report(CompactionProgress(0, len(jobs), 0, files, 0, size))
    try:
        run_ordered(work, jobs, parallelism, on_success=record, on_done=on_done)
    except BaseException:
        plan.discard(table)
        raise
    return plan


def remove_job_files(
    table: TableContext, jobs: Sequence[BucketJob], name_token: str, keep: Iterable[str] = ()
) -> list[str]:
    """Delete every file in the buckets of ``jobs`` whose name carries ``name_token`` (what a
    distributed job's tasks wrote, retried or failed attempts included), except the paths in
    ``keep``; returns the deleted paths. Directories are listed and files deleted
    :data:`~lakeops.parallel.IO_THREADS` at once."""
    locations = table.locations
    prefixes = locations.job_name_prefixes(name_token)
    kept = set(keep)
    directories = sorted(
        {d for j in jobs for d in locations.job_directories(j.partition, j.bucket)}
    )
    file_io = table.file_io

    def matching(directory: str) -> list[str]:
        return [
            join(directory, name)
            for name in file_io.list_names(directory)
            if name.startswith(prefixes)
        ]

    found = [p for listed in run_ordered(matching, directories, IO_THREADS) for p in listed]
    doomed = [p for p in found if p not in kept]
    delete_files(file_io.delete, doomed)
    return doomed
