"""TableWrite: the two-phase writer of a table (``write`` … ``prepare_commit``).

Rows are validated (:mod:`lakeops.write.records`), routed to their partition and fixed bucket
(Paimon's hash), and appended to a per-(partition, bucket) buffer with sequence numbers that
continue from the largest already committed in that bucket. When the buffers together exceed
``write-buffer-size`` they are flushed: each is sorted by (key, sequence order), merged with the
table's merge engine and written as rolling level-0 files. Memory therefore stays bounded by the
buffer size whatever the size of the input.

``prepare_commit`` flushes everything and returns picklable :class:`CommitMessage` objects;
``abort`` deletes every file written so far.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.bucket.hashing import assign_buckets
from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.changelog.options import ChangelogOptions
from lakeops.compact.expire import RecordExpiry
from lakeops.compact.levels import level_runs
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.options import CompactOptions
from lakeops.compact.task import BucketContext, CompactResult
from lakeops.errors import LakeopsError
from lakeops.io.file_io import FileIO, join
from lakeops.merge import create_merge_engine, merge_sorted, sort_records
from lakeops.merge.ordering import as_table
from lakeops.options import TableOptions
from lakeops.spec import binary_row, paths
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.kv import SEQ
from lakeops.spec.schema import TableSchema
from lakeops.store import TableStore
from lakeops.write.commit_message import CommitMessage
from lakeops.write.file_writer import KeyValueFileWriter
from lakeops.write.records import to_records

__all__ = ["TableWrite", "WriteInput"]

_MAX_ROUNDS = 16

WriteInput: TypeAlias = (
    pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.Table | pa.RecordBatch]
)


def _id(f: DataFileMeta) -> tuple[str, int]:
    return (f.file_name, f.level)


@dataclass
class _BucketBuffer:
    """Buffered records of one (partition, bucket), its written files and its LSM state."""

    partition: tuple[object, ...]
    partition_bytes: bytes
    bucket: int
    next_sequence: int
    writer: KeyValueFileWriter
    live: list[DataFileMeta]
    compactor: BucketCompactor | None
    batches: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    files: list[DataFileMeta] = field(default_factory=list)
    compact_before: dict[tuple[str, int], DataFileMeta] = field(default_factory=dict)
    compact_after: dict[tuple[str, int], DataFileMeta] = field(default_factory=dict)
    compact_written: list[str] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)
    compact_changelog: list[DataFileMeta] = field(default_factory=list)

    def apply(self, result: CompactResult, file_io: FileIO) -> None:
        """Fold a compaction result into the bucket's state and its pending commit."""
        after_names = {f.file_name for f in result.after}
        gone = {_id(f) for f in result.before}
        self.live = [f for f in self.live if _id(f) not in gone]
        for f in result.before:
            if _id(f) in self.compact_after:  # produced by an earlier compaction of this write
                del self.compact_after[_id(f)]
                if f.file_name not in after_names:
                    file_io.delete(join(self.writer.directory, f.file_name))
            else:
                self.compact_before[_id(f)] = f
        for f in result.after:
            self.live.append(f)
            self.compact_after[_id(f)] = f
        self.compact_written.extend(result.written)
        self.compact_changelog.extend(result.changelog)


