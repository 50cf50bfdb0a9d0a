"""AppendWrite: the two-phase writer of an append table (``write`` … ``prepare_commit``).

Rows are validated and cast to the table's types (:func:`lakeops.write.records.to_records`),
grouped by partition and bucket — bucket 0 for an unaware-bucket table (``bucket = -1``, as
Paimon writes ``bucket-0``), the hash of the ``bucket-key`` columns for a fixed-bucket table
(:func:`lakeops.format.bucket_hash.assign_buckets`, as primary-key tables hash their keys) —
kept in input order, and buffered. When the buffers exceed ``write-buffer-size`` (and at
``prepare_commit``) every buffered (partition, bucket) is written as rolling level-0 files
(:class:`~lakeops.kv.writer.RollingFileWriter` with an
:class:`~lakeops.kv.writer.AppendLayout`), up to ``parallelism`` of them at once, in the
lifecycle both table writers share (:mod:`lakeops.write.lifecycle`). Small (partition, bucket)
buffers of one batch each are written together, the same file each, by
:func:`~lakeops.kv.writer.write_runs` (statistics and encodings of all their files in
whole-array passes).

Sequence numbers, as Paimon's ``AppendOnlyWriter``: one per row, consecutive in input order;
a fixed bucket continues from the largest sequence number live in it (so a bucket's files
read in sequence order are its rows in the order they were written); an unaware-bucket writer
ignores previous files and starts at 0 (Paimon's ``withIgnorePreviousFiles``).

A table with BLOB columns (a data-evolution table, as Paimon requires) writes each flush of a
bucket as one data file of its other columns (``_WRITE_COLS`` and ``_VALUE_STATS_COLS`` name
them) followed by the ``.blob`` files of each BLOB column, in schema order, as pypaimon's
writer does; the commit gives the BLOB files the row ids of the data file before them.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pyarrow as pa

from lakeops.bucket.counts import check_bucket_count, partition_bucket_counts
from lakeops.bucket.dynamic import partition_codes
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND
from lakeops.format.snapshot import Snapshot
from lakeops.kv.blob_writer import write_blob_files
from lakeops.kv.stats import stats_modes
from lakeops.kv.writer import RUN_ROWS_MAX, AppendLayout, RollingFileWriter, write_runs, writes_runs
from lakeops.options.rows_files import BLOB_TARGET_FILE_SIZE
from lakeops.parallel import IO_THREADS
from lakeops.write.buffer import BucketBuffer
from lakeops.write.lifecycle import BucketFiles, BucketPlace, BucketWrite, WriteInput
from lakeops.write.records import to_records

__all__ = ["AppendWrite", "WriteInput"]

#: a data file of a table with BLOB columns is never rolled
_NO_ROLLING = 1 << 62


class AppendWrite(BucketWrite[BucketFiles]):
    """Writes rows to one append table; see the module docstring.

    ``ignore_previous`` (an overwrite): sequence numbers start at 0, as the table's current
    files are being replaced."""

    def _setup(self) -> None:
        self.settings = self.table.append
        stats_modes(self.schema.options, self.schema.field_names)  # refuse a bad mode up front
        self.bucket_keys = self.schema.bucket_keys
        self.bucket_types = self.schema.types_of(self.bucket_keys)
        # where a fixed bucket's sequence numbers continue (an unaware-bucket writer starts
        # every bucket at 0, so it reads no snapshot)
        self._base: Snapshot | None = (
            None
            if self._ignore_previous or self.options.bucket <= 0
            else self.store.latest_snapshot()
        )
        self._max_sequences: dict[tuple[bytes, int], int] | None = None
        #: per partition, the bucket count its live files hold (see lakeops.bucket.counts)
        self._counts: dict[bytes, int] = {}
        #: the BLOB columns, whose values go to .blob files
        self._blobs = [f.name for f in self.schema.fields if f.type.root == "BLOB"]
        #: small buckets are flushed together (no BLOB columns, Parquet files)
        self._runs = not self._blobs and writes_runs(AppendLayout(self.schema, 0))

    # -------------------------------------------------------------------- input
    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        records = to_records(data, self.schema, self.options).drop_columns([KIND])
        if records.num_rows == 0:
            return
        if self.options.bucket <= 0 and not self.schema.partition_keys:
            self._bucket((), 0).buffer.append(records)  # one bucket: the rows as they came
            self._flush_if_full()
            return
        if self.options.bucket > 0:
            buckets = assign_buckets(
                [records.column(k) for k in self.bucket_keys],
                self.bucket_types,
                self.options.bucket,
            )
        else:
            buckets = np.zeros(records.num_rows, dtype=np.int32)
        self._buffer_groups(records, buckets)
        self._flush_if_full()

    def _buffer_groups(self, records: pa.Table, buckets: np.ndarray) -> None:
        """Buffer ``records`` in their (partition, bucket), ``buckets`` giving each row's
        bucket: one stable sort of the rows by (partition, bucket) and one take of the rows in
        that order (input order kept within each pair), then a slice per pair — the same
        batches, in the same order, at any number of partitions (a take per partition would
        cost a pass over every column of the input per partition)."""
        ids, values = partition_codes(records, self.schema.partition_keys)
        width = int(buckets.max()) + 1
        group = ids * width + buckets
        order = np.argsort(group, kind="stable")
        sorted_group = group[order]
        bounds = np.flatnonzero(np.diff(sorted_group)) + 1
        in_order = bool((order == np.arange(len(order))).all())
        rows = records if in_order else records.take(pa.array(order))
        for lo, hi in itertools.pairwise([0, *bounds.tolist(), len(order)]):
            pid, bucket = divmod(int(sorted_group[lo]), width)
            self._bucket(values[pid], bucket).buffer.append(rows.slice(lo, hi - lo))

    def _new_bucket(self, place: BucketPlace) -> BucketFiles:
        first = self._first_sequence(place.partition_bytes, place.bucket)
        check_bucket_count(
            place.partition_bytes,
            self.options.bucket,
            self._counts,
            self.locations.partitions.dir_of if self.locations.partitions else str,
            self.store.root,
        )
        return BucketFiles(*place, BucketBuffer(first, numbered=False))

    def _first_sequence(self, partition: bytes, bucket: int) -> int:
        """Where a bucket's sequence numbers start (see the module docstring)."""
        if self.options.bucket <= 0 or self._base is None:
            return 0
        if self._max_sequences is None:
            self._max_sequences = {}
            live = self.table.store.live_entries(self._base, parallelism=IO_THREADS)
            self._counts = partition_bucket_counts(live)
            for e in live:
                key = (e.partition, e.bucket)
                seq = e.file.max_sequence_number
                self._max_sequences[key] = max(self._max_sequences.get(key, -1), seq)
        return self._max_sequences.get((partition, bucket), -1) + 1

    # -------------------------------------------------------------------- flush
    def _flush_one(self, bucket: BucketFiles, batches: list[pa.Table]) -> list[DataFileMeta]:
        if self._blobs:
            return self._flush_with_blobs(bucket, batches)
        writer = RollingFileWriter(
            self.table.file_io,
            bucket.directory,
            AppendLayout(self.schema, bucket.buffer.first_sequence(batches)),
            self.settings.target_file_size,
            external=bucket.external,
        )
        try:
            for batch in batches:
                writer.write(batch)
            return writer.close()
        finally:
            bucket.written.extend(writer.written)

    def _flush_with_blobs(self, bucket: BucketFiles, batches: list[pa.Table]) -> list[DataFileMeta]:
        """A table with BLOB columns (see the module docstring): one data file of the other
        columns (never rolled: the BLOB files after it take its row ids), then each BLOB
        column's ``.blob`` files (:mod:`lakeops.kv.blob_writer`)."""
        rows = pa.concat_tables(batches)
        first = bucket.buffer.first_sequence(batches)
        normal = [f for f in self.schema.fields if f.name not in self._blobs]
        names = tuple(f.name for f in normal)
        writer = RollingFileWriter(
            self.table.file_io,
            bucket.directory,
            AppendLayout(replace(self.schema, fields=tuple(normal)), first),
            _NO_ROLLING,
            external=bucket.external,
        )
        try:
            writer.write(rows.select(list(names)))
            files = [replace(f, write_cols=names, value_stats_cols=names) for f in writer.close()]
        finally:
            bucket.written.extend(writer.written)
        target = BLOB_TARGET_FILE_SIZE.find(self.schema.options)
        for column in self._blobs:
            files += write_blob_files(
                self.table.file_io,
                bucket.directory,
                bucket.external,
                self.schema,
                column,
                rows.column(column),
                first,
                int(target) if target is not None else self.settings.target_file_size,
                bucket.written,
            )
        return files

    def _joins_batch(self, _bucket: BucketFiles, batches: list[pa.Table]) -> bool:
        """Small buckets are flushed together (:meth:`_flush_batch`): one batch of at most
        :data:`~lakeops.kv.writer.RUN_ROWS_MAX` rows (one file, one chunk), Parquet files,
        no BLOB columns."""
        return self._runs and len(batches) == 1 and 0 < batches[0].num_rows <= RUN_ROWS_MAX

    def _flush_batch(
        self, unit: list[tuple[BucketFiles, list[pa.Table]]]
    ) -> list[list[DataFileMeta]]:
        """Several small buckets (see :meth:`_joins_batch`): every bucket's file written by
        :func:`~lakeops.kv.writer.write_runs`, each the file :meth:`_flush_one` writes for
        it; on failure every file of the unit is deleted."""
        rows = [batches[0] for _, batches in unit]
        offsets = np.concatenate(([0], np.cumsum([b.num_rows for b in rows]))).astype(np.int64)
        written: list[list[str]] = [[] for _ in unit]
        try:
            files = write_runs(
                self.table.file_io,
                AppendLayout(self.schema, 0),
                pa.concat_tables(rows),
                offsets,
                [(bucket.directory, bucket.external) for bucket, _ in unit],
                written,
                first_sequences=[b.buffer.first_sequence(batches) for b, batches in unit],
            )
        except BaseException:
            for paths in written:
                for path in paths:
                    self.table.file_io.delete(path)
            raise
        for (bucket, _), paths in zip(unit, written, strict=True):
            bucket.written.extend(paths)
        return [[f] for f in files]

    def _record(self, bucket: BucketFiles, flushed: list[DataFileMeta]) -> None:
        bucket.files.extend(flushed)

    # -------------------------------------------------------------------- commit
    def _message(self, bucket: BucketFiles) -> CommitMessage:
        return CommitMessage(
            bucket.partition_bytes,
            bucket.bucket,
            self.options.bucket,
            tuple(bucket.files),
            base_snapshot_id=None,
        )
