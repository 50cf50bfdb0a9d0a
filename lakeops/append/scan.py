"""Scan planning of append tables: the live files of a snapshot per (partition, bucket), pruned
by the filter, in read order.

An append table has no merge: every row of every live file is a row of the table. So unlike a
primary-key table, a file's **value statistics** prune it (Paimon's ``AppendOnlyFileStoreScan``
filters on them): a file whose statistics show no row can pass the filter is skipped. Pruning
only skips what cannot hold a kept row; the exact filter runs on the rows read.

* partitions: the filter over the partition's exact values;
* buckets (fixed-bucket tables): where the filter pins every ``bucket-key`` column to a few
  values, only the buckets they hash to;
* files: the filter over the file's value statistics, for integer, string, boolean and date
  columns whose type the file shares with the current schema (FLOAT/DOUBLE are left out: NaN
  and -0.0 order differently in Java's statistics). Statistics a file does not carry
  (``_VALUE_STATS_COLS`` empty, or a null min/max) prune nothing. lakeops writes them as Paimon
  does (:mod:`lakeops.kv.stats`): string bounds may be truncated, the max rounded up, so they
  bound the values rather than equal them.

Files of a fixed bucket are read in sequence order (the order they were written), as Paimon's
readers do; files of an unaware-bucket table in manifest order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakeops.context import TableContext
from lakeops.errors import LakeopsError, UnsupportedFeatureError
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.expression import Stats
from lakeops.read.predicate import RowFilter
from lakeops.read.scan import DELETION_VECTORS_INDEX, _BucketPruning
from lakeops.spec import binary_row
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.manifest import ManifestEntry
from lakeops.spec.snapshot import Snapshot
from lakeops.spec.types import DataType

__all__ = ["AppendSplit", "plan_append_splits", "value_stats"]

#: types whose statistics lakeops compares exactly as Paimon orders them
_PRUNABLE = {"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "DATE", "CHAR", "VARCHAR"}


@dataclass(frozen=True)
class AppendSplit:
    """The live files of one (partition, bucket) a read returns, in read order."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]


def require_no_deletion_vectors(ctx: TableContext, snapshot: Snapshot | None) -> None:
    """Refuse a snapshot that holds deletion vectors: lakeops does not apply them to append
    files, and reading the files without them would return deleted rows."""
    if snapshot is None or not ctx.options.deletion_vectors:
        return
    if any(e.file.index_type == DELETION_VECTORS_INDEX for e in ctx.store.index_entries(snapshot)):
        raise UnsupportedFeatureError(
            f"snapshot {snapshot.id} of append table {ctx.root} holds deletion vectors (option "
            "'deletion-vectors.enabled' = 'true'), which lakeops does not apply to append "
            "tables yet; nothing was read — read this table with Paimon"
        )


def value_stats(
    evolution: SchemaEvolution, f: DataFileMeta, columns: Sequence[str] | None = None
) -> dict[str, Stats]:
    """Per current column, what ``f``'s value statistics say of it (only columns whose stats
    are present, of a :data:`_PRUNABLE` type unchanged since the file was written)."""
    if f.value_stats_cols is not None and not f.value_stats_cols:
        return {}
    mapping = evolution.mapping(f.schema_id)
    file_fields = mapping.file_schema.fields
    names = (
        list(f.value_stats_cols)
        if f.value_stats_cols is not None
        else [fld.name for fld in file_fields]
    )
    by_name = {fld.name: fld.type for fld in file_fields}
    if any(n not in by_name for n in names):
        return {}
    types: list[DataType] = [by_name[n] for n in names]
    try:
        lo = binary_row.deserialize(f.value_stats.min_values, types)
        hi = binary_row.deserialize(f.value_stats.max_values, types)
    except (LakeopsError, ValueError, IndexError):
        return {}
    nulls = f.value_stats.null_counts
    position = {n: i for i, n in enumerate(names)}
    out: dict[str, Stats] = {}
    for current in columns if columns is not None else evolution.current.field_names:
        src = mapping.sources.get(current)
        if src is None or src[0] not in position:
            continue
        i = position[src[0]]
        t = src[1]
        if (
            t.root not in _PRUNABLE
            or t.to_arrow() != evolution.current.field(current).type.to_arrow()
        ):
            continue
        null_count = nulls[i] if i < len(nulls) else None
        out[current] = Stats(lo[i], hi[i], null_count, f.row_count)
    return out


def plan_append_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None = None,
    entries: Sequence[ManifestEntry] | None = None,
) -> list[AppendSplit]:
    """Splits of ``snapshot`` (or of ``entries``: files to read, e.g. one commit's delta) that
    may hold rows ``row_filter`` keeps, ordered by (partition, bucket)."""
    require_no_deletion_vectors(ctx, snapshot)
    store, schema = ctx.store, ctx.schema
    part_types = schema.types_of(schema.partition_keys)
    evolution = SchemaEvolution(schema, store.schema)
    partitions: dict[bytes, tuple[Any, ...] | None] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    buckets = _BucketPruning(ctx, row_filter)
    live = entries if entries is not None else store.live_entries(snapshot)
    for entry in live:
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
        if row_filter is not None and not row_filter.may_hold(value_stats(evolution, entry.file)):
            continue
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    splits = []
    fixed = ctx.options.bucket > 0
    for (pbytes, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        part = partitions[pbytes]
        assert part is not None
        if fixed:
            files.sort(key=lambda f: f.min_sequence_number)
        splits.append(AppendSplit(part, pbytes, bucket, tuple(files)))
    return splits
