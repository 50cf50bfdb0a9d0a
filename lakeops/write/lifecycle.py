"""The lifecycle both table writers share: ``write`` → route to (partition, bucket) → buffer →
``flush`` → ``prepare_commit``, or ``abort``.

:class:`BucketWrite` owns what is the same for every table kind: input of any form, one
:class:`BucketFiles` per (partition, bucket) with its directory and numbered buffer
(:class:`~lakeops.write.buffer.BucketBuffer`), flushes of every buffered bucket on the writer's
pool of ``parallelism`` threads (:mod:`lakeops.parallel`), one commit message per bucket with
changes, and the refusal to go on after a failure (part of the input may be lost, so a failed
writer can only be aborted). The table kind's difference is what its subclass fills in: how rows
are validated and routed (:meth:`BucketWrite._write_table`), what a bucket holds
(:meth:`BucketWrite._new_bucket`), how one bucket is flushed (sorted and merged for a
primary-key table, written as they came for an append table: :meth:`BucketWrite._flush_one`),
and what its commit message and abort add.

A flush of many small buckets (a write to thousands of partitions) does not pay each bucket's
per-file steps one bucket at a time: a kind may flush runs of neighbouring small buckets as one
unit (:meth:`BucketWrite._joins_batch`, :meth:`BucketWrite._flush_batch`), whose per-file
metadata is computed for every file of the unit in whole-array passes
(:func:`lakeops.kv.writer.write_runs`); each bucket still gets the files and metadata a flush of
it alone writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

import pyarrow as pa

from lakeops.errors import DataValidationError, LakeopsError
from lakeops.format import binary_row, paths
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.identifiers import MAX_NAME_BYTES
from lakeops.io.file_io import join
from lakeops.parallel import check_parallelism, pool_for, run_ordered, task_groups, workers_for
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths
from lakeops.write.buffer import BucketBuffer
from lakeops.write.frames import WriteInput, arrow_parts

__all__ = [
    "BucketFiles",
    "BucketPlace",
    "BucketWrite",
    "WriteInput",
    "check_component_lengths",
    "flush_cost",
]


def check_component_lengths(directory: str) -> None:
    """Refuse a partition directory with a component longer than a file system allows (255
    UTF-8 bytes), as a lakeops error instead of the store's OSError with a full local path."""
    for component in directory.split("/"):
        size = len(component.encode("utf-8"))
        if size > MAX_NAME_BYTES:
            column = paths.unescape_path_name(component.split("=", 1)[0])
            raise DataValidationError(
                f"the partition directory of column {column!r} ({component[:60]!r}…) would be "
                f"{size} bytes long, over the limit of {MAX_NAME_BYTES} bytes for one path "
                "component; shorten the partition values of that column (nothing was written)"
            )


class BucketPlace(NamedTuple):
    """Which (partition, bucket) a bucket of a write is, and where its files go."""

    partition: tuple[object, ...]
    partition_bytes: bytes
    bucket: int
    directory: str
    external: ExternalPaths | None


@dataclass
class BucketFiles:
    """One (partition, bucket) of a write: where its files go, its buffer and what its
    flushes wrote."""

    partition: tuple[object, ...]
    partition_bytes: bytes
    bucket: int
    directory: str
    external: ExternalPaths | None
    buffer: BucketBuffer
    #: new level-0 data files of this write's flushes
    files: list[DataFileMeta] = field(default_factory=list)
    #: the storage path of every file the flushes wrote
    written: list[str] = field(default_factory=list)


B = TypeVar("B", bound=BucketFiles)

#: what a flush of one bucket costs besides its rows, in bytes of rows that cost as much (the
#: files it opens, encodes the footers of and closes): the share of a small bucket when the
#: flush packs buckets into pool tasks
_FLUSH_UNIT_BYTES = 1 << 19


