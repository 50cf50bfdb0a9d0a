"""Routing: which (partition, bucket) every record of a write goes to.

A table with a fixed number of buckets hashes the bucket key as Paimon does
(:mod:`lakeops.format.bucket_hash`). A dynamic-bucket table (``bucket = -1``) asks each
partition's assigner, loaded from the base snapshot's HASH index, and keeps the key hashes the
new HASH index must record; a cross-partition table asks its global key index, which may drop,
move or retract records. Input whose buckets an upstream stage (Spark) already assigned carries
them in :data:`~lakeops.write.records.BUCKET_COLUMN`.

:meth:`Router.route` groups the records by (partition, bucket), each group in input order (the
order that numbers them), the groups ordered by partition and then bucket.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from lakeops.bucket.cross_partition import GlobalIndex
from lakeops.bucket.dynamic import PartitionIndex, partition_codes, partition_groups
from lakeops.errors import DataValidationError, SnapshotExpiredError, StaleWriteError
from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets, hash_rows
from lakeops.format.index_manifest import HASH_INDEX
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.snapshot import Snapshot
from lakeops.parallel import IO_THREADS, check_parallelism, run_ordered
from lakeops.read.guard import guard_read, planned_on
from lakeops.read.merge_read import SplitReader
from lakeops.read.scan import table_deletion_files
from lakeops.store import TableStore
from lakeops.store.context import TableContext
from lakeops.write.records import BUCKET_COLUMN

__all__ = ["Routed", "Router", "read_key_index"]

T = TypeVar("T")


@dataclass(frozen=True)
class Routed:
    """The records of one (partition, bucket) from one routed slice, in input order."""

    partition: tuple[object, ...]
    bucket: int
    records: pa.Table
    #: dynamic buckets: the bucket-key hash of every record, for the bucket's HASH index
    key_hashes: np.ndarray | None


def read_key_index(store: TableStore, base: Snapshot | None, read: Callable[[], T]) -> T:
    """``read()`` of the dynamic-bucket or cross-partition key index in ``base``; where
    ``base`` was expired while it read (expiry deleted an index or data file a later commit
    replaced), the write is stale: a :class:`StaleWriteError`, so the write runs again on the
    latest snapshot."""
    try:
        return guard_read(store, planned_on(base), read)
    except SnapshotExpiredError as exc:
        raise StaleWriteError(
            f"snapshot {exc.snapshot_id} of table {store.root}, on which this write planned its "
            "dynamic buckets, was expired while the write read its key index; nothing was "
            "written: write again (it plans on the latest snapshot)"
        ) from exc


class Router:
    """Assigns every record its bucket and groups records by (partition, bucket).

    Holds the bucket assigners of one write (dynamic-bucket partition indexes, the global index
    of a cross-partition table), loaded from ``base`` on first use. ``parallelism``: the
    writer's knob (:mod:`lakeops.parallel`): how many splits the cross-partition bootstrap
    reads at once (when None, ``cross-partition-upsert.bootstrap-parallelism`` if the table
    sets it, else the cores available). A partition's HASH index files are read
    :data:`~lakeops.parallel.IO_THREADS` at once. Neither changes the assignment.
    """

    def __init__(
        self,
        table: TableContext,
        base: Snapshot | None,
        *,
        parallelism: int | None = None,
        kept: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.table = table
        #: a partition overwrite: the (serialized) partitions it does not replace
        self.kept = kept
        self._kept_index: GlobalIndex | None = None
        self.parallelism = check_parallelism(parallelism)
        self.store = table.store
        self.schema = schema = table.schema
        self.options = options = table.options
        self.engine = table.engine
        self.base = base
        self.bucket_key_types = schema.types_of(schema.bucket_keys)
        self.partition_types = schema.types_of(schema.partition_keys)
        self.dynamic = table.buckets if options.bucket == -1 else None
        self.cross_partition = options.bucket == -1 and schema.cross_partition_update
        self._partition_indexes: dict[bytes, PartitionIndex] = {}
        self._global_index: GlobalIndex | None = None

    def route(self, records: pa.Table) -> list[Routed]:
        """``records`` grouped by (partition, bucket); see the module docstring."""
        records, buckets, hashes = self.assign(records)
        if records.num_rows == 0:
            return []
        part_ids = partition_codes(records, self.schema.partition_keys)[0]
        low = int(buckets.min()) if len(buckets) else 0  # the postpone bucket is -2
        width = int(buckets.max()) - low + 1 if len(buckets) else 1
        group = part_ids * width + (buckets - low)  # >= 0
        if len(group):  # narrower keys sort faster, in the same order (8/16 bits: radix sort)
            top = int(group.max())
            narrow = next(
                (t for t in (np.uint8, np.uint16, np.int32) if top <= np.iinfo(t).max), None
            )
            if narrow is not None:
                group = group.astype(narrow)
        order = np.argsort(group, kind="stable")
        sorted_group = group[order]
        bounds = np.concatenate(
            ([0], np.flatnonzero(np.diff(sorted_group)) + 1, [len(sorted_group)])
        )
        # one group (one bucket of one partition): the records are grouped as they are
        routed = records if len(bounds) == 2 else records.take(pa.array(order))
        out = []
        for lo, hi in itertools.pairwise(bounds):
            part = routed.slice(int(lo), int(hi - lo))
            values = tuple(part.column(k)[0].as_py() for k in self.schema.partition_keys)
            out.append(
                Routed(
                    values,
                    int(buckets[order[lo]]),
                    part,
                    None if hashes is None else hashes[order[lo:hi]],
                )
            )
        return out

    def assign(self, records: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray | None]:
        """The bucket of every record (fixed hash, dynamic assigner, the global index of
        cross-partition tables, or assigned upstream) and, for dynamic buckets, the key hashes
        the hash index must record. Cross-partition tables may drop, move or add (retraction)
        records, so the records come back too."""
        if BUCKET_COLUMN in records.column_names:
            buckets = records.column(BUCKET_COLUMN).to_numpy().astype(np.int32)
            records = records.drop_columns([BUCKET_COLUMN])
            dynamic = self.dynamic is not None and not self.cross_partition
            return records, buckets, self._key_hashes(records) if dynamic else None
        if self.options.bucket == POSTPONE_BUCKET:
            return records, np.full(records.num_rows, POSTPONE_BUCKET, dtype=np.int32), None
        if self.options.bucket > 0:
            buckets = assign_buckets(
                [records.column(k) for k in self.schema.bucket_keys],
                self.bucket_key_types,
                self.options.bucket,
            )
            return records, buckets, None
        if self.cross_partition:
            if self.kept is not None:
                self._refuse_kept_keys(records)
            records, buckets = self._cross_partition_index().resolve(records)
            return records, buckets, None
        hashes = self._key_hashes(records)
        buckets = np.empty(records.num_rows, dtype=np.int32)
        for values, rows in partition_groups(records, self.schema.partition_keys):
            buckets[rows] = self._partition_index(list(values)).assign(hashes[rows])
        return records, buckets, hashes

    def _key_hashes(self, records: pa.Table) -> np.ndarray:
        return hash_rows(
            [records.column(k) for k in self.schema.bucket_keys], self.bucket_key_types
        )

    def _read_key_index(self, pbytes: bytes) -> tuple[list[Any], dict[int, Any]]:
        """The index entries of a partition in the snapshot this write planned on, and the
        HASH index file of each (by ``id`` of its entry). When that snapshot is expired while
        they are read (expiry deleted an index file it replaced), the write is stale: a
        :class:`StaleWriteError`, so the write runs again on the latest snapshot."""

        def read() -> tuple[list[Any], dict[int, Any]]:
            entries = [e for e in self.store.index_entries(self.base) if e.partition == pbytes]
            hash_entries = [e for e in entries if e.file.index_type == HASH_INDEX]
            loaded = run_ordered(
                lambda e: self.store.hash_index(e, self.schema), hash_entries, IO_THREADS
            )
            return entries, {id(e): h for e, h in zip(hash_entries, loaded, strict=True)}

        return read_key_index(self.store, self.base, read)

    def _partition_index(self, values: list[object]) -> PartitionIndex:
        """The dynamic-bucket assigner state of a partition (one assigner: owns every id)."""
        pbytes = binary_row.serialize(values, self.partition_types)
        index = self._partition_indexes.get(pbytes)
        if index is None:
            assert self.dynamic is not None
            entries, hashes = self._read_key_index(pbytes)
            index = PartitionIndex.load(
                entries,
                lambda e: hashes[id(e)],
                partition_hash=0,
                num_channels=1,
                num_assigners=1,
                assign_id=0,
                target_row_num=self.dynamic.target_row_num,
                max_buckets=self.dynamic.max_buckets,
            )
            self._partition_indexes[pbytes] = index
        return index

    def _refuse_kept_keys(self, records: pa.Table) -> None:
        """A partition overwrite of a cross-partition table replaces only its partitions, yet
        the table holds each key once: a written key that lives in a partition the overwrite
        keeps would then live twice (Paimon's commit refuses the retraction it would need in
        that partition). Refused before anything is written, naming the keys."""
        if self._kept_index is None:
            assert self.dynamic is not None and self.kept is not None
            latest = self.store.latest_snapshot()
            index = GlobalIndex(self.schema, self.engine.name, self.dynamic.target_row_num)
            index.bootstrap(
                self.store,
                SplitReader(self.table),
                latest,
                parallelism=self.parallelism or self.dynamic.bootstrap_parallelism,
                ttl_ms=self.dynamic.index_ttl_ms,
                deletions=table_deletion_files(self.table, latest),
                partitions=self.kept,
            )
            self._kept_index = index
        index = self._kept_index
        keys = list(self.schema.primary_keys)
        if not len(index) or records.num_rows == 0:
            return
        found = records.select(keys).join(
            index.table.select(keys), keys, join_type="left semi", use_threads=False
        )
        if found.num_rows:
            shown = found.slice(0, 5).to_pylist()
            raise DataValidationError(
                f"{found.num_rows} row(s) of this partition overwrite have primary keys that "
                f"live in partitions it does not replace (e.g. {shown}); a cross-partition "
                "table holds each key once, in one partition: overwrite those partitions too, "
                "delete the keys there first, or write the rows without overwrite (an upsert "
                "moves them)"
            )

    def _cross_partition_index(self) -> GlobalIndex:
        """The global key index, bootstrapped from the base snapshot on first use (as Paimon,
        once per write job); a write whose base snapshot expired while it read the keys is
        stale (:func:`read_key_index`)."""
        if self._global_index is None:
            assert self.dynamic is not None
            dynamic = self.dynamic
            index = GlobalIndex(self.schema, self.engine.name, dynamic.target_row_num)
            read_key_index(
                self.store,
                self.base,
                lambda: index.bootstrap(
                    self.store,
                    SplitReader(self.table),
                    self.base,
                    parallelism=self.parallelism or dynamic.bootstrap_parallelism,
                    ttl_ms=dynamic.index_ttl_ms,
                    deletions=table_deletion_files(self.table, self.base),
                ),
            )
            self._global_index = index
        return self._global_index
