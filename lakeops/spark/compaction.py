"""Distributed compaction (``lakeops.spark.compact``): buckets planned on the driver, compacted
by Spark tasks on the executors, committed once by the driver.

Tasks. The driver reads the latest snapshot's manifests and lists every (partition, bucket)
with its files (:func:`~lakeops.compact.planner.plan_buckets`). Buckets are dealt, largest
first, into tasks of ``spark.task.cpus`` buckets each — one bucket per task at the default one
CPU per task — so Spark spreads the buckets over every executor core and starts the largest
first. A task compacts its buckets with :func:`~lakeops.compact.planner.compact_jobs` on at
most its task CPUs (``parallelism`` lowers that, never raises it), and caps pyarrow's own CPU
pool to the same count, so a task never runs more compute threads than the slots Spark gave it.

Append tables. The driver plans the compactions as
:meth:`~lakeops.table.append.AppendTable.compact` does
(:func:`~lakeops.compact.append.compaction_tasks`: the windows of a fixed bucket's files, the
bins of a partition's small files); each window or bin is a job dealt as a bucket is, and a
task rewrites its jobs' files in order (:func:`~lakeops.compact.append.run_tasks`), so a fixed
bucket's rows keep their order. Commit and failure handling are the same.

Memory per task. A bucket's compaction streams: every merged section holds at most
:data:`~lakeops.compact.task.MERGE_BUDGET_ROWS` rows (shared by its sorted runs) plus the
row groups being read and the Parquet pages being written, so a task's memory is bounded by its
task CPUs (buckets compacted at once), not by the size of the bucket or the table
(``benchmarks/spark_compact.md`` has the measured peak RSS per Python worker). Only the commit
messages (file metadata) travel back to the driver.

Commit and failure. Every file the job writes carries one random token in its name
(:meth:`~lakeops.store.locations.FileLocations.new_name`). A task that fails deletes what it
wrote and returns its error; the driver waits for every task, and if any failed (or the Spark
job itself failed: a lost executor, a killed worker), deletes every file carrying the job's
token in the job's buckets and raises — nothing is committed. Otherwise the driver commits all
tasks' messages as one ``COMPACT`` snapshot (on a conflict nothing is committed and the new
files are deleted), then deletes what attempts Spark retried left behind. A task Spark is
still cancelling when the driver cleans up may write on for up to
``spark.python.task.killTimeout``; such a file is an orphan for ``remove_orphan_files``.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeops.compact.append import compaction_tasks, retire_vectors
from lakeops.compact.planner import BucketJob, CompactionPlan, plan_buckets, remove_job_files
from lakeops.format.commit_message import CommitMessage
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.snapshot import Snapshot
from lakeops.kv.formats import check_writable
from lakeops.parallel import check_parallelism
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.guard import lost_race
from lakeops.read.scan import snapshot_deletion_files
from lakeops.store.locations import new_name_token
from lakeops.table import primary_key_table
from lakeops.table.append import AppendTable

__all__ = ["TaskResult", "compact", "deal_tasks"]


@dataclass
class TaskResult:
    """What one compaction task sends back: its buckets' messages and written files, or the
    error it failed with (its files then already deleted)."""

    messages: list[CommitMessage] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    error: BaseException | None = None


@dataclass(frozen=True)
class _Task:
    options: dict[str, str]
    jobs: tuple[BucketJob, ...]
    full: bool
    force_level0: bool
    name_token: str
    parallelism: int | None
    #: an append table's compactions (:mod:`lakeops.compact.append`): each job is one window
    #: of a fixed bucket or one bin of a partition, rewritten in order
    append: bool = False
    #: the planned snapshot's deletion vectors of an append table (by partition, bucket and
    #: file name), applied as its files are rewritten
    vectors: Mapping[tuple[bytes, int, str], DeletionFile] = field(default_factory=dict)


def deal_tasks(jobs: Sequence[BucketJob], per_task: int) -> list[list[BucketJob]]:
    """The buckets of ``jobs`` dealt into tasks of at most ``per_task`` buckets: largest
    (input bytes) first, round-robin, so the tasks are balanced and the first tasks Spark
    starts hold the largest buckets."""
    ordered = sorted(jobs, key=lambda j: -sum(f.file_size for f in j.files))
    count = -(-len(ordered) // max(per_task, 1))
    tasks: list[list[BucketJob]] = [[] for _ in range(count)]
    for i, job in enumerate(ordered):
        tasks[i % count].append(job)
    return tasks


def _portable(error: BaseException) -> BaseException:
    """``error`` if it pickles (so the driver raises the same type), else a RuntimeError
    holding its traceback."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        text = "".join(traceback.format_exception(error))
        return RuntimeError(f"compaction task failed:\n{text}")
    return error


