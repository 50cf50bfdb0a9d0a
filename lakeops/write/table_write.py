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

from lakeops.bucket.cross_partition import GlobalIndex
from lakeops.bucket.dynamic import (
    DynamicBucketOptions,
    PartitionIndex,
    partition_codes,
    partition_groups,
)
from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.changelog.options import ChangelogOptions
from lakeops.compact.expire import RecordExpiry
from lakeops.compact.levels import level_runs
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.options import CompactOptions
from lakeops.compact.task import BucketContext, CompactResult
from lakeops.errors import DataValidationError, LakeopsError, SnapshotNotFoundError
from lakeops.io.file_io import FileIO
from lakeops.merge import create_merge_engine, merge_sorted, sort_records
from lakeops.merge.ordering import as_table
from lakeops.option_registry import check_data_files
from lakeops.options import TableOptions
from lakeops.read.merge_read import SplitReader
from lakeops.spec import binary_row, paths
from lakeops.spec.bucket_hash import assign_buckets, hash_rows
from lakeops.spec.commit_message import CommitMessage
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.identifiers import MAX_NAME_BYTES
from lakeops.spec.index_manifest import HASH_INDEX, IndexFileMeta, encode_hashes
from lakeops.spec.kv import KIND, SEQ
from lakeops.spec.locations import ExternalPaths, FileLocations
from lakeops.spec.schema import TableSchema
from lakeops.store import TableStore
from lakeops.write.file_writer import KeyValueFileWriter
from lakeops.write.records import BUCKET_COLUMN, KIND_COLUMN, to_records

__all__ = ["TableWrite", "WriteInput"]

_MAX_ROUNDS = 16

WriteInput: TypeAlias = (
    pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.Table | pa.RecordBatch]
)


