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

**Deletion vectors** (``deletion-vectors.enabled``, as Paimon 0.9 with a deletion-vector
maintainer): an unaware partition compacts every file that has a vector, whatever its size, in
one task per index file holding such vectors (the other files binned as above); a fixed
bucket's full compaction keeps only leading files at the target size *without* a vector and
rewrites all the rest, however few. Rewritten files leave out the deleted rows; each live index
file of the (partition, bucket) that held a vector of a compacted file is deleted and the
vectors it holds of other files are copied unchanged into one new index file. The commit
conflicts if a vector was added to an input meanwhile.

**Row tracking** (``row-tracking.enabled``): a partition's small files whose row ids follow one
another, in row-id order, binned as unaware buckets bin them; the compacted file holds
``_ROW_ID`` and ``_SEQUENCE_NUMBER`` physically, so every row keeps its id and sequence number.
With **data evolution** the units are row-id groups (a file and the files updating columns of
its rows), a group of several files compacted even alone, its columns merged as readers merge
them (:func:`pick_group_bins`), into one unrolled file per bin; a commit that finds an update
written meanwhile into a range it merged fails (:mod:`lakeops.commit.row_ids`).

A compaction rewrites its inputs, in order, as rolling level-0 files of source ``COMPACT``
whose sequence numbers start at the first input's (``AppendOnlyFileStoreWrite.compactRewrite``),
so a fixed bucket's rows keep their order. Tasks run on up to ``parallelism`` threads.

A ``where=`` filter's partitions reach the planner as ``keep`` (:mod:`lakeops.compact.selection`);
sort compaction (``order_by=``, ``clustering.columns``) is :mod:`lakeops.compact.sort`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from lakeops.compact.planner import (
    BucketJob,
    CompactionPlan,
    CompactionProgress,
    live_buckets,
    run_jobs,
)
from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.blob_file import is_blob_file
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from lakeops.format.deletion_vector import (
    DELETION_VECTORS_INDEX,
    DeletionFile,
    blob,
    deletion_files,
    encode_index_file,
    roll_blobs,
)
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry
from lakeops.format.manifest import FileKind
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.writer import AppendLayout, RollingFileWriter, TrackedAppendLayout
from lakeops.options.append import AppendOptions
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.row_tracking import (
    ROW_ID,
    SEQUENCE_NUMBER,
    GroupReader,
    data_evolution,
    row_id_groups,
    row_tracking,
)
from lakeops.read.scan import partition_matches, snapshot_deletion_files
from lakeops.store.context import TableContext

__all__ = [
    "compaction_tasks",
    "partitions_to_compact",
    "pick_bucket_windows",
    "pick_group_bins",
    "pick_row_id_bins",
    "pick_unaware_bins",
    "plan",
    "retire_vectors",
    "run_tasks",
]

#: what :func:`_bins` packs: files, or row-id groups of files
U = TypeVar("U")

#: a data-evolution compaction writes one file per bin, never rolled (a BLOB file of its rows
#: must fall inside one data file's row ids)
_ONE_FILE = 1 << 62

#: a full compaction of a fixed bucket needs at least this many files
FULL_COMPACT_MIN_FILE = 3

#: the index file (storage path) holding a data file's deletion vector, None when it has none
VectorOf = Callable[[DataFileMeta], str | None]


