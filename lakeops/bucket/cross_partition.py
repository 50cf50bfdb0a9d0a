"""Cross-partition upserts: a global key index ``primary key -> (partition, bucket)``.

When the primary key does not contain every partition field (and ``bucket = -1``), a key may
move between partitions. Paimon keeps the table free of duplicates with a global index, rebuilt
from the table at every write job (nothing about it is stored in the table), and resolves each
key that arrives in a partition other than the one holding it by the merge engine:

* ``deduplicate`` — delete the old row (a ``-D`` record into its old partition and bucket), then
  insert into the new partition; the key ends where its last record says;
* ``first-row`` — keep the old row, drop the new records;
* ``partial-update`` / ``aggregation`` — merge the new records into the old row: they are
  written into the old partition and bucket (their partition fields rewritten).

A key seen for the first time goes to the partition of its last (deduplicate) or first (the
others) record in the batch, into a bucket of that partition chosen as in dynamic bucket mode
(fill the lowest non-full bucket up to ``dynamic-bucket.target-row-num``, else open the lowest
free id).

The index is columnar — an Arrow table of the key columns plus int32 partition id and bucket —
so tens of millions of keys cost bytes per key, not Python objects. Lookups are Arrow hash joins.
It is bootstrapped from the latest snapshot by reading only the key columns of every split (all
levels, merged, so deleted keys are absent), several splits at a time (the writer's
``parallelism``; see :meth:`GlobalIndex.bootstrap`); splits whose files are all older than
``cross-partition-upsert.index-ttl`` are skipped (as in Paimon, at the risk of duplicates for
such old keys).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.bucket.dynamic import fill_buckets, partition_groups
from lakeops.format import binary_row
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.kv import KIND, RowKind
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.parallel import IO_THREADS, imap_ordered
from lakeops.read.merge_read import SplitReader
from lakeops.read.scan import Split
from lakeops.store import TableStore

__all__ = ["GlobalIndex", "bootstrap_splits", "split_keys"]

_PART = "__lakeops_part"
_BUCKET = "__lakeops_bucket"
_ROW = "__lakeops_row"
_GROUP = "__lakeops_group"


class GlobalIndex:
    """Key -> (partition, bucket) of one table, updated as batches are resolved.

    Args:
        schema: the table schema (primary key, partition keys).
        merge_engine: ``deduplicate`` | ``first-row`` | ``partial-update`` | ``aggregation``.
        target_row_num: ``dynamic-bucket.target-row-num``.
        owns: which bucket ids this assigner may open (all, in-process).
    """

    def __init__(
        self,
        schema: TableSchema,
        merge_engine: str,
        target_row_num: int,
        owns: Callable[[int], bool] = lambda _: True,
    ) -> None:
        self.schema = schema
        self.engine = merge_engine
        self.keys = list(schema.primary_keys)
        self.partition_keys = list(schema.partition_keys)
        self.partition_types = schema.types_of(self.partition_keys)
        self.target = target_row_num
        self.owns = owns
        self._part_ids: dict[tuple[Any, ...], int] = {}
        self._part_values: list[tuple[Any, ...]] = []
        self.counts: dict[int, dict[int, int]] = {}  # partition id -> bucket -> keys
        arrow = schema.arrow_schema()
        self._key_schema = pa.schema([arrow.field(k) for k in self.keys])
        self.table = self._empty()
        self._index_schema = self.table.schema

    def _empty(self) -> pa.Table:
        return (
            self._key_schema.empty_table()
            .append_column(pa.field(_PART, pa.int32(), False), pa.array([], pa.int32()))
            .append_column(pa.field(_BUCKET, pa.int32(), False), pa.array([], pa.int32()))
        )

    def __len__(self) -> int:
        result: int = self.table.num_rows
        return result

    def partition_id(self, values: tuple[Any, ...]) -> int:
        pid = self._part_ids.get(values)
        if pid is None:
            pid = len(self._part_values)
            self._part_ids[values] = pid
            self._part_values.append(values)
            self.counts[pid] = {}
        return pid

    # ---------------------------------------------------------------- bootstrap
    def bootstrap(
        self,
        store: TableStore,
        reader: SplitReader,
        snapshot: Snapshot | None,
        *,
        parallelism: int | None = None,
        ttl_ms: int | None = None,
        deletions: Mapping[tuple[bytes, int, str], DeletionFile] | None = None,
        partitions: Callable[[bytes], bool] | None = None,
    ) -> None:
        """Load every live key of ``snapshot`` (see :func:`bootstrap_splits`; ``partitions``:
        only those of the serialized partitions it admits).

        The splits (one per partition and bucket) are read ``parallelism`` at once (default:
        the cores available, capped by the number of splits) and loaded in split order as they
        come, so the index is the same at every parallelism. Memory: the index itself (the key
        columns of every live key, plus 8 bytes a key) and the merge of at most
        ``2 * parallelism`` splits' key columns at a time."""
        splits = bootstrap_splits(store, self.schema, snapshot, ttl_ms, deletions)
        if partitions is not None:
            splits = [s for s in splits if partitions(s.partition_bytes)]
        keys = imap_ordered(lambda s: split_keys(reader, self.schema, s), splits, parallelism)
        for split, split_keys_ in zip(splits, keys, strict=True):
            self.load(split_keys_, split.bucket)

    def load(self, keys: pa.Table, bucket: int | np.ndarray, *, count: bool = True) -> None:
        """Add existing keys: ``keys`` holds the primary-key and partition columns (as read by
        :func:`split_keys`), ``bucket`` their bucket (one for all, or one per row). With
        ``count=False`` the per-bucket key counts are left alone (set exactly elsewhere)."""
        n = keys.num_rows
        if n == 0:
            return
        buckets = np.broadcast_to(np.asarray(bucket, dtype=np.int32), (n,)).copy()
        part = self._row_partitions(keys)
        if count:  # keys per (partition, bucket), over one int64 code per row
            codes, counts = np.unique(
                part.astype(np.int64) << 32 | buckets.astype(np.int64), return_counts=True
            )
            for code, c in zip(codes.tolist(), counts.tolist(), strict=True):
                bucket_counts = self.counts[code >> 32]
                b = code & 0xFFFFFFFF
                bucket_counts[b] = bucket_counts.get(b, 0) + c
        rows = keys.select(self.keys).cast(self._key_schema)
        rows = rows.append_column(pa.field(_PART, pa.int32(), False), pa.array(part))
        rows = rows.append_column(pa.field(_BUCKET, pa.int32(), False), pa.array(buckets))
        self.table = pa.concat_tables([self.table, rows])

    # ------------------------------------------------------------------ resolve
    def resolve(self, records: pa.Table) -> tuple[pa.Table, np.ndarray]:
        """Route a batch of records (table fields + ``_VALUE_KIND``, already validated) by the
        rules of the module docstring. Returns the rows to write (partition fields possibly
        rewritten, retraction rows appended) and the bucket of each; updates the index."""
        n = records.num_rows
        if n == 0:
            return records, np.zeros(0, np.int32)
        part = self._row_partitions(records)
        keyed = records.select(self.keys).append_column(
            _ROW, pa.array(np.arange(n, dtype=np.int64))
        )
        groups = keyed.group_by(self.keys, use_threads=False).aggregate(
            [(_ROW, "min"), (_ROW, "max")]
        )
        u = groups.num_rows
        groups = groups.append_column(_GROUP, pa.array(np.arange(u, dtype=np.int64)))
        # the group of every row, and where each key lives now
        row_group = np.empty(n, dtype=np.int64)
        joined = keyed.join(groups.select([*self.keys, _GROUP]), self.keys, use_threads=False)
        row_group[joined.column(_ROW).to_numpy()] = joined.column(_GROUP).to_numpy()
        first = groups.column(f"{_ROW}_min").to_numpy()
        last = groups.column(f"{_ROW}_max").to_numpy()
        old_part = np.full(u, -1, dtype=np.int32)
        old_bucket = np.full(u, -1, dtype=np.int32)
        if self.table.num_rows:
            found = groups.select([*self.keys, _GROUP]).join(
                self.table, self.keys, join_type="inner", use_threads=False
            )
            gi = found.column(_GROUP).to_numpy()
            old_part[gi] = found.column(_PART).to_numpy()
            old_bucket[gi] = found.column(_BUCKET).to_numpy()
        has_old = old_part >= 0

        if self.engine == "deduplicate":
            target = part[last].astype(np.int32)
            keep_key = np.ones(u, dtype=bool)
            retract = has_old & (old_part != target)
        elif self.engine == "first-row":
            target = part[first].astype(np.int32)
            keep_key = ~has_old
            retract = np.zeros(u, dtype=bool)
        else:  # partial-update / aggregation: merge into where the key already lives
            target = np.where(has_old, old_part, part[first]).astype(np.int32)
            keep_key = np.ones(u, dtype=bool)
            retract = np.zeros(u, dtype=bool)

        stays = has_old & (old_part == target)
        bucket = np.where(stays, old_bucket, -1).astype(np.int32)
        for g in np.flatnonzero(retract):  # the key leaves its old bucket
            self.counts[int(old_part[g])][int(old_bucket[g])] -= 1
        needs = keep_key & ~stays
        order = np.flatnonzero(needs)
        order = order[np.argsort(first[order], kind="stable")]  # arrival order
        for pid in np.unique(target[order]):
            sel = order[target[order] == pid]
            bucket[sel] = fill_buckets(
                self.counts[int(pid)], len(sel), self.target, self.owns, -1, np.zeros(0, np.int32)
            )

        # rows to write: records of kept keys in the target partition (rewritten for merges)
        row_target = target[row_group]
        if self.engine in ("deduplicate", "first-row"):
            row_keep = keep_key[row_group] & (part == row_target)
        else:
            row_keep = keep_key[row_group]
        kept_idx = np.flatnonzero(row_keep)
        out = records.take(pa.array(kept_idx))
        if (
            self.engine in ("partial-update", "aggregation")
            and (part[kept_idx] != row_target[kept_idx]).any()
        ):
            out = self._with_partitions(out, row_target[kept_idx])
        out_bucket = bucket[row_group[kept_idx]]
        if retract.any():
            gr = np.flatnonzero(retract)
            rows = records.take(pa.array(last[gr]))
            rows = self._with_partitions(rows, old_part[gr])
            rows = rows.set_column(
                rows.schema.get_field_index(KIND),
                rows.schema.field(KIND),
                pa.array(np.full(len(gr), RowKind.DELETE, np.int8)),
            )
            out = pa.concat_tables([out, rows])
            out_bucket = np.concatenate([out_bucket, old_bucket[gr]])

        # the index: every kept key now lives at (target, bucket)
        changed = np.flatnonzero(keep_key & ~stays)
        if len(changed):
            update = groups.take(pa.array(changed)).select(self.keys)
            update = update.append_column(
                pa.field(_PART, pa.int32(), False), pa.array(target[changed])
            ).append_column(pa.field(_BUCKET, pa.int32(), False), pa.array(bucket[changed]))
            rest = self.table
            if rest.num_rows and has_old[changed].any():
                rest = rest.join(
                    update.select(self.keys), self.keys, join_type="left anti", use_threads=False
                )
            self.table = pa.concat_tables(
                [
                    rest.select(update.column_names).cast(self._index_schema),
                    update.cast(self._index_schema),
                ]
            )
        return out, out_bucket.astype(np.int32)

    # ------------------------------------------------------------------ helpers
    def _row_partitions(self, records: pa.Table) -> np.ndarray:
        """The global partition id of every row (null partition values included)."""
        out = np.empty(records.num_rows, dtype=np.int32)
        for values, rows in partition_groups(records, self.partition_keys):
            out[rows] = self.partition_id(values)
        return out

    def _with_partitions(self, rows: pa.Table, part_ids: np.ndarray) -> pa.Table:
        """``rows`` with their partition fields set to those of ``part_ids``."""
        for i, name in enumerate(self.partition_keys):
            idx = rows.schema.get_field_index(name)
            field = rows.schema.field(idx)
            values = pa.array([v[i] for v in self._part_values], field.type)
            rows = rows.set_column(idx, field, values.take(pa.array(part_ids)))
        return rows


