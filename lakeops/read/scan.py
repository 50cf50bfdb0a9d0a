"""Scan planning of both table kinds: the live files of a snapshot, grouped into splits per
(partition, bucket), with pruning from the filter. One planner (:func:`_plan`) does what both
share; the table kind's difference is a small strategy of it (:class:`_FileKind`).

Each step only skips what cannot hold a kept row (:class:`~lakeops.read.predicate.RowFilter`
over statistics), so the exact filter on the rows read decides the rest:

* partitions: the filter over the partition's exact values;
* buckets of fixed-bucket tables: where the filter pins every bucket-key column to a few
  values (``==``, ``is_in``), only the buckets those values hash to can hold a kept row;
* files of a **primary-key table**: the filter over the file's key statistics — every record
  of a key carries the key, so a file whose key ranges exclude a kept row holds no record of
  one. Value statistics are not used: a file's older record of a key may be outside the filter
  while its merged row is not;
* files of an **append table** (no merge: every row of every live file is a row of the table):
  the filter over the file's value statistics (:mod:`lakeops.read.stats`), as Paimon's
  ``AppendOnlyFileStoreScan`` filters on them. A data-evolution table's files are pruned by
  row-id group instead (:mod:`lakeops.read.row_tracking`): a file whose statistics rule a
  filter out may still supply other columns of rows its siblings complete.

Files of an append table's fixed bucket are read in sequence order (the order they were
written), as Paimon's readers do; files of an unaware-bucket table in manifest order.

**Deletion vectors** (``deletion-vectors.enabled``): each file of a split carries the deletion
file of its vector in the snapshot (:mod:`lakeops.format.deletion_vector`), and readers drop
the rows at those positions (:mod:`lakeops.read.deletions`). A primary-key table's batch scan
plans them as Paimon 0.9's (``DataTableBatchScan``, ``SnapshotReaderImpl``) does: level-0 files
are left out (``withLevelFilter(level -> level > 0)``), readers apply the vectors before merging
(``MergeFileSplitRead``), and vectors are used only while the table's option is on, as Paimon
reads them only then; an append table's reads apply the snapshot's vectors whatever its options
say. Statistics (and so pruning) still cover deleted rows, which keeps every pruning step
conservative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import pyarrow as pa

from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile, deletion_files
from lakeops.format.manifest import ManifestEntry
from lakeops.format.partition_spec import spec_predicate
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.evolution import SchemaEvolution
from lakeops.options import TableOptions
from lakeops.read.expression import Stats, bucket_values
from lakeops.read.file_index import IndexPruner
from lakeops.read.postpone import merges_on_read, routed, sequenced_after
from lakeops.read.predicate import RowFilter
from lakeops.read.row_tracking import GroupReader, data_evolution, row_id_groups
from lakeops.read.stats import key_stats, value_stats
from lakeops.store.context import TableContext

__all__ = [
    "PartitionSpec",
    "Split",
    "only_level",
    "partition_matches",
    "plan_append_splits",
    "plan_splits",
    "snapshot_deletion_files",
    "table_deletion_files",
]

#: one partition as users write it: ``{"dt": "2024-01-01"}``
PartitionSpec = Mapping[str, Any]


@dataclass(frozen=True)
class Split:
    """The files of one (partition, bucket) that a read must merge, and the deletion file of
    each (``deletions``, parallel to ``files``; None or absent: no row of it is deleted).

    ``postponed``: the postponed key-value records a ``postpone.merge-on-read`` read merges
    into this bucket after its files (:mod:`lakeops.read.postpone`), numbered above every
    file's sequence numbers; None for every other split."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    deletions: tuple[DeletionFile | None, ...] = ()
    postponed: pa.Table | None = field(default=None, compare=False)

    @cached_property
    def _by_name(self) -> dict[str, DeletionFile]:
        pairs = zip(self.files, self.deletions, strict=False)
        return {f.file_name: d for f, d in pairs if d is not None}

    def deletion_of(self, f: DataFileMeta) -> DeletionFile | None:
        """The deletion file of data file ``f`` of this split (None when it has none)."""
        return self._by_name.get(f.file_name) if self.deletions else None


