"""Executing a compaction unit of one bucket (Paimon's MergeTreeCompactTask).

The unit's files are split by IntervalPartition into key-disjoint sections of sorted runs.
Sections with several runs are rewritten: their runs are merged by the streaming k-way merge
with the table's merge engine, and written as new files at the output level, rolling at
``target-file-size``. A section with one run keeps its large files and only *upgrades* them —
their level changes in the manifest, their bytes stay — while files smaller than
``target-file-size * compaction.small-file-ratio`` are rewritten together with their
neighbours. A file with deletes is rewritten rather than upgraded into the max level; so are
files with expired records, and every file when ``compaction.force-rewrite-all-files`` is set.
``-U``/``-D`` results are dropped only when the output level is the highest non-empty level.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.changelog.emit import changelog_records
from lakeops.changelog.lookup_cache import LEVEL, LevelLookup, RowGroupCache
from lakeops.compact.record_ttl import RecordExpiry
from lakeops.compact.strategy import CompactUnit
from lakeops.compact.vectors import POSITION, BucketVectors, OutsideLookup
from lakeops.format.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from lakeops.format.floats import order_value
from lakeops.format.kv import KIND
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv.evolution import SchemaLookup
from lakeops.kv.reader import KeyValueReader
from lakeops.kv.writer import KeyValueLayout, RollingFileWriter
from lakeops.merge import MergeEngine, group_starts, merge_sorted, sort_records
from lakeops.merge.engine import is_retraction
from lakeops.merge.interval_partition import partition_runs
from lakeops.merge.lookup_view import needs_lookup_view, top_records
from lakeops.merge.stream import merge_runs
from lakeops.options import TableOptions
from lakeops.options.changelog import ChangelogOptions
from lakeops.options.compaction import CompactOptions
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths

__all__ = ["BucketContext", "CompactResult", "CompactTask"]

#: rows held in memory per merged section, shared by its runs: bounds compaction memory
MERGE_BUDGET_ROWS = 524_288
MIN_BATCH_ROWS = 8_192


@dataclass
class BucketContext:
    """Everything compaction of one (partition, bucket) needs."""

    file_io: FileIO
    directory: str
    schema: TableSchema
    #: every schema of the table by id: files are read through the one they were written with
    schemas: SchemaLookup
    options: TableOptions
    compact_options: CompactOptions
    engine: MergeEngine
    expiry: RecordExpiry | None = None
    changelog: ChangelogOptions | None = None
    cache: RowGroupCache | None = None
    #: where new files of this bucket go when the table writes external paths
    external: ExternalPaths | None = None
    #: the token new file names carry (a distributed job finds its files by it), None: random
    name_token: str | None = None
    #: the bucket's deletion vectors (deletion-vector tables, see :mod:`lakeops.compact.vectors`)
    vectors: BucketVectors | None = None

    @classmethod
    def of(
        cls,
        table: TableContext,
        directory: str,
        *,
        external: ExternalPaths | None = None,
        cache: RowGroupCache | None = None,
        name_token: str | None = None,
    ) -> BucketContext:
        """What compaction of the bucket in ``directory`` of ``table`` needs (``external``:
        where its new files go when the table writes external paths; ``cache``: a lookup cache
        shared between buckets; ``name_token``: what new file names carry)."""
        copts = table.compaction
        return cls(
            table.file_io,
            directory,
            table.schema,
            table.store.schema,
            table.options,
            copts,
            table.engine,
            RecordExpiry(copts) if copts.expire_ms is not None else None,
            table.changelog,
            cache or RowGroupCache(table.changelog.lookup_cache_bytes),
            external,
            name_token,
        )

    def __post_init__(self) -> None:
        self.reader = KeyValueReader(self.file_io, self.schema, self.schemas)

    def key_range(self, f: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        return self.reader.key_range(f)

    def has_expired(self, f: DataFileMeta) -> bool:
        if self.expiry is None:
            return False
        column = self.reader.evolution.mapping(f.schema_id).source_name(self.expiry.field)
        return column is not None and self.expiry.file_has_expired(
            self.file_io, self.reader.path(self.directory, f), column
        )


@dataclass
class CompactResult:
    """Files a compaction removed and produced (upgrades appear in both, at two levels), and
    the changelog files it produced."""

    before: list[DataFileMeta] = field(default_factory=list)
    after: list[DataFileMeta] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.before and not self.after


def _bounds(touched: pa.Table, keys: Sequence[str]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The first and last of ``touched`` (merge keys, in key order), comparable with
    ``KeyValueReader.key_range`` (floats in Java's order)."""
    last = touched.num_rows - 1
    low = tuple(order_value(touched.column(k)[0].as_py()) for k in keys)
    high = tuple(order_value(touched.column(k)[last].as_py()) for k in keys)
    return low, high