#: the most buffered bytes the buckets of one unit of several buckets hold (a unit sorts,
#: merges and encodes them together, holding a few copies of them at once)
_BATCH_BYTES = 1 << 24


def flush_cost(bucket: BucketFiles) -> float:
    """The relative cost of flushing what ``bucket`` buffers now (see
    :func:`lakeops.parallel.run_ordered`): its bytes, plus the fixed cost of its files."""
    return float(bucket.buffer.nbytes + _FLUSH_UNIT_BYTES)


class BucketWrite(Generic[B]):
    """The two-phase writer of one table; see the module docstring. ``ignore_previous`` (an
    overwrite): the write builds on no snapshot, as the table's current files are being
    replaced; ``replaced``: of a partition overwrite, the serialized partitions it replaces.
    A kind's own state is made by :meth:`_setup`."""

    def __init__(
        self,
        table: TableContext,
        *,
        ignore_previous: bool = False,
        parallelism: int | None = None,
        replaced: Callable[[bytes], bool] | None = None,
    ) -> None:
        #: how many buckets a flush writes (and compacts) at once; see :mod:`lakeops.parallel`
        self.parallelism = check_parallelism(parallelism)
        self.table = table
        self.store = table.store
        self.schema = table.schema
        self.options = table.options
        self.partition_types = self.schema.types_of(self.schema.partition_keys)
        self.locations = table.locations
        self.locations.check_writable()
        self._ignore_previous = ignore_previous
        #: a partition overwrite: the (serialized) partitions it replaces (None: all of them)
        self._replaced = replaced
        self._buckets: dict[tuple[bytes, int], B] = {}
        #: the serialized bytes of each partition value met so far (:meth:`_partition_bytes`)
        self._partitions: dict[tuple[object, ...], bytes] = {}
        self._closed = False
        #: the error that made this writer unusable (it can only be aborted)
        self._failure: BaseException | None = None
        #: flushes (and background compactions) run here (None: in the calling thread)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_made = False
        self._setup()

    def _setup(self) -> None:
        """Make the table kind's own state (after the shared state above)."""

    # -------------------------------------------------------------------- input
    def write(self, data: WriteInput) -> None:
        """Validate and buffer ``data`` (Arrow data or data frames:
        :mod:`lakeops.write.frames`)."""
        self._check_usable()
        try:
            for part in arrow_parts(data):
                self._write_table(part)
        except BaseException as error:
            self._failure = error
            raise

    def _check_usable(self) -> None:
        name = type(self).__name__
        if self._closed:
            raise LakeopsError(
                f"this {name} was already committed or aborted; "
                "create a new one with table.new_write()"
            )
        if self._failure is not None:
            raise LakeopsError(
                f"this {name} failed earlier ({type(self._failure).__name__}: "
                f"{self._failure}) and may have lost buffered rows; call abort() and write "
                "again with a new writer"
            ) from self._failure

    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        """Validate ``data`` and buffer its rows in their buckets (:meth:`_bucket`)."""
        raise NotImplementedError

    def _buffered(self) -> int:
        """The in-memory size of every bucket's buffered rows."""
        return sum(b.buffer.nbytes for b in self._buckets.values())

    def _bucket(self, partition: tuple[object, ...], bucket: int) -> B:
        """The state of (``partition``, ``bucket``), made at its first row."""
        pbytes = self._partition_bytes(partition)
        found = self._buckets.get((pbytes, bucket))
        if found is None:
            relative = self.locations.relative_bucket(pbytes, bucket)
            check_component_lengths(relative)
            found = self._new_bucket(
                BucketPlace(
                    partition,
                    pbytes,
                    bucket,
                    join(self.store.root, relative),
                    self.locations.external_paths_of(pbytes, bucket),
                )
            )
            self._buckets[(pbytes, bucket)] = found
        return found

    def _partition_bytes(self, partition: tuple[object, ...]) -> bytes:
        """The serialized BinaryRow of ``partition``, encoded once per partition value (every
        bucket of a partition, and every later batch, asks again). Values a dictionary cannot
        tell apart although their bytes differ — floats (``0.0 == -0.0``, NaN) — or that are
        not hashable are encoded afresh."""
        cacheable = not any(isinstance(v, float) for v in partition)
        if cacheable:
            try:
                found = self._partitions.get(partition)
            except TypeError:  # an unhashable value
                cacheable = False
            else:
                if found is not None:
                    return found
        pbytes = binary_row.serialize(list(partition), self.partition_types)
        if cacheable:
            self._partitions[partition] = pbytes
        return pbytes

    def _new_bucket(self, place: BucketPlace) -> B:
        """The state of a new bucket of the write at ``place``."""
        raise NotImplementedError

    def _flush_if_full(self) -> None:
        """Flush once the buffers together exceed ``write-buffer-size``."""
        if self._buffered() > self.options.write_buffer_size:
            self.flush()

    # -------------------------------------------------------------------- flush
    def _executor(self) -> ThreadPoolExecutor | None:
        """The writer's pool, made at the first flush (None at parallelism 1)."""
        if not self._pool_made:
            self._pool, self._pool_made = pool_for(self.parallelism), True
        return self._pool

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def flush(self) -> None:
        """Write every buffered bucket as level-0 files.

        Buckets are flushed on up to ``parallelism`` threads (each bucket by one thread at a
        time; see :mod:`lakeops.parallel`), small buckets packed together into pool tasks of
        about equal cost (:func:`flush_cost`) so a write to thousands of (partition, bucket)
        pairs does not pay a pool task per bucket; a kind may flush several small buckets as
        one unit (:meth:`_flush_units`). A bucket's files and sequence numbers do not depend
        on the other buckets, on the units or on timing, so the result is the same at every
        parallelism. If any unit fails, the files of the units that succeeded are still
        recorded (so :meth:`abort` deletes them), the failed unit deleted its own, and the
        first error is raised."""
        self._check_usable()
        try:
            pending = [b for b in self._buckets.values() if b.buffer.batches]
            if not pending:
                return
            costs = [flush_cost(b) for b in pending]
            cost_of = {id(b): c for b, c in zip(pending, costs, strict=True)}
            work = [(b, b.buffer.take()) for b in pending]
            executor = self._executor()
            units = run_ordered(
                self._flush_unit,
                self._flush_units(work, costs),
                self.parallelism,
                on_success=self._record_unit,
                executor=executor,
                cost=lambda unit: sum(cost_of[id(b)] for b, _ in unit),
            )
            flushed = [done for unit in units for done in unit]
            self._after_flush(pending, flushed, executor)
        except BaseException as error:
            self._failure = error
            raise

    def _flush_one(self, bucket: B, batches: list[pa.Table]) -> Any:
        """Write the buffered ``batches`` of ``bucket`` (on a pool thread)."""
        raise NotImplementedError

    def _flush_units(
        self, work: list[tuple[B, list[pa.Table]]], costs: Sequence[float]
    ) -> list[list[tuple[B, list[pa.Table]]]]:
        """``work`` (every pending bucket with its batches, in order; ``costs``: the
        :func:`flush_cost` of each) cut into the units a flush runs, consecutive and in the
        order of ``work``. The buckets are cut into about
        :data:`~lakeops.parallel.TASKS_PER_WORKER` consecutive shares of equal cost per worker
        (:func:`~lakeops.parallel.task_groups`); within a share, each run of consecutive
        buckets the kind flushes together (:meth:`_joins_batch`) is one unit
        (:meth:`_flush_batch`) of at most about :data:`_BATCH_BYTES` buffered bytes, and every
        other bucket a unit alone. A flush of few buckets (no more than the shares) keeps one
        unit per bucket."""
        workers = workers_for(self.parallelism, len(work))
        units: list[list[tuple[B, list[pa.Table]]]] = []
        for group in task_groups(costs, len(work), workers):
            batch: list[tuple[B, list[pa.Table]]] = []
            size = 0.0
            for i in group:
                bucket, batches = work[i]
                if len(group) > 1 and self._joins_batch(bucket, batches):
                    if size >= _BATCH_BYTES:  # (what one unit holds in memory at once)
                        units.append(batch)
                        batch, size = [], 0.0
                    batch.append((bucket, batches))
                    size += costs[i] - _FLUSH_UNIT_BYTES
                    continue
                if batch:
                    units.append(batch)
                    batch, size = [], 0.0
                units.append([(bucket, batches)])
            if batch:
                units.append(batch)
        return units

    def _joins_batch(self, _bucket: B, _batches: list[pa.Table]) -> bool:
        """Whether a bucket (to flush the given batches) may be flushed together with its
        neighbours, by :meth:`_flush_batch` (never, unless the kind says so)."""
        return False

    def _flush_unit(self, unit: list[tuple[B, list[pa.Table]]]) -> list[Any]:
        """Write the buckets of ``unit`` (on a pool thread): what :meth:`_flush_one` returns
        for each, in order — one bucket by :meth:`_flush_one`, several by
        :meth:`_flush_batch`."""
        if len(unit) == 1:
            return [self._flush_one(*unit[0])]
        return self._flush_batch(unit)

    def _flush_batch(self, unit: list[tuple[B, list[pa.Table]]]) -> list[Any]:
        """Write several buckets together (each one :meth:`_joins_batch` accepted): what
        :meth:`_flush_one` returns for each, in order. It succeeds or fails as a whole: on
        failure it deletes whatever it wrote before the error propagates."""
        raise NotImplementedError

    def _record_unit(self, unit: list[tuple[B, list[pa.Table]]], flushed: list[Any]) -> None:
        """:meth:`_record` of every bucket of a flushed ``unit``."""
        for (bucket, _), done in zip(unit, flushed, strict=True):
            self._record(bucket, done)

    def _record(self, bucket: B, flushed: Any) -> None:
        """Record what a flush of ``bucket`` wrote (for the commit, or for an abort)."""
        raise NotImplementedError

    def _after_flush(
        self, pending: Sequence[B], flushed: Sequence[Any], executor: ThreadPoolExecutor | None
    ) -> None:
        """What follows a flush of ``pending`` (nothing unless the kind adds it)."""

    # -------------------------------------------------------------------- commit
    def prepare_commit(self) -> list[CommitMessage]:
        """Write everything buffered and return one message per (partition, bucket) with
        changes."""
        self.flush()
        try:
            self._before_commit()
        except BaseException as error:
            self._failure = error
            raise
        self._close_pool()
        self._closed = True
        messages = [self._message(b) for b in self._buckets.values()]
        return [m for m in messages if not m.is_empty]

    def _before_commit(self) -> None:
        """What must finish before the messages are made (nothing unless the kind adds it)."""

    def _message(self, bucket: B) -> CommitMessage:
        """The commit message of ``bucket``."""
        raise NotImplementedError

    def abort(self) -> None:
        """Delete every file written by this writer; nothing of it will be committed."""
        self._stop()
        self._close_pool()
        for bucket in self._buckets.values():
            for path in self._written_by(bucket):
                self.store.file_io.delete(path)
            bucket.buffer.clear()
            bucket.files, bucket.written = [], []
        self._closed = True

    def _stop(self) -> None:
        """Stop the work in flight before an abort (nothing unless the kind adds it)."""

    def written_paths(self) -> list[str]:
        """Every storage path this writer wrote so far (to delete when its commit fails)."""
        return [p for bucket in self._buckets.values() for p in self._written_by(bucket)]

    def _written_by(self, bucket: B) -> list[str]:
        """Every storage path written for ``bucket``, for an abort."""
        return list(bucket.written)