class TableWrite:
    """Writes records to one table; see the module docstring.

    Example:
        >>> writer = table.new_write()            # doctest: +SKIP
        >>> writer.write(batch)                   # doctest: +SKIP
        >>> table.commit(writer.prepare_commit()) # doctest: +SKIP
    """

    def __init__(self, store: TableStore, schema: TableSchema, options: TableOptions) -> None:
        self.store = store
        self.schema = schema
        self.options = options
        self.engine = create_merge_engine(options, schema)
        self.key_names = schema.trimmed_primary_keys
        self.bucket_key_types = schema.types_of(schema.bucket_keys)
        self.partition_types = schema.types_of(schema.partition_keys)
        self.compact_options = CompactOptions.from_schema(schema, options)
        self.changelog_options = ChangelogOptions.from_schema(schema, options)
        self._lookup_cache: RowGroupCache | None = None
        self._buffers: dict[tuple[bytes, int], _BucketBuffer] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._closed = False

    # -------------------------------------------------------------------- input
    def write(self, data: WriteInput) -> None:
        """Validate and buffer ``data`` (a Table, RecordBatch, reader or iterable of them)."""
        if self._closed:
            raise LakeopsError(
                "this TableWrite was already committed or aborted; "
                "create a new one with table.new_write()"
            )
        if isinstance(data, pa.Table | pa.RecordBatch):
            self._write_table(data)
            return
        for part in data:
            self._write_table(part)

    def _write_table(self, data: pa.Table | pa.RecordBatch) -> None:
        records = self.engine.prepare(to_records(data, self.schema, self.options))
        if records.num_rows == 0:
            return
        # route in slices no larger than half the buffer, so a huge input still flushes in time
        rows_per_slice = max(
            int(self.options.write_buffer_size / 2 / max(records.nbytes / records.num_rows, 1.0)), 1
        )
        for start in range(0, records.num_rows, rows_per_slice):
            self._route(records.slice(start, rows_per_slice))
            if sum(b.nbytes for b in self._buffers.values()) > self.options.write_buffer_size:
                self.flush()

    def _partition_ids(self, records: pa.Table) -> np.ndarray:
        """A dense id per distinct partition value combination."""
        if not self.schema.partition_keys:
            return np.zeros(records.num_rows, dtype=np.int64)
        codes = []
        for name in self.schema.partition_keys:
            enc = pc.dictionary_encode(records.column(name), null_encoding="encode")
            enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
            codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        if len(codes) == 1:
            return codes[0]
        _, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64)

    def _route(self, records: pa.Table) -> None:
        buckets = assign_buckets(
            [records.column(k) for k in self.schema.bucket_keys],
            self.bucket_key_types,
            self.options.bucket,
        )
        part_ids = self._partition_ids(records)
        group = part_ids * self.options.bucket + buckets
        if len(group) and group.max() < 2**31:
            group = group.astype(np.int32)  # argsort on narrow ints is several times faster
        order = np.argsort(group, kind="stable")
        sorted_group = group[order]
        bounds = np.concatenate(
            ([0], np.flatnonzero(np.diff(sorted_group)) + 1, [len(sorted_group)])
        )
        routed = records.take(pa.array(order))
        for lo, hi in itertools.pairwise(bounds):
            part = routed.slice(int(lo), int(hi - lo))
            bucket = int(buckets[order[lo]])
            values = tuple(part.column(k)[0].as_py() for k in self.schema.partition_keys)
            self._append(values, bucket, part)

    def _buffer(self, partition: tuple[object, ...], bucket: int) -> _BucketBuffer:
        pbytes = binary_row.serialize(list(partition), self.partition_types)
        buf = self._buffers.get((pbytes, bucket))
        if buf is None:
            pdir = paths.partition_dir(
                self.schema.partition_keys, partition, self.options.partition_default_name
            )
            bucket_path = paths.bucket_dir(pdir, bucket)
            writer = KeyValueFileWriter(
                self.store.file_io,
                self.store.root,
                bucket_path,
                self.schema,
                self.options.target_file_size,
            )
            live = list(self._restored_files(pbytes, bucket))
            compactor = None
            if not self.compact_options.write_only:
                compactor = BucketCompactor(self.bucket_context(writer.directory), live)
            next_seq = max((f.max_sequence_number for f in live), default=-1) + 1
            buf = _BucketBuffer(partition, pbytes, bucket, next_seq, writer, live, compactor)
            self._buffers[(pbytes, bucket)] = buf
        return buf

    def bucket_context(self, directory: str) -> BucketContext:
        """What compaction of a bucket in ``directory`` needs."""
        copts = self.compact_options
        expiry = RecordExpiry(copts) if copts.expire_ms is not None else None
        if self._lookup_cache is None:
            self._lookup_cache = RowGroupCache(self.changelog_options.lookup_cache_bytes)
        return BucketContext(
            self.store.file_io,
            directory,
            self.schema,
            self.options,
            copts,
            self.engine,
            expiry,
            self.changelog_options,
            self._lookup_cache,
        )

    def _restored_files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """The bucket's live files in the latest snapshot (read once per writer)."""
        if self._restored is None:
            self._restored = {}
            for e in self.store.live_entries(self.store.latest_snapshot()):
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._restored.get((partition, bucket), [])

    def _append(self, partition: tuple[object, ...], bucket: int, records: pa.Table) -> None:
        buf = self._buffer(partition, bucket)
        n = records.num_rows
        seq = pa.array(np.arange(buf.next_sequence, buf.next_sequence + n, dtype=np.int64))
        buf.next_sequence += n
        buf.batches.append(records.append_column(pa.field(SEQ, pa.int64(), False), seq))
        buf.nbytes += records.nbytes

    # -------------------------------------------------------------------- flush
    def flush(self) -> None:
        """Sort, merge and write every buffered bucket as level-0 files, then let each
        bucket's compaction strategy run (unless ``write-only``)."""
        for buf in self._buffers.values():
            if not buf.batches:
                continue
            records = sort_records(
                as_table(buf.batches),
                self.key_names,
                self.options.sequence_fields,
                self.options.sequence_descending,
            )
            buf.batches, buf.nbytes = [], 0
            if self.changelog_options.producer == "input":  # the input records, as they came
                buf.changelog.extend(buf.writer.write(records, prefix="changelog"))
            merged = merge_sorted(records, self.key_names, self.engine)
            new_files = buf.writer.write(merged, level=0)
            buf.files.extend(new_files)
            buf.live.extend(new_files)
            self._compact(buf)

    def _compact(self, buf: _BucketBuffer, full: bool = False) -> None:
        """In-writer compaction: run picked units until the strategy is satisfied; if sorted
        runs still exceed ``num-sorted-run.stop-trigger``, compact fully (back-pressure: the
        write waits for compaction)."""
        if buf.compactor is None:
            return
        for _ in range(_MAX_ROUNDS):
            result = buf.compactor.compact(buf.live, full=full)
            if result is None:
                break
            buf.apply(result, self.store.file_io)
            if full:
                break
        if not full and len(level_runs(buf.live)) > self.compact_options.stop_trigger:
            self._compact(buf, full=True)

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything and return one message per (partition, bucket) with changes."""
        self.flush()
        if self.compact_options.force_compact_on_commit or self._full_compaction_due():
            for buf in self._buffers.values():
                self._compact(buf, full=True)
        self._closed = True
        messages = [
            CommitMessage(
                buf.partition_bytes,
                buf.bucket,
                self.options.bucket,
                tuple(buf.files),
                tuple(buf.compact_before.values()),
                tuple(buf.compact_after.values()),
                tuple(buf.changelog),
                tuple(buf.compact_changelog),
            )
            for buf in self._buffers.values()
        ]
        return [m for m in messages if not m.is_empty]

    def _full_compaction_due(self) -> bool:
        """``changelog-producer=full-compaction``: full-compact every
        ``full-compaction.delta-commits`` commits (counting the one being prepared)."""
        if self.changelog_options.producer != "full-compaction":
            return False
        every = self.changelog_options.full_compaction_delta_commits
        appends, sid = 0, self.store.latest_snapshot_id()
        while sid is not None and sid >= 1 and appends < every:
            try:
                snapshot = self.store.snapshot(sid)
            except LakeopsError:
                break
            if snapshot.commit_kind == "COMPACT" and snapshot.changelog_manifest_list:
                break
            appends += snapshot.commit_kind == "APPEND"
            sid -= 1
        return appends + 1 >= every

    def abort(self) -> None:
        """Delete every file written by this writer; nothing of it will be committed."""
        for buf in self._buffers.values():
            buf.writer.abort()
            for path in buf.compact_written:
                self.store.file_io.delete(path)
            buf.batches, buf.files, buf.compact_written = [], [], []
            buf.changelog, buf.compact_changelog = [], []
        self._closed = True