def pick_bucket_windows(
    files: Sequence[DataFileMeta],
    opts: AppendOptions,
    full: bool,
    vector_of: VectorOf | None = None,
) -> list[list[DataFileMeta]]:
    """The runs of a fixed bucket's files to compact (see the module docstring).
    ``vector_of`` (a table with deletion vectors): a full compaction keeps no leading file
    that has a vector and rewrites whatever follows, however few (Paimon's
    ``FullCompactTask`` with a deletion-vector maintainer)."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    target = opts.target_file_size
    if full:
        if not ordered or (vector_of is None and len(ordered) < FULL_COMPACT_MIN_FILE):
            return []
        start = 0
        while (
            start < len(ordered)
            and ordered[start].file_size >= target
            and (vector_of is None or vector_of(ordered[start]) is None)
        ):
            start += 1
        rest = ordered[start:]
        if vector_of is not None:
            return [rest] if rest else []
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
    files: Sequence[DataFileMeta],
    opts: AppendOptions,
    full: bool,
    vector_of: VectorOf | None = None,
) -> list[list[DataFileMeta]]:
    """The bins of one partition's files to compact (see the module docstring).
    ``vector_of`` (a table with deletion vectors): every file with a vector is compacted,
    whatever its size, in one task with the other files whose vectors share its index file;
    the files without are binned as usual (Paimon's ``packInDeletionVectorVMode``)."""
    if vector_of is not None:
        by_index: dict[str, list[DataFileMeta]] = {}
        rest = []
        for f in files:
            index = vector_of(f)
            if index is None:
                rest.append(f)
            else:
                by_index.setdefault(index, []).append(f)
        return [*by_index.values(), *pick_unaware_bins(rest, opts, full)]
    small = sorted(
        (f for f in files if f.file_size < opts.compaction_file_size), key=lambda f: f.file_size
    )
    return _bins(small, opts, full, size=_file_size, count=_one)


def pick_row_id_bins(
    files: Sequence[DataFileMeta], opts: AppendOptions, full: bool
) -> list[list[DataFileMeta]]:
    """The bins of one partition's files of a row-tracking table: its small files in row-id
    order, cut wherever the next file's ids do not follow the previous file's (a file of
    another writer's range, a large file between), each run binned as
    :func:`pick_unaware_bins` bins by size. A compacted file's rows thus hold consecutive row
    ids from its first one, so every reader — one that reads the physical ``_ROW_ID`` column,
    one that counts from ``_FIRST_ROW_ID`` — gives each row the id it had."""
    ordered = sorted(
        (f for f in files if f.first_row_id is not None), key=lambda f: f.first_row_id or 0
    )
    runs: list[list[DataFileMeta]] = []
    end: int | None = None
    for f in ordered:
        if f.file_size >= opts.compaction_file_size:
            end = None
            continue
        if runs and end == f.first_row_id:
            runs[-1].append(f)
        else:
            runs.append([f])
        end = (f.first_row_id or 0) + f.row_count
    return [b for run in runs for b in _bins(run, opts, full, size=_file_size, count=_one)]


def pick_group_bins(
    files: Sequence[DataFileMeta], opts: AppendOptions, full: bool
) -> list[list[DataFileMeta]]:
    """The bins of one bucket's files of a data-evolution table, in units of row-id groups
    (:func:`lakeops.read.row_tracking.row_id_groups`: a file of some rows and the files that
    update columns of the same rows): runs of groups whose row ids follow one another, cut at a
    group of one file at the compaction size (nothing to merge), each run binned by the size of
    its groups' data files as :func:`pick_unaware_bins` bins files, a group above the target
    size alone. A bin of one group with several files is compacted too (its columns merged:
    Paimon's ``DataEvolutionCompactCoordinator``). Each bin is the data files of its groups;
    BLOB files are never rewritten (the compacted file holds the other columns of the same
    rows, so they still belong to it)."""
    runs: list[list[tuple[DataFileMeta, ...]]] = []
    end: int | None = None
    for group in row_id_groups(files):
        data = tuple(f for f in group if not is_blob_file(f.file_name))
        first = data[0].first_row_id
        if first is None or (len(data) == 1 and data[0].file_size >= opts.compaction_file_size):
            end = None
            continue
        if runs and end == first:
            runs[-1].append(data)
        else:
            runs.append([data])
        end = first + data[0].row_count
    bins: list[list[DataFileMeta]] = []
    for run in runs:
        for picked in _bins(run, opts, full, size=_group_size, count=len):
            bins.append([f for group in picked for f in group])
    return bins


def _group_size(group: tuple[DataFileMeta, ...]) -> int:
    return sum(f.file_size for f in group)


def _file_size(f: DataFileMeta) -> int:
    return f.file_size


def _one(_: DataFileMeta) -> int:
    return 1


def _bins(
    units: Sequence[U],
    opts: AppendOptions,
    full: bool,
    *,
    size: Callable[[U], int],
    count: Callable[[U], int],
) -> list[list[U]]:
    """``units`` (files, or groups of files), in their order, packed into bins that close at
    the target size with at least ``compaction.min.file-num`` files or at
    ``compaction.max.file-num`` files; a unit above the target size is a bin of its own; a
    full compaction also takes the last, unfilled bin. Only bins of two files or more are
    kept."""
    bins: list[list[U]] = []
    current: list[U] = []
    weight = files = 0
    for unit in units:
        if size(unit) > opts.target_file_size:
            bins += [current, [unit]]
            current, weight, files = [], 0, 0
            continue
        current.append(unit)
        weight += size(unit)
        files += count(unit)
        if (weight >= opts.target_file_size and files >= opts.min_file_num) or (
            files >= opts.unaware_max_file_num
        ):
            bins.append(current)
            current, weight, files = [], 0, 0
    if full:
        bins.append(current)
    return [b for b in bins if sum(count(u) for u in b) > 1]


def compaction_tasks(
    ctx: TableContext,
    opts: AppendOptions,
    full: bool,
    partitions: Sequence[Mapping[str, Any]] | None,
    snapshot: Snapshot | None = None,
    keep: Callable[[bytes], bool] | None = None,
) -> list[BucketJob]:
    """The compactions of ``snapshot`` (default: the latest), by (partition, bucket): one job
    per window of a fixed bucket's files or bin of a partition's files (so one bucket may have
    several), in the partitions ``partitions`` match and ``keep`` (a selector of serialized
    partitions, e.g. a ``where=`` filter's) takes. Files with a deletion vector are picked as
    Paimon picks them."""
    if snapshot is None:
        snapshot = ctx.store.latest_snapshot()
    if partitions:
        specs = partition_matches(ctx.schema, partitions, ctx.options)
        keep = specs if keep is None else _both(specs, keep)
    vectors = snapshot_deletion_files(ctx, snapshot)
    tasks: list[BucketJob] = []
    for job in live_buckets(ctx.store.live_entries(snapshot), keep):
        partition, bucket, files = job.partition, job.bucket, job.files
        vector_of: VectorOf | None = None
        if ctx.options.deletion_vectors or vectors:

            def vector_of(f: DataFileMeta, p: bytes = partition, b: int = bucket) -> str | None:
                df = vectors.get((p, b, f.file_name))
                return None if df is None else df.path

        if row_tracking(ctx.schema):
            if vector_of is not None and any(vector_of(f) for f in files):
                raise UnsupportedFeatureError(
                    "lakeops does not compact files with deletion vectors of a row-tracking "
                    "table (the rows left would no longer hold consecutive row ids); nothing "
                    "was written — compact it with Paimon (Spark, Flink)"
                )
            evolves = data_evolution(ctx.schema)
            picked = (pick_group_bins if evolves else pick_row_id_bins)(files, opts, full)
        elif ctx.options.bucket > 0:
            picked = pick_bucket_windows(files, opts, full, vector_of)
        else:
            picked = pick_unaware_bins(files, opts, full, vector_of)
        tasks += [BucketJob(partition, bucket, job.total_buckets, tuple(p)) for p in picked]
    return tasks


def _both(a: Callable[[bytes], bool], b: Callable[[bytes], bool]) -> Callable[[bytes], bool]:
    """The partitions both selectors take."""
    return lambda p: a(p) and b(p)


def partitions_to_compact(ctx: TableContext, *, full: bool) -> list[dict[str, Any]]:
    """The partitions (``{column: value}``, ``{}`` for an unpartitioned table) in which a
    compaction (``full``: a full one) of the latest snapshot would rewrite files."""
    types = ctx.schema.types_of(ctx.schema.partition_keys)
    seen: dict[bytes, dict[str, Any]] = {}
    for task in compaction_tasks(ctx, ctx.append, full, None):
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
    keep: Callable[[bytes], bool] | None = None,
) -> CompactionPlan:
    """Pick and run the compactions of the latest snapshot (in the partitions ``partitions``
    match and ``keep`` takes); nothing is committed. Deletion vectors of that snapshot are
    applied, and those of the files compacted away leave the index (:func:`retire_vectors`)."""
    snapshot = ctx.store.latest_snapshot()
    tasks = compaction_tasks(ctx, ctx.append, full, partitions, snapshot, keep)
    vectors = snapshot_deletion_files(ctx, snapshot)
    result = run_tasks(ctx, tasks, parallelism, progress, vectors=vectors)
    if vectors and tasks:
        try:
            retire_vectors(ctx, snapshot, tasks, DeletionVectorReader(ctx.file_io), result)
        except BaseException:
            result.discard(ctx)
            raise
    return result


