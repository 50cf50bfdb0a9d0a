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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakeops.context import TableContext
from lakeops.errors import UnsupportedFeatureError
from lakeops.kv.evolution import SchemaEvolution
from lakeops.options import TableOptions
from lakeops.read.expression import Stats, bucket_values
from lakeops.read.predicate import RowFilter
from lakeops.spec import binary_row
from lakeops.spec.bucket_hash import assign_buckets
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.index_manifest import DELETION_VECTORS_INDEX
from lakeops.spec.partition_spec import spec_predicate
from lakeops.spec.schema import TableSchema
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = ["PartitionSpec", "Split", "partition_matches", "plan_splits"]

#: one partition as users write it: ``{"dt": "2024-01-01"}``
PartitionSpec = Mapping[str, Any]


@dataclass(frozen=True)
class Split:
    """The files of one (partition, bucket) that a read must merge."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]


def require_no_deletion_vectors(
    store: TableStore, options: TableOptions, snapshot: Snapshot | None
) -> None:
    """Refuse to read a snapshot that holds deletion vectors: lakeops does not apply them, and
    merging the files without them can resurrect deleted rows or aggregate a row twice."""
    if not options.deletion_vectors or snapshot is None:
        return
    if any(e.file.index_type == DELETION_VECTORS_INDEX for e in store.index_entries(snapshot)):
        raise UnsupportedFeatureError(
            f"snapshot {snapshot.id} of {store.root} holds deletion vectors (option "
            "'deletion-vectors.enabled' = 'true'), which lakeops does not apply; read this "
            "table with Paimon"
        )


def plan_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None = None,
) -> list[Split]:
    """Splits of ``snapshot`` that may hold rows ``row_filter`` keeps, ordered by
    (partition, bucket).

    Level-0 files are left out for tables whose batch reads skip them (first-row,
    deletion vectors), as Paimon's readers do.
    """
    store, schema, options = ctx.store, ctx.schema, ctx.options
    require_no_deletion_vectors(store, options, snapshot)
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
        splits.append(Split(part, pbytes, bucket, tuple(files)))
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
    :mod:`lakeops.spec.partition_spec`; invalid values raise ConfigurationError here."""
    opts = options if options is not None else TableOptions.from_schema(schema)
    return spec_predicate(
        schema.partition_keys,
        schema.types_of(schema.partition_keys),
        specs,
        opts.partition_default_name,
    )
