"""AppendWrite: the two-phase writer of an append table (``write`` … ``prepare_commit``).

Rows are validated and cast to the table's types (:func:`lakeops.write.records.to_records`),
grouped by partition and bucket — bucket 0 for an unaware-bucket table (``bucket = -1``, as
Paimon writes ``bucket-0``), the hash of the ``bucket-key`` columns for a fixed-bucket table
(:func:`lakeops.format.bucket_hash.assign_buckets`, as primary-key tables hash their keys) —
kept in input order, and buffered. When the buffers exceed ``write-buffer-size`` (and at
``prepare_commit``) every buffered (partition, bucket) is written as rolling level-0 files
(:class:`~lakeops.kv.append_files.RollingAppendWriter`), up to ``parallelism`` of them at once.

Sequence numbers, as Paimon's ``AppendOnlyWriter``: one per row, consecutive in input order;
a fixed bucket continues from the largest sequence number live in it (so a bucket's files
read in sequence order are its rows in the order they were written); an unaware-bucket writer
ignores previous files and starts at 0 (Paimon's ``withIgnorePreviousFiles``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from lakeops.bucket.dynamic import partition_groups
from lakeops.errors import LakeopsError
from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import join
from lakeops.kv.append_files import RollingAppendWriter
from lakeops.kv.stats import stats_modes
from lakeops.options.append import AppendOptions
from lakeops.parallel import IO_THREADS, check_parallelism, run_ordered
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths
from lakeops.write.records import to_records
from lakeops.write.table_write import _check_component_lengths

__all__ = ["AppendWrite", "WriteInput"]

WriteInput: TypeAlias = (
    pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.Table | pa.RecordBatch]
)


@dataclass
class _Bucket:
    partition_bytes: bytes
    bucket: int
    directory: str
    external: ExternalPaths | None
    next_sequence: int
    batches: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    files: list[DataFileMeta] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


class AppendWrite:
    """Writes rows to one append table; see the module docstring.

    ``ignore_previous`` (an overwrite): sequence numbers start at 0, as the table's current
    files are being replaced."""

    def __init__(
        self,
        table: TableContext,
        *,
        ignore_previous: bool = False,
        parallelism: int | None = None,
    ) -> None:
        self.parallelism = check_parallelism(parallelism)
        self.table = table
        self.schema = table.schema
        self.options = table.options
        self.settings = AppendOptions.of(table)
        stats_modes(self.schema.options, self.schema.field_names)  # refuse a bad mode up front
        self.locations = table.locations
        self.locations.check_writable()
        self.partition_types = self.schema.types_of(self.schema.partition_keys)
        self.bucket_keys = self.schema.bucket_keys
        self.bucket_types = self.schema.types_of(self.bucket_keys)
        # where a fixed bucket's sequence numbers continue (an unaware-bucket writer starts
        # every bucket at 0, so it reads no snapshot)
        self._base: Snapshot | None = (
            None if ignore_previous or self.options.bucket <= 0 else table.store.latest_snapshot()
        )
        self._ignore_previous = ignore_previous
        self._buckets: dict[tuple[bytes, int], _Bucket] = {}
        self._max_sequences: dict[tuple[bytes, int], int] | None = None
        self._closed = False
        self._failure: BaseException | None = None

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
                "this AppendWrite was already committed or aborted; create a new one with "
                "table.new_write()"
            )
        if self._failure is not None:
            raise LakeopsError(
                f"this AppendWrite failed earlier ({type(self._failure).__name__}: "
                f"{self._failure}) and may have lost buffered rows; call abort() and write "
                "again with a new writer"
            ) from self._failure

    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        records = to_records(data, self.schema, self.options).drop_columns([KIND])
        if records.num_rows == 0:
            return
        if self.options.bucket <= 0 and not self.schema.partition_keys:
            target = self._bucket((), 0)  # one bucket: the rows as they came
            target.batches.append(records)
            target.nbytes += records.nbytes
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
        if self.schema.partition_keys:
            groups = partition_groups(records, self.schema.partition_keys)
        else:
            groups = [((), np.arange(records.num_rows))]
        for values, rows in groups:
            # the partition's rows by bucket, input order kept within each bucket (one take)
            order = rows[np.argsort(buckets[rows], kind="stable")]
            sorted_buckets = buckets[order]
            bounds = np.flatnonzero(np.diff(sorted_buckets)) + 1
            in_order = len(order) == records.num_rows and bool(
                (order == np.arange(len(order))).all()
            )
            part = records if in_order else records.take(pa.array(order))
            for lo, hi in itertools.pairwise([0, *bounds.tolist(), len(order)]):
                chosen = part.slice(lo, hi - lo)
                target = self._bucket(values, int(sorted_buckets[lo]))
                target.batches.append(chosen)
                target.nbytes += chosen.nbytes
        self._flush_if_full()

    def _flush_if_full(self) -> None:
        if sum(b.nbytes for b in self._buckets.values()) > self.options.write_buffer_size:
            self.flush()

    def _bucket(self, partition: tuple[object, ...], bucket: int) -> _Bucket:
        pbytes = binary_row.serialize(list(partition), self.partition_types)
        found = self._buckets.get((pbytes, bucket))
        if found is None:
            relative = self.locations.relative_bucket(pbytes, bucket)
            _check_component_lengths(relative)
            found = _Bucket(
                pbytes,
                bucket,
                join(self.table.root, relative),
                self.locations.external_paths_of(pbytes, bucket),
                self._first_sequence(pbytes, bucket),
            )
            self._buckets[(pbytes, bucket)] = found
        return found

    def _first_sequence(self, partition: bytes, bucket: int) -> int:
        """Where a bucket's sequence numbers start (see the module docstring)."""
        if self.options.bucket <= 0 or self._base is None:
            return 0
        if self._max_sequences is None:
            self._max_sequences = {}
            for e in self.table.store.live_entries(self._base, parallelism=IO_THREADS):
                key = (e.partition, e.bucket)
                seq = e.file.max_sequence_number
                self._max_sequences[key] = max(self._max_sequences.get(key, -1), seq)
        return self._max_sequences.get((partition, bucket), -1) + 1

    # -------------------------------------------------------------------- flush
    def flush(self) -> None:
        """Write every buffered (partition, bucket) as rolling level-0 files."""
        self._check_usable()
        pending = [b for b in self._buckets.values() if b.batches]
        if not pending:
            return

        def write_one(bucket: _Bucket) -> tuple[list[DataFileMeta], int]:
            writer = RollingAppendWriter(
                self.table.file_io,
                bucket.directory,
                self.schema,
                self.settings.target_file_size,
                bucket.next_sequence,
                external=bucket.external,
            )
            try:
                for batch in bucket.batches:
                    writer.write(batch)
                return writer.close(), writer.next_sequence
            finally:
                bucket.written.extend(writer.written)

        def done(bucket: _Bucket, result: tuple[list[DataFileMeta], int]) -> None:
            bucket.files.extend(result[0])
            bucket.next_sequence = result[1]
            bucket.batches, bucket.nbytes = [], 0

        try:
            run_ordered(write_one, pending, self.parallelism, on_success=done)
        except BaseException as error:
            self._failure = error
            raise

    # -------------------------------------------------------------------- commit
    def prepare_commit(self) -> list[CommitMessage]:
        """Write everything buffered and return one message per (partition, bucket)."""
        self.flush()
        self._closed = True
        return [
            CommitMessage(
                b.partition_bytes,
                b.bucket,
                self.options.bucket,
                tuple(b.files),
                base_snapshot_id=None,
            )
            for b in self._buckets.values()
            if b.files
        ]

    def abort(self) -> None:
        """Delete every file this writer wrote; nothing of it will be committed."""
        for b in self._buckets.values():
            for path in b.written:
                self.table.file_io.delete(path)
            b.written, b.files, b.batches = [], [], []
        self._closed = True
