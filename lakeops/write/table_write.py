"""TableWrite: the two-phase writer of a table (``write`` … ``prepare_commit``).

Rows are validated (:mod:`lakeops.write.records`), routed to their partition and bucket
(:mod:`lakeops.write.router`), and appended to a per-(partition, bucket) buffer with sequence
numbers that continue from the largest already committed in that bucket
(:mod:`lakeops.write.buffer`). When the buffers together exceed ``write-buffer-size`` they are
flushed: each is sorted by (key, sequence order), merged with the table's merge engine and
written as rolling level-0 files (:mod:`lakeops.write.flush`; many small buckets together, in
one sort and one merge: :func:`~lakeops.write.flush.flush_buckets`). Memory therefore stays
bounded by the buffer size whatever the size of the input. After each flush a bucket's
compaction strategy may compact it, in the background while the writer goes on
(:mod:`lakeops.write.cadence`). Flushes and compactions run on the writer's pool of
``parallelism`` threads.

``prepare_commit`` flushes everything, waits for the compactions in flight, writes the HASH
index of dynamic-bucket tables (:mod:`lakeops.write.hash_index`) and returns picklable
:class:`CommitMessage` objects; ``abort`` stops the compactions in flight and deletes every file
written so far. A writer that failed (any error from ``write`` or ``prepare_commit``) refuses to
go on: part of its input may be lost, so it can only be aborted.

Postpone-bucket tables (``bucket = -2``) write as Paimon's ``PostponeBucketFileStoreWrite``:
every row goes to the partition's ``bucket-postpone`` directory, sequence numbers start at 0
(previous files are ignored), the files are Avro named
``<data-file.prefix>-u-<writer id>-s-<n>-w-…`` (the writer prefix Paimon's postpone compaction
groups by), the bucket is never compacted, no changelog is written, and the commit records
``total_buckets = -2``. :mod:`lakeops.read.postpone` later moves these rows into real
buckets through :meth:`TableWrite.write_moved`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from lakeops.bucket.counts import check_bucket_count, partition_bucket_counts
from lakeops.errors import LakeopsError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.index_manifest import IndexFileMeta
from lakeops.format.kv import KIND
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.kv import avro_layout
from lakeops.options.registry import check_data_files
from lakeops.options.rows_files import DATA_FILE_PREFIX
from lakeops.options.rows_layout import FILE_FORMAT, FILE_FORMAT_PER_LEVEL
from lakeops.parallel import IO_THREADS, TaskBatch, workers_for
from lakeops.write.buffer import BucketBuffer
from lakeops.write.cadence import BucketLsm, CompactionCadence
from lakeops.write.flush import Flushed, FlushSettings, flush_bucket, flush_buckets, runs_fit
from lakeops.write.hash_index import write_hash_index
from lakeops.write.lifecycle import BucketFiles, BucketPlace, BucketWrite, WriteInput
from lakeops.write.records import BUCKET_COLUMN, assigned_records, to_records
from lakeops.write.router import Router, read_key_index

__all__ = ["TableWrite", "WriteInput"]


@dataclass
class _Bucket(BucketFiles):
    """One (partition, bucket) of the write: its buffer, its LSM state and its pending
    commit."""

    lsm: BucketLsm = field(kw_only=True)
    #: new changelog files of this write's flushes
    changelog: list[DataFileMeta] = field(default_factory=list)
    #: dynamic buckets: the bucket-key hashes of the records written, for the HASH index
    key_hashes: list[np.ndarray] = field(default_factory=list)
    index_written: list[str] = field(default_factory=list)


class TableWrite(BucketWrite[_Bucket]):
    """Writes records to one primary-key table; see the module docstring.

    Example:
        >>> writer = table.new_write()            # doctest: +SKIP
        >>> writer.write(batch)                   # doctest: +SKIP
        >>> table.commit(writer.prepare_commit()) # doctest: +SKIP
    """

    def _setup(self) -> None:
        self.engine = self.table.engine
        # the snapshot this write builds on (none for an overwrite, which replaces it)
        self._base = None if self._ignore_previous else self.store.latest_snapshot()
        self.cadence = CompactionCadence(self.table, self._base)
        self.flush_settings = FlushSettings.of(self.table)
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        #: per partition, the bucket count its live files hold (see lakeops.bucket.counts)
        self._counts: dict[bytes, int] = {}
        replaced = self._replaced
        self.router = Router(
            self.table,
            self._base,
            parallelism=self.parallelism,
            kept=None if replaced is None else lambda p: not replaced(p),
        )
        #: the postpone bucket's flushes: Avro files named with this writer's prefix
        self.postpone_settings = _postpone_settings(self.flush_settings)
        #: a move of postponed rows (write_moved): the real bucket count of each partition
        self._moved_counts: dict[bytes, int] = {}

    # -------------------------------------------------------------------- input
    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        data = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if isinstance(data, pa.Table) and BUCKET_COLUMN in data.column_names:
            records = assigned_records(data, self.schema, self.options)
        else:
            records = self.engine.prepare(to_records(data, self.schema, self.options))
        self._buffer(records)

    def write_changes(self, data: pa.Table, kind: int) -> None:
        """Validate and buffer rows of the table (its columns) as records of one row ``kind``
        (:class:`~lakeops.format.kv.RowKind`), whatever ``rowkind.field`` holds: what a row-level
        delete (``-D``) or update (``+U``) writes, as Paimon's Spark commands write them."""
        self._check_usable()
        try:
            records = to_records(data, self.schema, self.options)
            kinds = pa.array(np.full(records.num_rows, kind, dtype=np.int8))
            records = records.set_column(
                records.schema.get_field_index(KIND), records.schema.field(KIND), kinds
            )
            self._buffer(self.engine.prepare(records))
        except BaseException as error:
            self._failure = error
            raise

    def _buffer(self, records: pa.Table) -> None:
        """Route validated, prepared ``records`` to their buckets' buffers."""
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
            self._flush_if_full()

    def write_moved(
        self, records: pa.Table, buckets: np.ndarray, counts: Mapping[bytes, int]
    ) -> None:
        """Buffer postponed ``records`` (the table's fields and ``_VALUE_KIND``, already
        prepared by the engine, in the order Paimon's postpone compaction feeds them) into
        the real ``buckets`` assigned to them, ``counts`` giving each partition's bucket
        count (recorded as the messages' ``total_buckets``). The write is the move of
        :mod:`lakeops.read.postpone`: it does not compact the real buckets."""
        self._check_usable()
        self._moved_counts.update(counts)
        records = records.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))
        try:
            for routed in self.router.route(records):
                self._bucket(routed.partition, routed.bucket).buffer.append(routed.records)
                self._flush_if_full()
        except BaseException as error:
            self._failure = error
            raise

    def _new_bucket(self, place: BucketPlace) -> _Bucket:
        if place.bucket == POSTPONE_BUCKET:  # Paimon ignores previous files: numbers from 0
            lsm = self.cadence.bucket([], place.directory, place.external, compacts=False)
            return _Bucket(*place, BucketBuffer(0), lsm=lsm)
        live = self._restored_files(place.partition_bytes, place.bucket)
        check_bucket_count(
            place.partition_bytes,
            self.options.bucket,
            self._counts,
            self.locations.partitions.dir_of if self.locations.partitions else str,
            self.store.root,
        )
        next_seq = max((f.max_sequence_number for f in live), default=-1) + 1
        compacts = not self._moved_counts  # a move only adds files; compaction follows it
        lsm = self.cadence.bucket(live, place.directory, place.external, compacts=compacts)
        return _Bucket(*place, BucketBuffer(next_seq), lsm=lsm)

    def _restored_files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """The bucket's live files in the latest snapshot (read once per writer)."""
        if self._restored is None:
            self._restored = {}
            live = self.store.live_entries(self._base, parallelism=IO_THREADS)
            self._counts = partition_bucket_counts(live)
            # files in a format lakeops cannot read: refuse before this writer writes anything
            check_data_files((e.file.file_name for e in live), "write to")
            for e in live:
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._restored.get((partition, bucket), [])

    # -------------------------------------------------------------------- flush
    def flush(self) -> None:
        """Sort, merge and write every buffered bucket as level-0 files, then start each
        flushed bucket's next compaction in the background (unless ``write-only``; see
        :mod:`lakeops.write.cadence`); see :meth:`BucketWrite.flush
        <lakeops.write.lifecycle.BucketWrite.flush>`."""
        super().flush()

    def _flush_one(self, bucket: _Bucket, batches: list[pa.Table]) -> Flushed:
        settings = self.flush_settings
        if bucket.bucket == POSTPONE_BUCKET:
            settings = self.postpone_settings
        return flush_bucket(batches, settings, bucket.directory, bucket.external)

    def _joins_batch(self, bucket: _Bucket, batches: list[pa.Table]) -> bool:
        """Small buckets (one file each, Parquet: :func:`~lakeops.write.flush.runs_fit`) are
        flushed together; the postpone bucket never is."""
        return bucket.bucket != POSTPONE_BUCKET and runs_fit(batches, self.flush_settings)

    def _flush_batch(self, unit: list[tuple[_Bucket, list[pa.Table]]]) -> list[Flushed]:
        return flush_buckets(
            [(batches, bucket.directory, bucket.external) for bucket, batches in unit],
            self.flush_settings,
        )

    def _record(self, bucket: _Bucket, flushed: Flushed) -> None:
        bucket.files.extend(flushed.files)
        bucket.changelog.extend(flushed.changelog)
        bucket.written.extend(flushed.written)

    def _after_flush(
        self,
        pending: Sequence[_Bucket],
        flushed: Sequence[Flushed],
        executor: ThreadPoolExecutor | None,
    ) -> None:
        # each bucket's compaction touches only its own LSM state; the lookup cache they
        # share is thread-safe. They start together, packed into few pool tasks (most of a
        # many-partition write's buckets find nothing to compact)
        batch = None
        if executor is not None:
            batch = TaskBatch(executor, workers_for(self.parallelism, len(pending)))
        try:
            for bucket, done in zip(pending, flushed, strict=True):
                self.cadence.after_flush(bucket.lsm, done.files, batch)
        finally:
            if batch is not None:
                batch.dispatch()

    # -------------------------------------------------------------------- commit
    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything, wait for the compactions in flight, and return one message per
        (partition, bucket) with changes."""
        return super().prepare_commit()

    def _before_commit(self) -> None:
        self.cadence.before_commit(
            (b.lsm for b in self._buckets.values()), self.parallelism, self._executor()
        )

    def _message(self, bucket: _Bucket) -> CommitMessage:
        base_id = None if self._ignore_previous else (self._base.id if self._base else 0)
        total = self._moved_counts.get(bucket.partition_bytes, self.options.bucket)
        if bucket.bucket == POSTPONE_BUCKET:
            base_id = None  # postponed files do not build on the bucket's earlier files
        return CommitMessage(
            bucket.partition_bytes,
            bucket.bucket,
            total,
            tuple(bucket.files),
            tuple(bucket.lsm.before.values()),
            tuple(bucket.lsm.after.values()),
            tuple(bucket.changelog),
            tuple(bucket.lsm.changelog),
            self._hash_index(bucket),
            base_id,
        )

    def _hash_index(self, bucket: _Bucket) -> tuple[IndexFileMeta, ...]:
        """Dynamic buckets: the bucket's new complete HASH index file, if it gained hashes."""
        if not bucket.key_hashes or self.router.cross_partition:
            return ()
        written = read_key_index(
            self.store,
            self._base,
            lambda: write_hash_index(
                self.store,
                self.schema,
                self.locations,
                self._base,
                bucket.partition_bytes,
                bucket.bucket,
                bucket.key_hashes,
            ),
        )
        bucket.key_hashes = []
        if written is None:
            return ()
        bucket.index_written.append(written.path)
        return (written.meta,)

    def abort(self) -> None:
        """Stop the compactions in flight and delete every file written by this writer;
        nothing of it will be committed."""
        super().abort()
        for bucket in self._buckets.values():
            bucket.lsm.written, bucket.changelog, bucket.lsm.changelog = [], [], []

    def _stop(self) -> None:
        for bucket in self._buckets.values():
            bucket.lsm.cancel()

    def _written_by(self, bucket: _Bucket) -> list[str]:
        return [*bucket.written, *bucket.lsm.written, *bucket.index_written]


def _postpone_settings(settings: FlushSettings) -> FlushSettings:
    """The flush settings of the postpone bucket: Avro files (Paimon's choice; the table's
    format when Avro cannot carry its types), named ``<prefix>-u-<writer>-s-<n>-w-…`` as
    ``PostponeBucketFileStoreWrite`` names them, and no input changelog."""
    schema = settings.schema
    options = dict(schema.options)
    prefix = DATA_FILE_PREFIX.get(options)
    options[DATA_FILE_PREFIX.key] = f"{prefix}-u-{uuid.uuid4()}-s-{random.randrange(2**31 - 1)}-w-"
    try:
        avro_layout.check_writable(schema)
    except LakeopsError:
        pass  # Paimon too keeps the table's format when Avro cannot carry its types
    else:
        options[FILE_FORMAT.key] = "avro"
        options.pop(FILE_FORMAT_PER_LEVEL.key, None)
    return replace(settings, schema=replace(schema, options=options), input_changelog=False)