def _run_task(task: _Task) -> TaskResult:
    """Executor side: compact the task's buckets (see the module docstring)."""
    import pyarrow as pa

    from lakeops.compact.planner import compact_jobs
    from lakeops.spark.tables import open_table, task_parallelism

    workers = task_parallelism(None if task.parallelism is None else str(task.parallelism))
    pa.set_cpu_count(workers)
    try:
        table = open_table(task.options)
        if task.append:
            from lakeops.compact.append import run_tasks

            done = run_tasks(
                table.context,
                task.jobs,
                workers,
                name_token=task.name_token,
                vectors=task.vectors,
            )
            return TaskResult(done.messages, done.written)
        plan = compact_jobs(
            table.context,
            task.jobs,
            full=task.full,
            force_level0=task.force_level0,
            parallelism=workers,
            name_token=task.name_token,
        )
    except Exception as error:  # compact_jobs / run_tasks deleted what they wrote
        return TaskResult(error=_portable(error))
    return TaskResult(plan.messages, plan.written)


def compact(
    spark: Any,
    options: dict[str, str],
    *,
    full: bool = False,
    force_level0: bool = False,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    parallelism: int | None = None,
) -> Snapshot | None:
    """Compact (``full``: everything to the max level; ``force_level0``: lift level 0) the
    table the data-source ``options`` name, on the executors of ``spark``, as one ``COMPACT``
    snapshot (None when nothing needed compacting). An append table is compacted as
    :meth:`lakeops.table.append.AppendTable.compact` compacts it (``full``: a full compaction;
    ``force_level0`` is refused), its windows and bins dealt into tasks as buckets are. See
    the module docstring."""
    from lakeops.spark.tables import open_table

    check_parallelism(parallelism)
    table = open_table(options)
    table._require_writable("compact")
    check_writable(table.schema, "compact this table")
    table.file_io.check_commit_ready()
    append = isinstance(table, AppendTable)
    moved: Snapshot | None = None
    if not append and not force_level0 and table.options.bucket == POSTPONE_BUCKET:
        # postponed rows move into real buckets on the driver first (one COMPACT snapshot,
        # as Table.compact does); the real buckets are then compacted by the executors
        moved = primary_key_table(table, "move_postponed").move_postponed(
            partitions=partitions, parallelism=parallelism
        )
    planned: Snapshot | None = None
    vectors: dict[tuple[bytes, int, str], DeletionFile] = {}
    # (a task's missing input file is a lost race, not corruption, where it left the table
    # after this snapshot: read.guard.lost_race)
    before = table.store.latest_snapshot()
    if append:
        if force_level0:
            primary_key_table(table, "flush_level0")  # refused: only level 0 here
        planned = table.store.latest_snapshot()
        jobs = compaction_tasks(table.context, table.context.append, full, partitions, planned)
        vectors = snapshot_deletion_files(table.context, planned)
    else:
        jobs = plan_buckets(table.store, table.schema, partitions)
    if not jobs:
        return moved
    per_task = max(int(spark.sparkContext.getConf().get("spark.task.cpus", "1")), 1)
    token = new_name_token()
    tasks = [
        _Task(options, tuple(group), full, force_level0, token, parallelism, append, vectors)
        for group in deal_tasks(jobs, per_task)
    ]
    context = table.context
    try:
        results: list[TaskResult] = (
            spark.sparkContext.parallelize(tasks, len(tasks)).map(_run_task).collect()
        )
    except BaseException:
        remove_job_files(context, jobs, token)
        raise
    failed = [r.error for r in results if r.error is not None]
    if failed:
        remove_job_files(context, jobs, token)
        conflict = lost_race(table.store, before, failed[0])
        if conflict is not None:
            raise conflict from failed[0]
        raise failed[0]
    # in (partition, bucket) order, as the in-process compaction commits them (a fixed
    # append bucket's windows by their first sequence number)
    messages = sorted(
        (m for r in results for m in r.messages),
        key=lambda m: (
            m.partition,
            m.bucket,
            m.compact_before[0].min_sequence_number if m.compact_before else 0,
        ),
    )
    written = [p for r in results for p in r.written]
    if not messages:
        remove_job_files(context, jobs, token)
        return moved
    if vectors:  # the compacted files' vectors leave the index, as in-process
        done = CompactionPlan(messages, written)
        try:
            retire_vectors(context, planned, jobs, DeletionVectorReader(table.file_io), done)
        except BaseException:
            done.discard(context)
            remove_job_files(context, jobs, token)
            raise
        messages, written = done.messages, done.written
    snapshot = table.commit_compaction(messages, written=written)
    remove_job_files(context, jobs, token, keep=written)
    return snapshot
