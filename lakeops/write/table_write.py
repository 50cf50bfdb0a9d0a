"""TableWrite: the two-phase writer of a table (``write`` … ``prepare_commit``).

Rows are validated (:mod:`lakeops.write.records`), routed to their partition and bucket
(:mod:`lakeops.write.router`), and appended to a per-(partition, bucket) buffer with sequence
numbers that continue from the largest already committed in that bucket
(:mod:`lakeops.write.buffer`). When the buffers together exceed ``write-buffer-size`` they are
flushed: each is sorted by (key, sequence order), merged with the table's merge engine and
written as rolling level-0 files (:mod:`lakeops.write.flush`). Memory therefore stays bounded by
the buffer size whatever the size of the input. After each flush a bucket's compaction strategy
may compact it, in the background while the writer goes on (:mod:`lakeops.write.cadence`).
Flushes and compactions run on the writer's pool of ``parallelism`` threads.

``prepare_commit`` flushes everything, waits for the compactions in flight, writes the HASH
index of dynamic-bucket tables (:mod:`lakeops.write.hash_index`) and returns picklable
:class:`CommitMessage` objects; ``abort`` stops the compactions in flight and deletes every file
written so far. A writer that failed (any error from ``write`` or ``prepare_commit``) refuses to
go on: part of its input may be lost, so it can only be aborted.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from lakeops.errors import DataValidationError, LakeopsError
from lakeops.format import binary_row, paths
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.identifiers import MAX_NAME_BYTES
from lakeops.format.index_manifest import IndexFileMeta
from lakeops.io.file_io import join
from lakeops.options.registry import check_data_files
from lakeops.parallel import IO_THREADS, check_parallelism, pool_for, run_ordered
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths
from lakeops.write.buffer import BucketBuffer
from lakeops.write.cadence import BucketLsm, CompactionCadence
from lakeops.write.flush import Flushed, FlushSettings, flush_bucket
from lakeops.write.hash_index import write_hash_index
from lakeops.write.records import BUCKET_COLUMN, assigned_records, to_records
from lakeops.write.router import Router

__all__ = ["TableWrite", "WriteInput"]

WriteInput: TypeAlias = (
    pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.Table | pa.RecordBatch]
)


def _check_component_lengths(directory: str) -> None:
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


@dataclass
class _Bucket:
    """One (partition, bucket) of the write: its buffer, its LSM state and its pending
    commit."""

    partition: tuple[object, ...]
    partition_bytes: bytes
    bucket: int
    directory: str
    external: ExternalPaths | None
    buffer: BucketBuffer
    lsm: BucketLsm
    #: new level-0 data files and changelog files of this write's flushes
    files: list[DataFileMeta] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)
    #: the storage path of every file the flushes wrote
    written: list[str] = field(default_factory=list)
    #: dynamic buckets: the bucket-key hashes of the records written, for the HASH index
    key_hashes: list[np.ndarray] = field(default_factory=list)
    index_written: list[str] = field(default_factory=list)

    def add(self, flushed: Flushed) -> None:
        """Record what a flush of this bucket wrote (for the commit, or for an abort)."""
        self.files.extend(flushed.files)
        self.changelog.extend(flushed.changelog)
        self.written.extend(flushed.written)


class TableWrite:
    """Writes records to one table; see the module docstring.

    Example:
        >>> writer = table.new_write()            # doctest: +SKIP
        >>> writer.write(batch)                   # doctest: +SKIP
        >>> table.commit(writer.prepare_commit()) # doctest: +SKIP
    """

    def __init__(
        self,
        table: TableContext,
        *,
        ignore_previous: bool = False,
        parallelism: int | None = None,
    ) -> None:
        #: how many buckets a flush writes (and compacts) at once; see :mod:`lakeops.parallel`
        self.parallelism = check_parallelism(parallelism)
        self.table = table
        self.store = store = table.store
        self.schema = schema = table.schema
        self.options = table.options
        self.engine = table.engine
        self.partition_types = schema.types_of(schema.partition_keys)
        self.locations = table.locations
        self.locations.check_writable()
        self.cadence = CompactionCadence(table)
        self.flush_settings = FlushSettings.of(table)
        self._buckets: dict[tuple[bytes, int], _Bucket] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._closed = False
        #: the error that made this writer unusable (it can only be aborted)
        self._failure: BaseException | None = None
        #: flushes and background compactions run here (None: in the calling thread)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_made = False
        # the snapshot this write builds on (none for an overwrite, which replaces it)
        self._ignore_previous = ignore_previous
        self._base = None if ignore_previous else store.latest_snapshot()
        self.router = Router(table, self._base, parallelism=self.parallelism)

    # -------------------------------------------------------------------- input
    def write(self, data: WriteInput) -> None:
        """Validate and buffer ``data`` (a Table, RecordBatch, reader or iterable of them)."""
        self._check_usable()
        try:
            if isinstance(data, pa.Table | pa.RecordBatch):
                self._write_table(data)
                return
            for part in data:
                self._write_table(part)
        except BaseException as error:
            self._failure = error
            raise

    def _check_usable(self) -> None:
        if self._closed:
            raise LakeopsError(
                "this TableWrite was already committed or aborted; "
                "create a new one with table.new_write()"
            )
        if self._failure is not None:
            raise LakeopsError(
                f"this TableWrite failed earlier ({type(self._failure).__name__}: "
                f"{self._failure}) and may have lost buffered rows; call abort() and write "
                "again with a new writer"
            ) from self._failure

    def _executor(self) -> ThreadPoolExecutor | None:
        """The writer's pool, made at the first flush (None at parallelism 1)."""
        if not self._pool_made:
            self._pool, self._pool_made = pool_for(self.parallelism), True
        return self._pool

    def _close_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None

    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        data = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if isinstance(data, pa.Table) and BUCKET_COLUMN in data.column_names:
            records = assigned_records(data, self.schema, self.options)
        else:
            records = self.engine.prepare(to_records(data, self.schema, self.options))
        if records.num_rows == 0:
            return
        # route in slices no larger than half the buffer, so a huge input still flushes in time
        rows_per_slice = max(
            int(self.options.write_buffer_size / 2 / max(records.nbytes / records.num_rows, 1.0)), 1
        )
        for start in range(0, records.num_rows, rows_per_slice):
            for routed in self.router.route(records.slice(start, rows_per_slice)):
                bucket = self._bucket(routed.partition, routed.bucket)
                bucket.buffer.append(routed.records)
                if routed.key_hashes is not None:
                    bucket.key_hashes.append(routed.key_hashes)
            buffered = sum(b.buffer.nbytes for b in self._buckets.values())
            if buffered > self.options.write_buffer_size:
                self.flush()

    def _bucket(self, partition: tuple[object, ...], bucket: int) -> _Bucket:
        pbytes = binary_row.serialize(list(partition), self.partition_types)
        found = self._buckets.get((pbytes, bucket))
        if found is None:
            bucket_path = self.locations.relative_bucket(pbytes, bucket)
            _check_component_lengths(bucket_path)
            directory = join(self.store.root, bucket_path)
            external = self.locations.external_paths_of(pbytes, bucket)
            live = self._restored_files(pbytes, bucket)
            next_seq = max((f.max_sequence_number for f in live), default=-1) + 1
            found = _Bucket(
                partition,
                pbytes,
                bucket,
                directory,
                external,
                BucketBuffer(next_seq),
                self.cadence.bucket(live, directory, external),
            )
            self._buckets[(pbytes, bucket)] = found
        return found

    def _restored_files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """The bucket's live files in the latest snapshot (read once per writer)."""
        if self._restored is None:
            self._restored = {}
            live = self.store.live_entries(self._base, parallelism=IO_THREADS)
            # files in a format lakeops cannot read: refuse before this writer writes anything
            check_data_files((e.file.file_name for e in live), "write to")
            for e in live:
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._restored.get((partition, bucket), [])

    # -------------------------------------------------------------------- flush
    def flush(self) -> None:
        """Sort, merge and write every buffered bucket as level-0 files, then start each
        flushed bucket's next compaction in the background (unless ``write-only``; see
        :mod:`lakeops.write.cadence`).

        Buckets are flushed on up to ``parallelism`` threads (each bucket by one thread at a
        time; see :mod:`lakeops.parallel`): a bucket's files, sequence numbers and compactions
        do not depend on the other buckets or on timing, so the result is the same at every
        parallelism. If any bucket fails, the files of the buckets that succeeded are still
        recorded (so :meth:`abort` deletes them) and the first error is raised."""
        self._check_usable()
        try:
            self._flush()
        except BaseException as error:
            self._failure = error
            raise

    def _flush(self) -> None:
        pending = [b for b in self._buckets.values() if b.buffer.batches]
        if not pending:
            return
        work = [(b, b.buffer.take()) for b in pending]
        settings = self.flush_settings
        executor = self._executor()

        def flush_one(item: tuple[_Bucket, list[pa.Table]]) -> Flushed:
            bucket, batches = item
            return flush_bucket(batches, settings, bucket.directory, bucket.external)

        flushed = run_ordered(
            flush_one,
            work,
            self.parallelism,
            on_success=lambda item, done: item[0].add(done),
            executor=executor,
        )
        # each bucket's compaction touches only its own LSM state; the lookup cache they
        # share is thread-safe
        for bucket, done in zip(pending, flushed, strict=True):
            self.cadence.after_flush(bucket.lsm, done.files, executor)

    # -------------------------------------------------------------------- commit
    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything, wait for the compactions in flight, and return one message per
        (partition, bucket) with changes."""
        self.flush()
        try:
            self.cadence.before_commit(
                (b.lsm for b in self._buckets.values()), self.parallelism, self._executor()
            )
        except BaseException as error:
            self._failure = error
            raise
        self._close_pool()
        self._closed = True
        base_id = None if self._ignore_previous else (self._base.id if self._base else 0)
        messages = [
            CommitMessage(
                b.partition_bytes,
                b.bucket,
                self.options.bucket,
                tuple(b.files),
                tuple(b.lsm.before.values()),
                tuple(b.lsm.after.values()),
                tuple(b.changelog),
                tuple(b.lsm.changelog),
                self._hash_index(b),
                base_id,
            )
            for b in self._buckets.values()
        ]
        return [m for m in messages if not m.is_empty]

    def _hash_index(self, bucket: _Bucket) -> tuple[IndexFileMeta, ...]:
        """Dynamic buckets: the bucket's new complete HASH index file, if it gained hashes."""
        if not bucket.key_hashes or self.router.cross_partition:
            return ()
        written = write_hash_index(
            self.store,
            self.schema,
            self.locations,
            self._base,
            bucket.partition_bytes,
            bucket.bucket,
            bucket.key_hashes,
        )
        bucket.key_hashes = []
        if written is None:
            return ()
        bucket.index_written.append(written.path)
        return (written.meta,)

    def abort(self) -> None:
        """Stop the compactions in flight and delete every file written by this writer;
        nothing of it will be committed."""
        for bucket in self._buckets.values():
            bucket.lsm.cancel()
        self._close_pool()
        for bucket in self._buckets.values():
            for path in [*bucket.written, *bucket.lsm.written, *bucket.index_written]:
                self.store.file_io.delete(path)
            bucket.buffer.clear()
            bucket.files, bucket.written, bucket.lsm.written = [], [], []
            bucket.changelog, bucket.lsm.changelog = [], []
        self._closed = True
