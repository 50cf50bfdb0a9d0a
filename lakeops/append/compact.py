"""Compaction of small files of append tables, as Paimon 0.9 plans it.

**Fixed bucket** (``BucketedAppendCompactManager``): a bucket's files in sequence order.

* normal: Paimon's ``pickCompactBefore`` — take files from the oldest on; once the window holds
  ``target-file-size`` bytes and at least ``compaction.min.file-num`` files, or
  ``compaction.max.file-num`` files (default 5), compact it; when it holds the target size
  without enough files, drop its oldest file and go on. Repeated on the files after each
  window, so every window is a contiguous run of sequence numbers;
* full (``full=True``): drop the leading files already at the target size; if the rest are
  at least 3 files and more of them are small than large, rewrite them all.

**Unaware bucket** (``UnawareAppendTableCompactionCoordinator``): per partition, the files
below 70 % of ``target-file-size``, by size, packed into bins that close at the target size
with at least ``compaction.min.file-num`` files or at ``compaction.max.file-num`` files
(default 50); a full compaction also rewrites the last, unfilled bin when it holds two files or
more (what Paimon's coordinator does to files left waiting).

A compaction rewrites its inputs, in order, as rolling level-0 files of source ``COMPACT``
whose sequence numbers start at the first input's (``AppendOnlyFileStoreWrite.compactRewrite``),
so a fixed bucket's rows keep their order. Tasks run on up to ``parallelism`` threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeops.compact.planner import BucketJob, CompactionProgress
from lakeops.context import TableContext
from lakeops.parallel import run_ordered
from lakeops.read.scan import partition_matches
from lakeops.spec import binary_row
from lakeops.spec.commit_message import CommitMessage
from lakeops.spec.data_file import FILE_SOURCE_COMPACT, DataFileMeta

from .files import AppendFileReader, RollingAppendWriter
from .options import AppendOptions

__all__ = [
    "AppendCompactionPlan",
    "compaction_tasks",
    "partitions_to_compact",
    "pick_bucket_windows",
    "pick_unaware_bins",
    "plan",
    "run_tasks",
]

#: a full compaction of a fixed bucket needs at least this many files
FULL_COMPACT_MIN_FILE = 3


@dataclass
class AppendCompactionPlan:
    """What a compaction wrote: commit messages and every storage path written."""

    messages: list[CommitMessage] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


def pick_bucket_windows(
    files: Sequence[DataFileMeta], opts: AppendOptions, full: bool
) -> list[list[DataFileMeta]]:
    """The runs of a fixed bucket's files to compact (see the module docstring)."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    target = opts.target_file_size
    if full:
        if len(ordered) < FULL_COMPACT_MIN_FILE:
            return []
        start = 0
        while start < len(ordered) and ordered[start].file_size >= target:
            start += 1
        rest = ordered[start:]
        small = sum(1 for f in rest if f.file_size < target)
        if small > len(rest) - small and len(rest) >= FULL_COMPACT_MIN_FILE:
            return [rest]
        return []
    windows: list[list[DataFileMeta]] = []
    candidates: list[DataFileMeta] = []
    size = 0
    for f in ordered:
        candidates.append(f)
        size += f.file_size
        if (size >= target and len(candidates) >= opts.min_file_num) or (
            len(candidates) >= opts.bucket_max_file_num
        ):
            windows.append(candidates)
            candidates, size = [], 0
        elif size >= target:
            size -= candidates.pop(0).file_size
    return windows


def pick_unaware_bins(
    files: Sequence[DataFileMeta], opts: AppendOptions, full: bool
) -> list[list[DataFileMeta]]:
    """The bins of one partition's files to compact (see the module docstring)."""
    small = sorted(
        (f for f in files if f.file_size < opts.compaction_file_size), key=lambda f: f.file_size
    )
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    size = 0
    for f in small:
        current.append(f)
        size += f.file_size
        if (size >= opts.target_file_size and len(current) >= opts.min_file_num) or (
            len(current) >= opts.unaware_max_file_num
        ):
            bins.append(current)
            current, size = [], 0
    if full and len(current) > 1:
        bins.append(current)
    return [b for b in bins if len(b) > 1]