def _id(f: DataFileMeta) -> tuple[str, int]:
    return (f.file_name, f.level)


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
    key_hashes: list[np.ndarray] = field(default_factory=list)  # dynamic buckets: hash index
    index_written: list[str] = field(default_factory=list)

    def apply(self, result: CompactResult, file_io: FileIO) -> None:
        """Fold a compaction result into the bucket's state and its pending commit."""
        after_names = {f.file_name for f in result.after}
        gone = {_id(f) for f in result.before}
        self.live = [f for f in self.live if _id(f) not in gone]
        for f in result.before:
            if _id(f) in self.compact_after:  # produced by an earlier compaction of this write
                del self.compact_after[_id(f)]
                if f.file_name not in after_names:
                    file_io.delete(
                        self.writer.locations.data_file(
                            self.writer.directory, f.file_name, f.external_path
                        )
                    )
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

    def __init__(
        self,
        store: TableStore,
        schema: TableSchema,
        options: TableOptions,
        *,
        ignore_previous: bool = False,
    ) -> None:
        self.store = store
        self.schema = schema
        self.options = options
        self.engine = create_merge_engine(options, schema)
        self.key_names = schema.trimmed_primary_keys
        self.bucket_key_types = schema.types_of(schema.bucket_keys)
        self.partition_types = schema.types_of(schema.partition_keys)
        self.locations = FileLocations.of(store.file_io, store.root, schema, options)
        self.locations.check_writable()
        self.compact_options = CompactOptions.from_schema(schema, options)
        self.changelog_options = ChangelogOptions.from_schema(schema, options)
        self._lookup_cache: RowGroupCache | None = None
        self._buffers: dict[tuple[bytes, int], _BucketBuffer] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._closed = False
        # the snapshot this write builds on (none for an overwrite, which replaces it)
        self._ignore_previous = ignore_previous
        self._base = None if ignore_previous else store.latest_snapshot()
        self.dynamic = DynamicBucketOptions.from_schema(schema) if options.bucket == -1 else None
        self.cross_partition = options.bucket == -1 and schema.cross_partition_update
        self._partition_indexes: dict[bytes, PartitionIndex] = {}
        self._global_index: GlobalIndex | None = None

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
        data = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if isinstance(data, pa.Table) and BUCKET_COLUMN in data.column_names:
            records = self._assigned_records(data)
        else:
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

    def _assigned_records(self, data: pa.Table) -> pa.Table:
        """Input whose buckets (and retraction kinds) were assigned upstream, by a Spark
        assigner stage that already validated it and applied the engine's ``prepare``."""
        if self.options.bucket != -1:
            raise LakeopsError(
                f"column {BUCKET_COLUMN!r} (pre-assigned buckets) is only accepted by "
                "dynamic-bucket tables"
            )
        buckets = data.column(BUCKET_COLUMN)
        kinds = data.column(KIND_COLUMN) if KIND_COLUMN in data.column_names else None
        data = data.drop_columns(
            [c for c in (BUCKET_COLUMN, KIND_COLUMN) if c in data.column_names]
        )
        records = to_records(data, self.schema, self.options)
        if kinds is not None:
            idx = records.schema.get_field_index(KIND)
            records = records.set_column(idx, records.schema.field(KIND), kinds.cast(pa.int8()))
        return records.append_column(BUCKET_COLUMN, buckets.cast(pa.int32()))

    def _partition_ids(self, records: pa.Table) -> np.ndarray:
        """A dense id per distinct partition value combination."""
        return partition_codes(records, self.schema.partition_keys)[0]

    def _route(self, records: pa.Table) -> None:
        records, buckets, hashes = self._assign(records)
        if records.num_rows == 0:
            return
        part_ids = self._partition_ids(records)
        width = int(buckets.max()) + 1 if len(buckets) else 1
        group = part_ids * width + buckets
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
            buf = self._append(values, bucket, part)
            if hashes is not None:
                buf.key_hashes.append(hashes[order[lo:hi]])

    def _key_hashes(self, records: pa.Table) -> np.ndarray:
        return hash_rows(
            [records.column(k) for k in self.schema.bucket_keys], self.bucket_key_types
        )

    def _assign(self, records: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray | None]:
        """The bucket of every record (fixed hash, dynamic assigner, the global index of
        cross-partition tables, or assigned upstream) and, for dynamic buckets, the key hashes
        the hash index must record. Cross-partition tables may drop, move or add (retraction)
        records."""
        if BUCKET_COLUMN in records.column_names:
            buckets = records.column(BUCKET_COLUMN).to_numpy().astype(np.int32)
            records = records.drop_columns([BUCKET_COLUMN])
            hashes = None if self.cross_partition else self._key_hashes(records)
            return records, buckets, hashes
        if self.options.bucket > 0:
            buckets = assign_buckets(
                [records.column(k) for k in self.schema.bucket_keys],
                self.bucket_key_types,
                self.options.bucket,
            )
            return records, buckets, None
        if self.cross_partition:
            records, buckets = self._cross_partition_index().resolve(records)
            return records, buckets, None
        hashes = self._key_hashes(records)
        buckets = np.empty(records.num_rows, dtype=np.int32)
        for values, rows in partition_groups(records, self.schema.partition_keys):
            buckets[rows] = self._partition_index(list(values)).assign(hashes[rows])
        return records, buckets, hashes

    def _partition_index(self, values: list[object]) -> PartitionIndex:
        """The dynamic-bucket assigner state of a partition (one assigner: owns every id)."""
        pbytes = binary_row.serialize(values, self.partition_types)
        index = self._partition_indexes.get(pbytes)
        if index is None:
            assert self.dynamic is not None
            entries = [e for e in self.store.index_entries(self._base) if e.partition == pbytes]
            index = PartitionIndex.load(
                entries,
                lambda e: self.store.hash_index(e, self.schema),
                partition_hash=0,
                num_channels=1,
                num_assigners=1,
                assign_id=0,
                target_row_num=self.dynamic.target_row_num,
                max_buckets=self.dynamic.max_buckets,
            )
            self._partition_indexes[pbytes] = index
        return index

    def _cross_partition_index(self) -> GlobalIndex:
        """The global key index, bootstrapped from the base snapshot on first use (as Paimon,
        once per write job)."""
        if self._global_index is None:
            assert self.dynamic is not None
            index = GlobalIndex(self.schema, self.engine.name, self.dynamic.target_row_num)
            index.bootstrap(
                self.store,
                SplitReader(self.store, self.schema, self.options, self.engine),
                self._base,
                parallelism=self.dynamic.bootstrap_parallelism,
                ttl_ms=self.dynamic.index_ttl_ms,
            )
            self._global_index = index
        return self._global_index

    def _buffer(self, partition: tuple[object, ...], bucket: int) -> _BucketBuffer:
        pbytes = binary_row.serialize(list(partition), self.partition_types)
        buf = self._buffers.get((pbytes, bucket))
        if buf is None:
            bucket_path = self.locations.relative_bucket(pbytes, bucket)
            _check_component_lengths(bucket_path)
            external = self.locations.external_paths_of(pbytes, bucket)
            writer = KeyValueFileWriter(
                self.store.file_io,
                self.store.root,
                bucket_path,
                self.schema,
                self.options.target_file_size,
                external,
            )
            live = list(self._restored_files(pbytes, bucket))
            compactor = None
            if not self.compact_options.write_only:
                compactor = BucketCompactor(self.bucket_context(writer.directory, external), live)
            next_seq = max((f.max_sequence_number for f in live), default=-1) + 1
            buf = _BucketBuffer(partition, pbytes, bucket, next_seq, writer, live, compactor)
            self._buffers[(pbytes, bucket)] = buf
        return buf

    def bucket_context(
        self, directory: str, external: ExternalPaths | None = None
    ) -> BucketContext:
        """What compaction of a bucket in ``directory`` needs (``external``: where its new
        files go when the table writes external paths)."""
        copts = self.compact_options
        expiry = RecordExpiry(copts) if copts.expire_ms is not None else None
        if self._lookup_cache is None:
            self._lookup_cache = RowGroupCache(self.changelog_options.lookup_cache_bytes)
        return BucketContext(
            self.store.file_io,
            directory,
            self.schema,
            self.store.schema,
            self.options,
            copts,
            self.engine,
            expiry,
            self.changelog_options,
            self._lookup_cache,
            external,
        )

    def _restored_files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """The bucket's live files in the latest snapshot (read once per writer)."""
        if self._restored is None:
            self._restored = {}
            live = self.store.live_entries(self._base)
            # files in a format lakeops cannot read: refuse before this writer writes anything
            check_data_files((e.file.file_name for e in live), "write to")
            for e in live:
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._restored.get((partition, bucket), [])

    def _append(
        self, partition: tuple[object, ...], bucket: int, records: pa.Table
    ) -> _BucketBuffer:
        buf = self._buffer(partition, bucket)
        n = records.num_rows
        seq = pa.array(np.arange(buf.next_sequence, buf.next_sequence + n, dtype=np.int64))
        buf.next_sequence += n
        buf.batches.append(records.append_column(pa.field(SEQ, pa.int64(), False), seq))
        buf.nbytes += records.nbytes
        return buf

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
        base_id = None if self._ignore_previous else (self._base.id if self._base else 0)
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
                self._hash_index(buf),
                base_id,
            )
            for buf in self._buffers.values()
        ]
        return [m for m in messages if not m.is_empty]

    def _hash_index(self, buf: _BucketBuffer) -> tuple[IndexFileMeta, ...]:
        """Dynamic buckets: the bucket's new complete HASH index file, if it gained hashes."""
        if not buf.key_hashes or self.cross_partition:
            return ()
        old = [
            self.store.hash_index(e, self.schema)
            for e in self.store.index_entries(self._base)
            if e.partition == buf.partition_bytes
            and e.bucket == buf.bucket
            and e.file.index_type == HASH_INDEX
        ]
        before = np.unique(np.concatenate(old)) if old else np.zeros(0, np.int32)
        after = np.union1d(before, np.concatenate(buf.key_hashes))
        buf.key_hashes = []
        if len(after) == len(before):
            return ()
        data = encode_hashes(after)
        new = self.locations.new_index_file(buf.partition_bytes, buf.bucket)
        if new.external_path is None and self.locations.index_in_data_dir:
            self.store.file_io.mkdirs(new.path.rsplit("/", 1)[0])
        self.store.file_io.write_bytes(new.path, data)
        buf.index_written.append(new.path)
        extra = (("_EXTERNAL_PATH", new.external_path),) if new.external_path else ()
        return (IndexFileMeta(HASH_INDEX, new.name, len(data), len(after), extra),)

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
            except SnapshotNotFoundError:
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
            for path in [*buf.compact_written, *buf.index_written]:
                self.store.file_io.delete(path)
            buf.batches, buf.files, buf.compact_written = [], [], []
            buf.changelog, buf.compact_changelog = [], []
        self._closed = True
