"""Scan planning: the live files of a snapshot, grouped into splits per (partition, bucket),
with pruning from the filter.

Each step only skips what cannot hold a kept row (:class:`~lakeops.read.predicate.RowFilter`
over statistics), so the exact filter on merged rows decides the rest:

* partitions: the filter over the partition's exact values;
* buckets of fixed-bucket tables: where the filter pins every bucket-key column to a few
  values (``==``, ``is_in``), only the buckets those values hash to can hold a kept row;
* files: the filter over the file's key statistics — every record of a key carries the key, so
  a file whose key ranges exclude a kept row holds no record of one. Value statistics are not
  used: a file's older record of a key may be outside the filter while its merged row is not.

**Deletion vectors** (``deletion-vectors.enabled`` on a primary-key table), as Paimon 0.9's
batch scan (``DataTableBatchScan``, ``SnapshotReaderImpl``) plans them: level-0 files are left out
(``withLevelFilter(level -> level > 0)``), and each remaining file carries the deletion file of its
vector in the snapshot, which readers apply before merging (``MergeFileSplitRead`` builds its
file readers with the split's deletion vectors). Vectors are used only while the table's option
is on, as Paimon reads them only then. Statistics (and so pruning) still cover deleted rows,
which keeps every pruning step conservative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile, deletion_files
from lakeops.format.partition_spec import spec_predicate
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.evolution import SchemaEvolution
from lakeops.options import TableOptions
from lakeops.read.expression import Stats, bucket_values
from lakeops.read.predicate import RowFilter
from lakeops.store.context import TableContext

__all__ = [
    "PartitionSpec",
    "Split",
    "partition_matches",
    "plan_splits",
    "snapshot_deletion_files",
    "table_deletion_files",
]

#: one partition as users write it: ``{"dt": "2024-01-01"}``
PartitionSpec = Mapping[str, Any]


@dataclass(frozen=True)
class Split:
    """The files of one (partition, bucket) that a read must merge, and the deletion file of
    each (``deletions``, parallel to ``files``; None or absent: no row of it is deleted)."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    deletions: tuple[DeletionFile | None, ...] = ()

    @cached_property
    def _by_name(self) -> dict[str, DeletionFile]:
        pairs = zip(self.files, self.deletions, strict=False)
        return {f.file_name: d for f, d in pairs if d is not None}

    def deletion_of(self, f: DataFileMeta) -> DeletionFile | None:
        """The deletion file of data file ``f`` of this split (None when it has none)."""
        return self._by_name.get(f.file_name) if self.deletions else None


def snapshot_deletion_files(
    ctx: TableContext, snapshot: Snapshot | None
) -> dict[tuple[bytes, int, str], DeletionFile]:
    """The deletion files of ``snapshot``, by (partition, bucket, data file name) (empty when it
    holds no deletion vectors), whatever the table's options say: a snapshot's index is what
    its rows are."""
    if snapshot is None:
        return {}
    entries = ctx.store.index_entries(snapshot)
    paths = {
        e.file.file_name: ctx.locations.index_entry_path(e.partition, e.bucket, e.file)
        for e in entries
    }
    return deletion_files(entries, paths)


def table_deletion_files(
    ctx: TableContext, snapshot: Snapshot | None
) -> dict[tuple[bytes, int, str], DeletionFile]:
    """The deletion files a primary-key read of ``snapshot`` applies: the snapshot's, while
    ``deletion-vectors.enabled`` is on (Paimon's ``SnapshotReaderImpl`` reads the deletion index
    only then), else none."""
    return snapshot_deletion_files(ctx, snapshot) if ctx.options.deletion_vectors else {}


def plan_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None = None,
) -> list[Split]:
    """Splits of ``snapshot`` that may hold rows ``row_filter`` keeps, ordered by
    (partition, bucket).

    Level-0 files are left out for tables whose batch reads skip them (first-row,
    deletion vectors), as Paimon's readers do; each file carries its deletion file (see the
    module docstring).
    """
    store, schema, options = ctx.store, ctx.schema, ctx.options
    vectors = table_deletion_files(ctx, snapshot)
    part_types = schema.types_of(schema.partition_keys)
    evolution = SchemaEvolution(schema, store.schema)
    partitions: dict[bytes, tuple[Any, ...] | None] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    buckets = _BucketPruning(ctx, row_filter)
    for entry in store.live_entries(snapshot):
        if entry.file.level == 0 and options.skips_level0_in_batch_reads:
            continue
        if entry.partition not in partitions:
            values = binary_row.deserialize(entry.partition, part_types)
            keep = row_filter is None or row_filter.may_hold(
                {k: Stats.exact(v) for k, v in zip(schema.partition_keys, values, strict=True)}
            )
            partitions[entry.partition] = values if keep else None
        if partitions[entry.partition] is None:
            continue
        if not buckets.may_hold(entry.bucket, entry.total_buckets):
            continue
        if row_filter is not None and not row_filter.may_hold(_key_stats(evolution, entry.file)):
            continue
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    splits = []
    for (pbytes, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        part = partitions[pbytes]
        assert part is not None
        deletions = tuple(vectors.get((pbytes, bucket, f.file_name)) for f in files)
        splits.append(
            Split(part, pbytes, bucket, tuple(files), deletions if any(deletions) else ())
        )
    return splits


def _key_stats(evolution: SchemaEvolution, f: DataFileMeta) -> dict[str, Stats]:
    """The file's key statistics per key column (keys are never null)."""
    return {
        k: Stats(lo, hi, 0, f.row_count)
        for k, (lo, hi) in evolution.key_stats_range(f).items()
        if lo is not None and hi is not None
    }


class _BucketPruning:
    """The buckets a filter that pins every bucket-key column can reach (fixed buckets only;
    per bucket count, as files written before a rescale hash by their own count)."""

    def __init__(self, ctx: TableContext, row_filter: RowFilter | None) -> None:
        schema = ctx.schema
        self.types = schema.types_of(schema.bucket_keys)
        self.values = (
            bucket_values(
                row_filter.tree,
                [(k, t.to_arrow()) for k, t in zip(schema.bucket_keys, self.types, strict=True)],
            )
            if row_filter is not None and ctx.options.bucket > 0
            else None
        )
        self._by_total: dict[int, set[int]] = {}

    def may_hold(self, bucket: int, total_buckets: int) -> bool:
        if self.values is None or total_buckets <= 0:
            return True
        reachable = self._by_total.get(total_buckets)
        if reachable is None:
            hashed = assign_buckets(self.values, self.types, total_buckets)
            reachable = {int(b) for b in hashed}
            self._by_total[total_buckets] = reachable
        return bucket in reachable


def partition_matches(
    schema: TableSchema,
    specs: Sequence[PartitionSpec] | None,
    options: TableOptions | None = None,
) -> Callable[[bytes], bool]:
    """A test of serialized partitions: does one of ``specs`` match it (None matches every
    partition)? Values are written as users write them (``{"pd": "2024-01-01"}``), see
    :mod:`lakeops.format.partition_spec`; invalid values raise ConfigurationError here."""
    opts = options if options is not None else TableOptions.from_schema(schema)
    return spec_predicate(
        schema.partition_keys,
        schema.types_of(schema.partition_keys),
        specs,
        opts.partition_default_name,
    )