def only_level(splits: Sequence[Split], level: int) -> list[Split]:
    """``splits`` with only their files at ``level``, each with its deletion file; a split
    without such a file is left out (Paimon's read-optimized read of the top level)."""
    kept: list[Split] = []
    for split in splits:
        files = tuple(f for f in split.files if f.level == level)
        if files:
            deletions = tuple(split.deletion_of(f) for f in files)
            deletions = deletions if any(d is not None for d in deletions) else ()
            bucket = split.bucket
            kept.append(Split(split.partition, split.partition_bytes, bucket, files, deletions))
    return kept


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
    *,
    every_level: bool = False,
) -> list[Split]:
    """Splits of ``snapshot`` of a primary-key table that may hold rows ``row_filter`` keeps,
    ordered by (partition, bucket).

    Level-0 files are left out for tables whose batch reads skip them (first-row,
    deletion vectors), as Paimon's readers do, unless ``every_level`` (every committed
    record, as ``deletion-vectors.merge-on-read`` reads them); each file carries its deletion
    file (see the module docstring).
    """
    files = _PrimaryKeyFiles(ctx, snapshot, every_level=every_level)
    return _plan(ctx, snapshot, row_filter, files, None)


def plan_append_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None = None,
    entries: Sequence[ManifestEntry] | None = None,
) -> list[Split]:
    """Splits of ``snapshot`` of an append table (or of ``entries``: files to read, e.g. one
    commit's delta) that may hold rows ``row_filter`` keeps, ordered by (partition, bucket),
    each file with its deletion file in ``snapshot`` (``entries`` without a snapshot: none);
    see the module docstring."""
    return _plan(ctx, snapshot, row_filter, _AppendFiles(ctx, snapshot, row_filter), entries)


class _FileKind(Protocol):
    """What a table kind's scan does differently (a strategy of :func:`_plan`)."""

    #: whether its reads merge postponed records into their buckets (postpone.merge-on-read)
    merges_postponed: bool

    def deletion_files(self) -> dict[tuple[bytes, int, str], DeletionFile]:
        """The deletion files its reads apply, by (partition, bucket, data file name)."""
        ...

    def may_hold(self, f: DataFileMeta, row_filter: RowFilter | None) -> bool:
        """Whether file ``f`` may hold a row ``row_filter`` keeps (False: leave it out)."""
        ...

    def arrange(self, files: list[DataFileMeta]) -> list[DataFileMeta]:
        """The kept files of one (partition, bucket) in read order, after what pruning needs
        all of them for (empty: no split)."""
        ...


class _PrimaryKeyFiles:
    """A primary-key table's files: pruned by key statistics (every record of a key carries
    the key; a value may be outside the filter in an older record while its merged row is
    not), level 0 left out where batch reads skip it (unless ``every_level``), vectors only
    while the option is on."""

    def __init__(
        self, ctx: TableContext, snapshot: Snapshot | None, *, every_level: bool = False
    ) -> None:
        self.evolution = SchemaEvolution(ctx.schema, ctx.store.schema)
        self.skips_level0 = ctx.options.skips_level0_in_batch_reads and not every_level
        self.vectors = table_deletion_files(ctx, snapshot)
        self.merges_postponed = merges_on_read(ctx)

    def deletion_files(self) -> dict[tuple[bytes, int, str], DeletionFile]:
        return self.vectors

    def may_hold(self, f: DataFileMeta, row_filter: RowFilter | None) -> bool:
        if f.level == 0 and self.skips_level0:
            return False
        return row_filter is None or row_filter.may_hold(key_stats(self.evolution, f))

    def arrange(self, files: list[DataFileMeta]) -> list[DataFileMeta]:
        return files