def _level0_keys(records: pa.Table, keys: Sequence[str]) -> pa.Table | None:
    """The distinct merge keys of the level-0 records of ``records`` (sorted by key, with
    levels), in key order; None when it holds none."""
    level0 = records.column(LEVEL).to_numpy() == 0
    if not level0.any():
        return None
    new = records if level0.all() else records.filter(pa.array(level0))
    return new.select(keys).take(pa.array(group_starts(new, keys)))


class CompactTask:
    """Runs one :class:`CompactUnit` (see the module docstring)."""

    def __init__(
        self,
        ctx: BucketContext,
        unit: CompactUnit,
        drop_delete: bool,
        max_level: int,
        bucket_files: Sequence[DataFileMeta] = (),
    ) -> None:
        self.ctx = ctx
        self.unit = unit
        producer = ctx.changelog.producer if ctx.changelog is not None else "none"
        #: "lookup" when this compaction reads level 0, "full-compaction" when it writes the
        #: max level; None when it produces no changelog
        self.changelog_mode: str | None = None
        if producer == "lookup" and any(f.level == 0 for f in unit.files):
            self.changelog_mode = "lookup"
        elif producer == "full-compaction" and unit.output_level == max_level:
            self.changelog_mode = "full-compaction"
        unit_names = {f.file_name for f in unit.files}
        self.outside = [f for f in bucket_files if f.level > 0 and f.file_name not in unit_names]
        #: a first-row table's compaction below the files it leaves out (levels above the
        #: output level): a key those files hold keeps its row there, as Paimon's
        #: FirstRowMergeFunctionWrapper drops it by lookup, so levels above 0 hold each key once
        #: (Java Paimon and pypaimon read such levels without merging them)
        self._above = [f for f in self.outside if f.level > unit.output_level]
        self._first_row_lookup = ctx.options.merge_engine == "first-row" and bool(self._above)
        self._above_lookup: LevelLookup | None = None
        #: a table Paimon merges with its LookupMergeFunction (:mod:`lakeops.merge.lookup_view`):
        #: of each key only its lowest level above 0 counts, so what this compaction writes
        #: above level 0 must hold the key's whole state — its level-0 records merged with the
        #: record a lookup finds below the output level, as Paimon's
        #: LookupChangelogMergeFunctionWrapper writes it
        self._view = needs_lookup_view(
            ctx.compact_options.needs_lookup,
            ctx.options.merge_engine,
            ctx.options.deletion_vectors,
            bool(ctx.options.sequence_fields),
        )
        self._deeper_lookup: LevelLookup | None = None
        self.output_level = unit.output_level
        self.drop_delete = drop_delete
        self.max_level = max_level
        copts = ctx.compact_options
        self.min_file_size = int(ctx.options.target_file_size * copts.small_file_ratio)
        self.force_all = copts.force_rewrite_all
        self.result = CompactResult()
        self._outside_lookup: OutsideLookup | None = None
        #: a deletion-vector table whose merge keeps the newest record whatever the older one
        #: holds (deduplicate without sequence fields, no changelog): marking needs only the
        #: older records' positions, not their values
        self._positions_only = (
            ctx.vectors is not None
            and ctx.options.merge_engine == "deduplicate"
            and not ctx.options.sequence_fields
            and self.changelog_mode is None
        )

    def run(self) -> CompactResult:
        """The unit's result; on any error, the files it had written are deleted first."""
        try:
            self._run()
        except BaseException:
            for path in self.result.written:
                self.ctx.file_io.delete(path)
            raise
        return self.result

    def _run(self) -> None:
        candidate: list[list[list[DataFileMeta]]] = []
        for section in partition_runs(self.unit.files, self.ctx.key_range):
            if len(section) > 1:
                candidate.append(section)
                continue
            for f in section[0]:
                if f.file_size < self.min_file_size:
                    candidate.append([[f]])  # small: rewritten along with its neighbours
                else:
                    self._rewrite(candidate)
                    self._upgrade(f)
        self._rewrite(candidate)

    # -------------------------------------------------------------- decisions
    def _needs_changelog_rewrite(self, f: DataFileMeta) -> bool:
        """Files whose records become visible changes must be read, not just moved; so must
        level-0 files of a deletion-vector table (their keys' older records are marked)."""
        if self.ctx.vectors is not None and f.level == 0:
            # Paimon's LookupMergeTreeCompactRewriter: only a retraction-free file of a
            # deduplicate table without sequence fields is upgraded without a rewrite
            return not (self._positions_only and f.delete_row_count == 0)
        if self._first_row_lookup and f.level == 0:
            return True  # its keys the files left out hold must be dropped
        if self._view and f.level == 0:
            return True  # its keys' state below the output level must be merged in
        if self.changelog_mode == "lookup":
            return f.level == 0
        if self.changelog_mode == "full-compaction":
            return f.level < self.max_level
        return False

    def _upgrade(self, f: DataFileMeta) -> None:
        if self._needs_changelog_rewrite(f):
            self._rewrite_impl([[[f]]])
            return
        if f.level == self.output_level:
            if self.force_all or self.ctx.has_expired(f):
                self._rewrite_impl([[[f]]])
            return
        if self.output_level != self.max_level or f.delete_row_count == 0:
            if self.force_all or self.ctx.has_expired(f):
                self._rewrite_impl([[[f]]])
            else:
                if self.ctx.vectors is not None and f.level == 0:
                    self._mark_upgraded(f)
                self.result.before.append(f)
                self.result.after.append(f.upgrade(self.output_level))
        else:  # deletes must not be upgraded into the max level: rewrite to drop them
            self._rewrite_impl([[[f]]])

    def _rewrite(self, candidate: list[list[list[DataFileMeta]]]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0]:
                self._upgrade(f)
        else:
            self._rewrite_impl(candidate)
        candidate.clear()

    # ---------------------------------------------------------------- rewrite
    def _rewrite_impl(self, sections: list[list[list[DataFileMeta]]]) -> None:
        ctx = self.ctx
        writer = RollingFileWriter(
            ctx.file_io,
            ctx.directory,
            KeyValueLayout(ctx.schema, self.output_level),
            ctx.options.target_file_size,
            FILE_SOURCE_COMPACT,
            external=ctx.external,
            name_token=ctx.name_token,
        )
        changelog = (
            RollingFileWriter(
                ctx.file_io,
                ctx.directory,
                KeyValueLayout(ctx.schema, 0, changelog=True),
                ctx.options.target_file_size,
                FILE_SOURCE_COMPACT,
                external=ctx.external,
                name_token=ctx.name_token,
            )
            if self.changelog_mode
            else None
        )
        try:
            for section in sections:
                for merged in self._section_merged(section, changelog):
                    if self.drop_delete:
                        retracted = is_retraction(merged.column(KIND))
                        if pc.any(retracted).as_py():
                            merged = merged.filter(pc.invert(retracted))
                    if merged.num_rows:
                        writer.write(merged)
            after = writer.close()
            produced = changelog.close() if changelog is not None else []
        except BaseException:
            writer.abort()
            if changelog is not None:
                changelog.abort()
            raise
        self.result.written.extend(writer.written)
        if changelog is not None:
            self.result.written.extend(changelog.written)
        self.result.before.extend(f for section in sections for run in section for f in run)
        self.result.after.extend(after)
        self.result.changelog.extend(produced)

    def _section_merged(
        self, section: list[list[DataFileMeta]], changelog: RollingFileWriter | None
    ) -> Iterator[pa.Table]:
        """The merged records of a section, chunk by chunk in key order (of a first-row table,
        without the keys the files left out hold: :attr:`_first_row_lookup`)."""
        merged = self._section_chunks(section, changelog)
        if not self._first_row_lookup:
            yield from merged
            return
        for chunk in merged:
            yield self._without_outside_keys(chunk)

    def _without_outside_keys(self, merged: pa.Table) -> pa.Table:
        """``merged`` (one row per key, in key order) without the rows whose key a file above
        the output level holds (Paimon looks up levels from ``outputLevel + 1``): there the
        key's first row already is."""
        if merged.num_rows == 0:
            return merged
        keys = self.ctx.reader.merge_keys
        touched = merged.select(keys)
        low, high = _bounds(touched, keys)
        if self._above_lookup is None:
            ctx = self.ctx
            self._above_lookup = LevelLookup(  # the keys alone: whether they are there
                ctx.reader, ctx.directory, self._above, [], self._cache()
            )
        found = self._above_lookup.records(touched, low, high)
        if found.num_rows == 0:
            return merged
        row = "__lakeops_row"
        numbered = touched.append_column(row, pa.array(np.arange(merged.num_rows)))
        kept = numbered.join(found.select(keys), keys=keys, join_type="left anti")
        return merged.take(pa.array(np.sort(kept.column(row).to_numpy())))

    def _section_chunks(
        self, section: list[list[DataFileMeta]], changelog: RollingFileWriter | None
    ) -> Iterator[pa.Table]:
        """The merged records of a section, chunk by chunk in key order; the changelog of each
        chunk goes to ``changelog`` first (which needs the records before they merge)."""
        ctx = self.ctx
        marking = ctx.vectors is not None and bool(self.outside)
        if changelog is None and not marking and not self._view:
            yield from self._section_records(section, ctx.engine)
            return
        keys = ctx.reader.merge_keys
        for records in self._section_records(section, None):
            if marking:
                records = self._with_outside(records)
            if self._view:
                records = top_records(self._with_deeper(records), keys)
            merged = merge_sorted(records, keys, ctx.engine)
            if changelog is not None:
                changes = self._changes(records, merged)
                if changes.num_rows:
                    changelog.write(changes)
            yield merged

    def _with_outside(self, records: pa.Table) -> pa.Table:
        """``records`` (sorted, with levels) plus the live records, in files the compaction
        does not rewrite, of the keys of its level-0 records, whose positions are marked
        deleted (see :mod:`lakeops.compact.vectors`); sorted again when any was found."""
        touched = _level0_keys(records, self.ctx.reader.merge_keys)
        if touched is None:
            return records
        found = self._mark_outside(touched)
        if not found or self._positions_only:
            return records
        older = [hit.drop_columns([POSITION]).cast(records.schema) for _, hit in found]
        return self._sort(pa.concat_tables([*older, records]))

    def _with_deeper(self, records: pa.Table) -> pa.Table:
        """``records`` (sorted, with levels) plus, for the keys of its level-0 records, their
        records in the files below the output level (:attr:`_view`); sorted again when any
        was found."""
        keys = self.ctx.reader.merge_keys
        touched = _level0_keys(records, keys) if self._above else None
        if touched is None:
            return records
        low, high = _bounds(touched, keys)
        if self._deeper_lookup is None:
            ctx = self.ctx
            self._deeper_lookup = LevelLookup(
                ctx.reader, ctx.directory, self._above, ctx.schema.field_names, self._cache()
            )
        found = self._deeper_lookup.records(touched, low, high)
        if found.num_rows == 0:
            return records
        return self._sort(pa.concat_tables([found.cast(records.schema), records]))

    def _mark_outside(self, touched: pa.Table) -> list[tuple[DataFileMeta, pa.Table]]:
        """Mark deleted the live records of ``touched`` (unique merge keys, in key order) in
        the files the compaction does not rewrite; those records, per file (only keys and
        positions when :attr:`_positions_only`)."""
        ctx = self.ctx
        assert ctx.vectors is not None
        if not self.outside or touched.num_rows == 0:
            return []
        keys = ctx.reader.merge_keys
        low, high = _bounds(touched, keys)
        if self._outside_lookup is None:
            values = [] if self._positions_only else ctx.schema.field_names
            self._outside_lookup = OutsideLookup(
                ctx.reader, ctx.directory, self.outside, values, ctx.vectors
            )
        found = self._outside_lookup.records(touched, low, high)
        for f, hit in found:
            ctx.vectors.mark(f.file_name, hit.column(POSITION).to_numpy())
        return found

    def _mark_upgraded(self, f: DataFileMeta) -> None:
        """A level-0 file upgraded without a rewrite (:attr:`_positions_only`, no retractions):
        its keys' older live records outside the compaction are marked deleted all the same.
        A flushed level-0 file holds each key once, in key order."""
        ctx = self.ctx
        keys = ctx.reader.merge_keys
        for batch in ctx.reader.iter_batches(ctx.directory, [f], [], MERGE_BUDGET_ROWS):
            self._mark_outside(batch.select(keys).take(pa.array(group_starts(batch, keys))))

    def _file_batches(
        self, files: list[DataFileMeta], batch_rows: int, level: bool
    ) -> Iterator[pa.Table]:
        """Records of a run's files (with their level where ``level``: the changelog needs
        it), expiry applied."""
        fields = self.ctx.schema.field_names
        vectors = self.ctx.vectors
        for f in files:
            batches = self.ctx.reader.iter_batches(self.ctx.directory, [f], fields, batch_rows)
            if vectors is not None:  # a row its vector deletes was superseded: never merged
                batches = vectors.iter_apply(batches, f)
            for batch in batches:
                if self.ctx.expiry is not None:
                    batch = self.ctx.expiry.keep(batch)
                batch = self.ctx.engine.restate(batch)
                if level:
                    batch = batch.append_column(
                        LEVEL, pa.array(np.full(batch.num_rows, f.level, dtype=np.int32))
                    )
                yield batch

    def _section_records(
        self, runs: list[list[DataFileMeta]], engine: MergeEngine | None
    ) -> Iterator[pa.Table]:
        """Every record of the section, chunk by chunk in key order: sorted for merging
        (``engine`` None, with their levels), or merged by ``engine``."""
        ctx = self.ctx
        batch_rows = max(MIN_BATCH_ROWS, MERGE_BUDGET_ROWS // len(runs))
        yield from merge_runs(
            [self._file_batches(run, batch_rows, engine is None) for run in runs],
            ctx.reader.merge_keys,
            engine,
            ctx.options.sequence_fields,
            ctx.options.sequence_descending,
        )

    # -------------------------------------------------------------- changelog
    def _changes(self, records: pa.Table, merged: pa.Table) -> pa.Table:
        """Changelog of one chunk: how each touched key's merged row changed."""
        ctx = self.ctx
        keys = ctx.reader.merge_keys
        levels = records.column(LEVEL).to_numpy()
        if self.changelog_mode == "full-compaction":
            changed = records.filter(pa.array(levels < self.max_level)).select(keys)
            if changed.num_rows == 0:
                return merged.schema.empty_table()
            changed = changed.group_by(keys).aggregate([])
            before = records.filter(pa.array(levels == self.max_level)).join(
                changed, keys=keys, join_type="left semi"
            )
            before = merge_sorted(self._sort(before), keys, ctx.engine)
            after = merged.join(changed, keys=keys, join_type="left semi")
        else:  # lookup: previous state = higher levels, inside the unit and outside it
            level0 = levels == 0
            if not level0.any():
                return merged.schema.empty_table()
            # every record of the chunk is new (the usual level-0 flush): no join to find them
            only_new = bool(level0.all())
            new = records if only_new else records.filter(pa.array(level0))
            # the records are sorted by key (floats in Java order): the touched keys are the
            # first record of each key group, in key order
            touched = new.select(keys).take(pa.array(group_starts(new, keys)))
            mine = records if only_new else records.join(touched, keys=keys, join_type="left semi")
            low, high = _bounds(touched, keys)
            outside = (
                mine.schema.empty_table()  # _with_outside / _with_deeper put them in the records
                if ctx.vectors is not None or self._view
                else self._lookup().records(touched, low, high).cast(mine.schema)
            )
            older = outside
            if not only_new:
                older = pa.concat_tables([older, mine.filter(pc.greater(mine.column(LEVEL), 0))])
            before = merge_sorted(self._sort(older), keys, ctx.engine)
            if only_new and outside.num_rows == 0:
                after = merged  # the chunk's records are all there is of its keys
            else:
                after = merge_sorted(
                    self._sort(pa.concat_tables([outside, mine])), keys, ctx.engine
                )
        options = ctx.changelog
        assert options is not None
        changes = changelog_records(
            before.drop_columns([LEVEL]),
            after.drop_columns([LEVEL]),
            keys,
            ctx.schema.field_names,
            row_deduplicate=options.row_deduplicate,
            ignore_fields=options.ignore_fields,
            first_row=ctx.options.merge_engine == "first-row",
        )
        return changes

    def _sort(self, table: pa.Table) -> pa.Table:
        return sort_records(
            table,
            self.ctx.reader.merge_keys,
            self.ctx.options.sequence_fields,
            self.ctx.options.sequence_descending,
        )

    def _cache(self) -> RowGroupCache:
        ctx = self.ctx
        if ctx.cache is None:
            assert ctx.changelog is not None
            ctx.cache = RowGroupCache(ctx.changelog.lookup_cache_bytes)
        return ctx.cache

    def _lookup(self) -> LevelLookup:
        ctx = self.ctx
        return LevelLookup(
            ctx.reader, ctx.directory, self.outside, ctx.schema.field_names, self._cache()
        )
