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

A data-evolution table's files are pruned by row-id group instead (see
:mod:`lakeops.append.evolution`): a file whose statistics rule a filter out may still supply
other columns of rows its siblings complete.

Files of a fixed bucket are read in sequence order (the order they were written), as Paimon's
readers do; files of an unaware-bucket table in manifest order.

**Deletion vectors** (``deletion-vectors.enabled``): each file of a split carries the deletion
file of its vector in the snapshot (:mod:`lakeops.format.deletion_vector`), and readers drop the
rows at those positions (:mod:`lakeops.read.deletions`). Statistics cover deleted rows too,
so pruning by them stays conservative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakeops.append.evolution import GroupReader, data_evolution, row_id_groups
from lakeops.append.files import AppendFileReader
from lakeops.append.stats import value_stats
from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.manifest import ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.expression import Stats
from lakeops.read.predicate import RowFilter
from lakeops.read.scan import _BucketPruning, snapshot_deletion_files
from lakeops.store.context import TableContext

__all__ = ["AppendSplit", "plan_append_splits", "snapshot_deletion_files"]


@dataclass(frozen=True)
class AppendSplit:
    """The live files of one (partition, bucket) a read returns, in read order, and the
    deletion file of each (None: no row of it is deleted)."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    deletions: tuple[DeletionFile | None, ...] = ()

    def deletion_of(self, i: int) -> DeletionFile | None:
        """The deletion file of ``files[i]`` (None when it has none)."""
        return self.deletions[i] if i < len(self.deletions) else None


def plan_append_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None = None,
    entries: Sequence[ManifestEntry] | None = None,
) -> list[AppendSplit]:
    """Splits of ``snapshot`` (or of ``entries``: files to read, e.g. one commit's delta) that
    may hold rows ``row_filter`` keeps, ordered by (partition, bucket), each file with its
    deletion file in ``snapshot`` (``entries`` without a snapshot: none)."""
    deletions = snapshot_deletion_files(ctx, snapshot)
    store, schema = ctx.store, ctx.schema
    part_types = schema.types_of(schema.partition_keys)
    evolution = SchemaEvolution(schema, store.schema)
    partitions: dict[bytes, tuple[Any, ...] | None] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    buckets = _BucketPruning(ctx, row_filter)
    live = entries if entries is not None else store.live_entries(snapshot)
    # data evolution: a file's rows are completed by its row-id siblings, so statistics prune
    # whole groups of siblings (below), never one file
    merged = data_evolution(schema)
    if merged and deletions:
        raise UnsupportedFeatureError(
            f"snapshot {snapshot.id if snapshot else '?'} of data-evolution table {ctx.root} "
            "holds deletion vectors (rows deleted by row id), which lakeops does not apply to "
            "files merged by row id; nothing was read — read this table with Paimon"
        )
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
        if (
            not merged
            and row_filter is not None
            and not row_filter.may_hold(value_stats(evolution, entry.file))
        ):
            continue
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    splits = []
    fixed = ctx.options.bucket > 0
    if merged and row_filter is not None:
        groups_reader = GroupReader(AppendFileReader(ctx.file_io, schema, store.schema, ctx.root))
    for (pbytes, bucket), files in sorted(groups.items(), key=lambda kv: kv[0]):
        part = partitions[pbytes]
        assert part is not None
        if fixed:
            files.sort(key=lambda f: f.min_sequence_number)
        if merged and row_filter is not None:
            files = [
                f
                for group in row_id_groups(files)
                if groups_reader.may_hold(group, row_filter)
                for f in group
            ]
            if not files:
                continue
        dvs = tuple(deletions.get((pbytes, bucket, f.file_name)) for f in files)
        splits.append(AppendSplit(part, pbytes, bucket, tuple(files), dvs if any(dvs) else ()))
    return splits