def run_tasks(
    ctx: TableContext,
    tasks: Sequence[BucketJob],
    parallelism: int | None,
    progress: Callable[[CompactionProgress], None] | None = None,
    name_token: str | None = None,
    *,
    vectors: Mapping[tuple[bytes, int, str], DeletionFile],
) -> CompactionPlan:
    """Rewrite the files of each of ``tasks`` (of :func:`compaction_tasks`), in order, as new
    files whose names carry ``name_token`` when given (a distributed job's cleanup finds them
    by it), without the rows ``vectors`` (the planned snapshot's deletion files, by partition,
    bucket and file name) delete; one message per task, in task order. On any failure every
    file written is deleted. Nothing is committed, and the vectors stay in the index: the
    caller retires them (:func:`plan`)."""
    opts = ctx.append
    if not tasks:
        return CompactionPlan()
    dvs = DeletionVectorReader(ctx.file_io)
    reader = AppendFileReader(ctx.file_io, ctx.schema, ctx.store.schema, ctx.root)
    columns = ctx.schema.field_names

    tracked = row_tracking(ctx.schema)
    evolves = data_evolution(ctx.schema)
    groups = GroupReader(reader)
    written = _written_schema(ctx.schema) if evolves else ctx.schema
    system = [*written.field_names, ROW_ID, SEQUENCE_NUMBER]

    def rewrite(task: BucketJob) -> tuple[CommitMessage | None, list[str]]:
        directory = ctx.bucket_path(task.partition, task.bucket)
        first = task.files[0].min_sequence_number
        writer = RollingFileWriter(
            ctx.file_io,
            directory,
            TrackedAppendLayout(written, first) if tracked else AppendLayout(ctx.schema, first),
            _ONE_FILE if evolves else opts.target_file_size,
            FILE_SOURCE_COMPACT,
            ctx.locations.external_paths_of(task.partition, task.bucket),
            name_token,
        )
        try:
            for group in row_id_groups(task.files) if tracked else ():
                # in row-id order, each row with its id and sequence number, a data-evolution
                # group's columns each from the newest file holding it
                writer.write(groups.read(directory, group, system))
            for f in () if tracked else task.files:
                pieces = reader.iter_batches(directory, f, columns, 131_072)
                df = vectors.get((task.partition, task.bucket, f.file_name))
                for batch in dvs.iter_apply(pieces, df, f):
                    writer.write(batch)
            after = writer.close()
        except BaseException:
            writer.abort()
            raise
        message = CommitMessage(
            task.partition,
            task.bucket,
            task.total_buckets,
            compact_before=task.files,
            compact_after=tuple(after),
        )
        return message, list(writer.written)

    return run_jobs(ctx, tasks, rewrite, parallelism, progress)