class _AppendFiles:
    """An append table's files: pruned by value statistics (a data-evolution table's by
    row-id group instead), a fixed bucket's read in sequence order, vectors always applied."""

    def __init__(
        self, ctx: TableContext, snapshot: Snapshot | None, row_filter: RowFilter | None
    ) -> None:
        schema = ctx.schema
        self.evolution = SchemaEvolution(schema, ctx.store.schema)
        self.deletions = snapshot_deletion_files(ctx, snapshot)
        self.fixed = ctx.options.bucket > 0
        # data evolution: a file's rows are completed by its row-id siblings, so statistics
        # prune whole groups of siblings (arrange), never one file
        self.merged = data_evolution(schema)
        if self.merged and self.deletions:
            raise UnsupportedFeatureError(
                f"snapshot {snapshot.id if snapshot else '?'} of data-evolution table "
                f"{ctx.root} holds deletion vectors (rows deleted by row id), which lakeops "
                "does not apply to files merged by row id; nothing was read — read this table "
                "with Paimon"
            )
        self.row_filter = row_filter
        #: embedded file indexes that rule out an equality / IN filter
        self.index = IndexPruner(schema, row_filter)
        self.merges_postponed = False
        self.groups = (
            GroupReader(AppendFileReader(ctx.file_io, schema, ctx.store.schema, ctx.root))
            if self.merged and row_filter is not None
            else None
        )

    def deletion_files(self) -> dict[tuple[bytes, int, str], DeletionFile]:
        return self.deletions

    def may_hold(self, f: DataFileMeta, row_filter: RowFilter | None) -> bool:
        return self.merged or (
            row_filter is None
            or (row_filter.may_hold(value_stats(self.evolution, f)) and self.index.may_hold(f))
        )

    def arrange(self, files: list[DataFileMeta]) -> list[DataFileMeta]:
        if self.fixed:
            files.sort(key=lambda f: f.min_sequence_number)
        if self.groups is None or self.row_filter is None:
            return files
        rf, groups = self.row_filter, self.groups
        return [f for group in row_id_groups(files) if groups.may_hold(group, rf) for f in group]


def _plan(
    ctx: TableContext,
    snapshot: Snapshot | None,
    row_filter: RowFilter | None,
    kind: _FileKind,
    entries: Sequence[ManifestEntry] | None,
) -> list[Split]:
    """The one scan planner: the live files of ``snapshot`` (or ``entries``) per
    (partition, bucket), pruned by partition, bucket and ``kind``'s file test, in
    (partition, bucket) order, each file with its deletion file."""
    schema = ctx.schema
    vectors = kind.deletion_files()
    part_types = schema.types_of(schema.partition_keys)
    partitions: dict[bytes, tuple[Any, ...] | None] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    buckets = _BucketPruning(ctx, row_filter)
    live = list(entries if entries is not None else ctx.store.live_entries(snapshot))
    postponed: set[bytes] = set()  # partitions read whose postponed records a read merges
    for entry in live:
        if entry.bucket == POSTPONE_BUCKET and not kind.merges_postponed:
            continue  # postponed rows: invisible to batch reads until compaction moves them
        if entry.partition not in partitions:
            values = binary_row.deserialize(entry.partition, part_types)
            keep = row_filter is None or row_filter.may_hold(
                {k: Stats.exact(v) for k, v in zip(schema.partition_keys, values, strict=True)}
            )
            partitions[entry.partition] = values if keep else None
        if partitions[entry.partition] is None:
            continue
        if entry.bucket == POSTPONE_BUCKET:
            postponed.add(entry.partition)
            continue
        if not buckets.may_hold(entry.bucket, entry.total_buckets):
            continue
        if not kind.may_hold(entry.file, row_filter):
            continue
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    routed_records = routed(ctx, live, postponed.__contains__) if postponed else {}
    for at in routed_records:
        groups.setdefault(at, [])
    splits = []
    for (pbytes, bucket), found in sorted(groups.items(), key=lambda kv: kv[0]):
        part = partitions[pbytes]
        assert part is not None
        files = kind.arrange(found)
        extra = routed_records.get((pbytes, bucket))
        if extra is not None:
            after = max((f.max_sequence_number for f in files), default=-1)
            extra = sequenced_after(extra, after)
        elif not files:
            continue
        deletions = tuple(vectors.get((pbytes, bucket, f.file_name)) for f in files)
        splits.append(
            Split(part, pbytes, bucket, tuple(files), deletions if any(deletions) else (), extra)
        )
    return splits


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