def bootstrap_splits(
    store: TableStore,
    schema: TableSchema,
    snapshot: Snapshot | None,
    ttl_ms: int | None,
    deletions: Mapping[tuple[bytes, int, str], DeletionFile] | None = None,
) -> list[Split]:
    """Every (partition, bucket) of ``snapshot`` with all its live files (level 0 included,
    whatever the merge engine) and their deletion vectors (``deletions``, by partition, bucket
    and data file name: a deletion-vector table's key that moved to another partition is gone
    from its old one only by a vector), except those whose files are all older than
    ``ttl_ms``. The manifests are read :data:`~lakeops.parallel.IO_THREADS` at once."""
    part_types = schema.types_of(schema.partition_keys)
    groups: dict[tuple[bytes, int], list[Any]] = {}
    for e in store.live_entries(snapshot, parallelism=IO_THREADS):
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    now = time.time() * 1000
    splits = []
    for (pbytes, bucket), files in sorted(groups.items()):
        if ttl_ms is not None and all(
            (f.creation_time_millis or now) + ttl_ms < now for f in files
        ):
            continue
        partition = binary_row.deserialize(pbytes, part_types)
        vectors = tuple((deletions or {}).get((pbytes, bucket, f.file_name)) for f in files)
        splits.append(
            Split(partition, pbytes, bucket, tuple(files), vectors if any(vectors) else ())
        )
    return splits


def split_keys(reader: SplitReader, schema: TableSchema, split: Split) -> pa.Table:
    """The live keys of a split: its primary-key and partition columns (merged, so deleted keys
    are absent)."""
    keys = reader.read(split, schema.trimmed_primary_keys)
    arrow = schema.arrow_schema()
    values = dict(zip(schema.partition_keys, split.partition, strict=True))
    names = list(dict.fromkeys([*schema.primary_keys, *schema.partition_keys]))
    columns = [
        pa.array([values[k]] * keys.num_rows, arrow.field(k).type)
        if k in values
        else keys.column(k)
        for k in names
    ]
    return pa.table(columns, schema=pa.schema([arrow.field(k) for k in names]))