def compaction_tasks(
    ctx: TableContext,
    opts: AppendOptions,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None,
) -> list[BucketJob]:
    """The compactions of the latest snapshot, by (partition, bucket): one job per window of
    a fixed bucket's files or bin of a partition's files (so one bucket may have several)."""
    store = ctx.store
    keep = partition_matches(ctx.schema, partitions, ctx.options) if partitions else None
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    totals: dict[tuple[bytes, int], int] = {}
    for e in store.live_entries(store.latest_snapshot()):
        if keep is not None and not keep(e.partition):
            continue
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
        totals[(e.partition, e.bucket)] = e.total_buckets
    tasks: list[BucketJob] = []
    for (partition, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        if ctx.options.bucket > 0:
            picked = pick_bucket_windows(files, opts, full)
        else:
            picked = pick_unaware_bins(files, opts, full)
        tasks += [
            BucketJob(partition, bucket, totals[(partition, bucket)], tuple(p)) for p in picked
        ]
    return tasks


def partitions_to_compact(ctx: TableContext, *, full: bool) -> list[dict[str, Any]]:
    """The partitions (``{column: value}``, ``{}`` for an unpartitioned table) in which a
    compaction (``full``: a full one) of the latest snapshot would rewrite files."""
    types = ctx.schema.types_of(ctx.schema.partition_keys)
    seen: dict[bytes, dict[str, Any]] = {}
    for task in compaction_tasks(ctx, AppendOptions.of(ctx), full, None):
        if task.partition not in seen:
            values = binary_row.deserialize(task.partition, types)
            seen[task.partition] = dict(zip(ctx.schema.partition_keys, values, strict=True))
    return list(seen.values())


def plan(
    ctx: TableContext,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None,
    parallelism: int | None,
    progress: Callable[[CompactionProgress], None] | None = None,
) -> AppendCompactionPlan:
    """Pick and run the compactions of the latest snapshot; nothing is committed."""
    tasks = compaction_tasks(ctx, AppendOptions.of(ctx), full, partitions)
    return run_tasks(ctx, tasks, parallelism, progress)


def run_tasks(
    ctx: TableContext,
    tasks: Sequence[BucketJob],
    parallelism: int | None,
    progress: Callable[[CompactionProgress], None] | None = None,
    name_token: str | None = None,
) -> AppendCompactionPlan:
    """Rewrite the files of each of ``tasks`` (of :func:`compaction_tasks`), in order, as new
    files whose names carry ``name_token`` when given (a distributed job's cleanup finds them
    by it); one message per task, in task order. On any failure every file written is
    deleted. Nothing is committed."""
    opts = AppendOptions.of(ctx)
    store = ctx.store
    result = AppendCompactionPlan()
    if not tasks:
        return result
    reader = AppendFileReader(ctx.file_io, ctx.schema, store.schema, ctx.root)
    columns = ctx.schema.field_names
    done = [0, 0, 0]  # tasks, files, bytes
    total_files = sum(len(t.files) for t in tasks)
    total_bytes = sum(f.file_size for t in tasks for f in t.files)

    def report() -> None:
        if progress is not None:
            progress(
                CompactionProgress(done[0], len(tasks), done[1], total_files, done[2], total_bytes)
            )

    report()

    def rewrite(task: BucketJob) -> tuple[list[DataFileMeta], list[str]]:
        directory = ctx.bucket_path(task.partition, task.bucket)
        writer = RollingAppendWriter(
            ctx.file_io,
            directory,
            ctx.schema,
            opts.target_file_size,
            task.files[0].min_sequence_number,
            FILE_SOURCE_COMPACT,
            ctx.locations.external_paths_of(task.partition, task.bucket),
            name_token,
        )
        try:
            for f in task.files:
                for batch in reader.iter_batches(directory, f, columns, 131_072):
                    writer.write(batch)
            return writer.close(), list(writer.written)
        except BaseException:
            writer.abort()
            raise

    def collect(task: BucketJob, out: tuple[list[DataFileMeta], list[str]]) -> None:
        result.written.extend(out[1])
        result.messages.append(
            CommitMessage(
                task.partition,
                task.bucket,
                task.total_buckets,
                compact_before=task.files,
                compact_after=tuple(out[0]),
            )
        )

    def tick(task: BucketJob) -> None:
        done[0] += 1
        done[1] += len(task.files)
        done[2] += sum(f.file_size for f in task.files)
        report()

    try:
        run_ordered(rewrite, tasks, parallelism, on_success=collect, on_done=tick)
    except BaseException:
        for path in result.written:
            ctx.file_io.delete(path)
        raise
    return result