def _written_schema(schema: TableSchema) -> TableSchema:
    """The fields a data-evolution table's compaction writes: every field but BLOB columns,
    which stay in their ``.blob`` files (Paimon's ``DataEvolutionNormalCompactTask``)."""
    kept = tuple(f for f in schema.fields if f.type.root != "BLOB")
    return dataclasses.replace(schema, fields=kept)


def _write_index_file(
    ctx: TableContext,
    partition: bytes,
    bucket: int,
    blobs: Sequence[tuple[str, bytes, DeletionFile]],
    result: CompactionPlan,
) -> IndexManifestEntry:
    """Write one deletion-vector index file holding ``blobs``; its ADD entry."""
    content, ranges = encode_index_file(blobs)
    new = ctx.locations.new_index_file(partition, bucket)
    if new.external_path is None and ctx.locations.index_in_data_dir:
        ctx.file_io.mkdirs(new.path.rsplit("/", 1)[0])
    result.written.append(new.path)
    ctx.file_io.write_bytes(new.path, content)
    extra: list[tuple[str, Any]] = [("_DELETIONS_VECTORS_RANGES", ranges)]
    if new.external_path:
        extra.append(("_EXTERNAL_PATH", new.external_path))
    meta = IndexFileMeta(DELETION_VECTORS_INDEX, new.name, len(content), len(ranges), tuple(extra))
    return IndexManifestEntry(FileKind.ADD, partition, bucket, meta)


def retire_vectors(
    ctx: TableContext,
    snapshot: Snapshot | None,
    tasks: Sequence[BucketJob],
    dvs: DeletionVectorReader,
    result: CompactionPlan,
) -> None:
    """Take the vectors of the files compacted away out of the index, as Paimon's compaction
    of an append table with deletion vectors does: every live deletion-vector index file of a
    compacted (partition, bucket) that holds such a vector is deleted, and the vectors it
    holds of other files are copied unchanged into one new index file — for an unaware-bucket
    table, index files rolled at ``deletion-vector.index-file.target-size`` (none when no
    vector is left). The changes ride on the first message of that (partition, bucket)."""
    gone: dict[tuple[bytes, int], set[str]] = {}
    for t in tasks:
        gone.setdefault((t.partition, t.bucket), set()).update(f.file_name for f in t.files)
    changes: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    for e in ctx.store.index_entries(snapshot):
        names = gone.get((e.partition, e.bucket))
        if e.file.index_type != DELETION_VECTORS_INDEX or names is None:
            continue
        path = ctx.locations.index_entry_path(e.partition, e.bucket, e.file)
        files = deletion_files([e], {e.file.file_name: path})
        if not any(name in names for (_, _, name) in files):
            continue
        out = changes.setdefault((e.partition, e.bucket), [])
        out.append(IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file))
        kept = [(name, df) for (_, _, name), df in files.items() if name not in names]
        if not kept:
            continue
        data = dvs.index_file(path)
        blobs = [(n, blob(data, df, path), df) for n, df in kept]
        # unaware-bucket tables roll (Paimon's AppendDeleteFileMaintainer); a fixed bucket keeps
        # one file (its BucketedDvMaintainer writes a single file)
        target = ctx.options.dv_index_file_target_size if ctx.options.bucket == -1 else None
        for group in roll_blobs(blobs, target) if target else [blobs]:
            out.append(_write_index_file(ctx, e.partition, e.bucket, group, result))
    for i, m in enumerate(result.messages):
        mine = changes.pop((m.partition, m.bucket), None)
        if mine:
            result.messages[i] = dataclasses.replace(m, compact_index_changes=tuple(mine))
