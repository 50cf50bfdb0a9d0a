"""Streaming merge-on-read: merged rows of a snapshot as record batches, with bounded memory.

The scan's splits (one per partition and bucket) are cut into their key-disjoint sections
(:func:`~lakeops.merge.interval_partition.partition_runs`), and each section is one unit of
work, merged as a stream:

* a section of one sorted run (the usual case once compacted) is read batch by batch; a batch
  whose keys are all distinct passes as it is, and the rows of its last key wait for the next
  batch, in case the key continues there;
* a section of several overlapping runs is merged by the streaming k-way merge
  (:func:`~lakeops.merge.stream.merge_runs`), each run read ``batch_rows / runs`` rows at a
  time.

``read_batches(whole_sections=True)`` (what ``Table.read`` uses, which holds every row anyway)
merges a section of several runs of at most :data:`WHOLE_SECTION_ROWS` records in one go instead
— all its records, one sort, one merge — which saves the k-way merge's rounds on small sections;
a larger section is streamed, so its runs are never all in memory at once.

A file with a deletion vector (tables with ``deletion-vectors.enabled``, see
:mod:`lakeops.read.scan`) is read whole, in order, each batch losing its deleted rows before
the merge (no row group is skipped: the vector names rows by position).

Merged rows whose kind is a retraction are dropped, the filter is applied exactly to each
batch, and the batch is cut to the requested columns. Files whose key statistics cannot hold a
kept row were skipped by the scan; inside a Parquet file, row groups whose key statistics
cannot hold one are skipped too (safe for the same reason: every record of a key carries it).

Memory budget. Up to ``parallelism`` sections are read at once
(:func:`~lakeops.read.window.ordered_streams`), in order; each holds at most
:data:`QUEUE_DEPTH` finished batches plus the one it is merging, and a merge holds about
``batch_rows`` records of its runs (plus the rows of one key when a key spans batches). So
about ``parallelism * (QUEUE_DEPTH + 2) * batch_rows`` rows of the read columns are in memory
at any time — independent of the size of the table — plus what a file format decodes at once
(a Parquet page, an ORC stripe, an Avro file's block). A whole read
(``read_batches(whole_sections=True)``) holds every merged row anyway, so its sections do not
wait for the consumer: their queues are unbounded. Batches are yielded in the order a
serial read gives them: splits by (partition, bucket), sections by key, rows by key.

A split carrying postponed records (``postpone.merge-on-read``, :mod:`lakeops.read.postpone`)
is one unit, merged whole: its runs and the records routed to its bucket after them (held in
memory as the scan planned them, so the bound above does not cover them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND, RowKind, key_column
from lakeops.kv.reader import KeyValueReader
from lakeops.merge import group_starts, sort_merge
from lakeops.merge.interval_partition import partition_runs
from lakeops.merge.lookup_view import LEVEL, with_level
from lakeops.merge.ordering import as_table, merged_order
from lakeops.merge.stream import merge_runs
from lakeops.parallel import check_parallelism, workers_for
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.expression import Stats
from lakeops.read.predicate import RowFilter
from lakeops.read.scan import Split
from lakeops.read.window import ordered_streams
from lakeops.store.context import TableContext

__all__ = ["DEFAULT_BATCH_ROWS", "QUEUE_DEPTH", "Section", "SplitStream", "read_batches"]

DEFAULT_BATCH_ROWS = 131_072
"""Rows read from a file at once, and at most per yielded batch (the filter may leave fewer)."""

QUEUE_DEPTH = 2
"""Finished batches a section read ahead of the consumer may hold."""

MIN_RUN_BATCH_ROWS = 4_096
"""The fewest rows a run of a multi-run section reads at once."""

#: the most records a section of several runs may hold to be merged whole by
#: ``read_batches(whole_sections=True)``; a larger one is merged as a stream in rounds of about
#: this many records (at least ``batch_rows``), so a whole read holds the merged rows plus that
#: much per section in flight, never every run of its sections at once, as compaction does
#: (8 runs x 4M rows: 0.26 s and 406 MiB with a budget of 1M records, 0.34 s and 350 MiB with
#: this one; benchmarks/runs_read.md)
WHOLE_SECTION_ROWS = 1 << 18

ROW_GROUP_PRUNING_MIN_ROWS = 65_536
"""Files with fewer rows are read without looking at their row groups' statistics (reading
the footer costs more than it can save)."""


class Section:
    """One unit of a streaming read: key-disjoint sorted runs of one split."""

    def __init__(self, split: Split, runs: list[list[DataFileMeta]]) -> None:
        self.split = split
        self.runs = runs


class SplitStream:
    """Merged rows of the sections of one table's splits, batch by batch."""

    def __init__(
        self,
        ctx: TableContext,
        columns: Sequence[str],
        row_filter: RowFilter | None,
        batch_rows: int,
        *,
        apply_filter: bool = True,
        whole_sections: bool = False,
    ) -> None:
        schema = ctx.schema
        #: merge a section of several runs whole (one sort) instead of streaming it
        self.whole_sections = whole_sections
        self.schema = schema
        self.options = ctx.options
        self.engine = ctx.engine
        self.locations = ctx.locations
        self.files = KeyValueReader(ctx.store.file_io, schema, ctx.store.schema, ctx.store.root)
        self.vectors = DeletionVectorReader(ctx.store.file_io)
        self.key_names = schema.trimmed_primary_keys
        self.merge_keys = [key_column(k) for k in self.key_names]
        #: a key's records deeper than its lowest level above 0 are left out of its merge
        #: (:mod:`lakeops.merge.lookup_view`): the records of several runs carry their level
        self.lookup_view = ctx.lookup_view
        self.row_filter = row_filter
        #: False: the caller applies the exact filter itself (to the columns it asked for)
        self.apply_filter = apply_filter
        self.batch_rows = batch_rows
        self.columns = list(columns)
        #: what the exact filter reads besides the requested columns
        self.needed = list(
            dict.fromkeys([*self.columns, *(row_filter.columns if row_filter else ())])
        )
        value_cols = [c for c in self.needed if c not in self.key_names]
        extra = [
            f
            for f in (*self.options.sequence_fields, *self.engine.merge_columns())
            if f not in value_cols
        ]
        self.value_cols = value_cols + list(dict.fromkeys(extra))
        arrow = schema.arrow_schema()
        self.out_schema = pa.schema(
            [arrow.field(c) for c in (self.columns if apply_filter else self.needed)]
        )
        self._needed_schema = pa.schema([arrow.field(c) for c in self.needed])
        #: the record columns :meth:`_rows` reads
        self._record_columns = [key_column(c) if c in self.key_names else c for c in self.needed]
        #: key columns the filter reads: row groups are pruned by their statistics
        self._filter_keys = (
            [k for k in self.key_names if k in row_filter.columns]
            if row_filter is not None and row_filter.tree is not None
            else []
        )

    def sections(self, splits: Sequence[Split]) -> list[Section]:
        """The units of work of ``splits``, in read order."""
        units = []
        for split in splits:
            sections = partition_runs(split.files, self.files.key_range)
            if split.postponed is None:
                units += [Section(split, runs) for runs in sections]
            else:  # postponed records may share keys with any run: one unit, merged whole
                units.append(Section(split, [run for runs in sections for run in runs]))
        return units

    # ------------------------------------------------------------------ records
    def _units(self, directory: str, f: DataFileMeta) -> list[int] | None:
        """The units of ``f`` that may hold a kept row (None: all of them)."""
        if (
            not self._filter_keys
            or self.row_filter is None
            or f.row_count < ROW_GROUP_PRUNING_MIN_ROWS
        ):
            return None
        ranges = self.files.unit_key_ranges(directory, f, self._filter_keys)
        if not any(ranges):
            return None
        keep = [
            unit
            for unit, bounds in enumerate(ranges)
            if self.row_filter.may_hold(
                {k: Stats(lo, hi, 0, None) for k, (lo, hi) in bounds.items()}
            )
        ]
        return None if len(keep) == len(ranges) else keep

    def _run_batches(
        self,
        split: Split,
        directory: str,
        run: list[DataFileMeta],
        batch_rows: int,
        *,
        level: bool = False,
    ) -> Iterator[pa.Table]:
        """The records of a run's files, batch by batch (with their file's :data:`LEVEL`
        where ``level``)."""
        for f in run:
            vector = split.deletion_of(f)
            if vector is not None:
                batches = self.files.iter_batches(directory, [f], self.value_cols, batch_rows)
                batches = self.vectors.iter_apply(batches, vector, f)
            else:
                units = self._units(directory, f)
                if units is not None and not units:
                    continue
                batches = self.files.iter_batches(
                    directory, [f], self.value_cols, batch_rows, units
                )
            if not level:
                yield from batches
                continue
            for batch in batches:
                yield with_level(batch, f.level)

    def _merge(self, records: pa.Table, distinct: bool) -> pa.Table:
        if distinct:
            return records  # one record per key: nothing to merge
        return sort_merge(
            records,
            self.merge_keys,
            self.engine,
            self.options.sequence_fields,
            self.options.sequence_descending,
        )

    def _one_run(self, split: Split, directory: str, run: list[DataFileMeta]) -> Iterator[pa.Table]:
        """Merged records of one sorted run, chunk by chunk (the last key of a chunk waits)."""
        carry: pa.Table | None = None
        for batch in self._run_batches(split, directory, run, self.batch_rows):
            if batch.num_rows == 0:
                continue
            records = batch if carry is None else pa.concat_tables([carry, batch])
            starts = group_starts(records, self.merge_keys)
            last = int(starts[-1])
            carry = records.slice(last)
            if last:
                yield self._merge(records.slice(0, last), len(starts) - 1 == last)
        if carry is not None and carry.num_rows:
            yield self._merge(carry, carry.num_rows == 1)

    def _whole(self, records: pa.Table) -> pa.Table:
        """Live merged rows of ``records`` (every record of some keys) as :meth:`_rows` gives
        them. Where the engine keeps one record per key as it is, the kept live records are
        found on the key, sequence and kind columns alone and only the columns asked for are
        taken, once (not the sorted records, then the merged ones, then the live ones).
        Records carrying their :data:`LEVEL` lose those a lower level supersedes."""
        levels = None
        if LEVEL in records.column_names:
            levels = records.column(LEVEL).to_numpy()
            records = records.drop_columns([LEVEL])
        options = self.options
        keys, seq, desc = self.merge_keys, options.sequence_fields, options.sequence_descending
        order = merged_order(records, keys, self.engine, seq, desc, levels)
        if order is None:
            return self._rows(sort_merge(records, keys, self.engine, seq, desc, levels))
        kinds = records.column(KIND).take(order)
        order = order.filter(_live(kinds))
        return self._rows(records.select(self._record_columns).take(order), live=True)

    def _section_rows(self, section: Section) -> Iterator[pa.Table]:
        """Live merged rows of one section (see :meth:`_rows`), chunk by chunk."""
        split = section.split
        directory = self.locations.bucket_path(split.partition_bytes, split.bucket)
        level = self.lookup_view
        if split.postponed is not None:
            tables = [
                t
                for run in section.runs
                for t in self._run_batches(split, directory, run, self.batch_rows, level=level)
                if t.num_rows
            ]
            names = self.files.record_schema(self.value_cols).names
            postponed = split.postponed.select(names)
            tables.append(with_level(postponed, 0) if level else postponed)
            yield self._whole(as_table(tables))
            return
        if len(section.runs) == 1:
            for merged in self._one_run(split, directory, section.runs[0]):
                if merged.num_rows:
                    yield self._rows(merged)
            return
        if self.whole_sections and _rows_of(section) <= WHOLE_SECTION_ROWS:
            tables = [
                t
                for run in section.runs
                for t in self._run_batches(split, directory, run, self.batch_rows, level=level)
                if t.num_rows
            ]
            if tables:
                yield self._whole(as_table(tables))
            return
        # a whole read (which holds every row anyway) streams a large section in rounds of
        # about WHOLE_SECTION_ROWS records, a batch stream in rounds of batch_rows; each
        # round's records are merged as a whole section's are (:meth:`_whole`)
        budget = self.batch_rows
        if self.whole_sections:
            budget = max(budget, WHOLE_SECTION_ROWS)
        per_run = max(min(MIN_RUN_BATCH_ROWS, budget), budget // len(section.runs))
        yield from merge_runs(
            [
                self._run_batches(split, directory, run, per_run, level=level)
                for run in section.runs
            ],
            self.merge_keys,
            self.engine,
            self.options.sequence_fields,
            self.options.sequence_descending,
            finish=self._whole,
        )

    # ------------------------------------------------------------------- output
    def _rows(self, merged: pa.Table, *, live: bool = False) -> pa.Table:
        """Live rows of merged records as the requested columns, filter applied (``live``: the
        records are live already)."""
        live_rows = merged if live else merged.filter(_live(merged.column(KIND)))
        out = []
        for field in self._needed_schema:
            c = field.name
            col = live_rows.column(key_column(c) if c in self.key_names else c)
            out.append(col if col.type == field.type else col.cast(field.type))
        rows = pa.Table.from_arrays(out, schema=self._needed_schema)
        if self.row_filter is not None and self.apply_filter:
            rows = rows.filter(self.row_filter.expression)
            return rows.select(self.columns) if self.needed != self.columns else rows
        return rows

    def batches(self, section: Section) -> Iterator[pa.RecordBatch]:
        """Merged, live, filtered rows of one section as record batches of the output schema."""
        for rows in self._section_rows(section):
            if rows.num_rows:
                yield from rows.cast(self.out_schema).to_batches(max_chunksize=self.batch_rows)


def _live(kinds: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Which records are live rows (``+I`` or ``+U``; the retractions are not)."""
    return pc.or_(pc.equal(kinds, RowKind.INSERT), pc.equal(kinds, RowKind.UPDATE_AFTER))


def _rows_of(section: Section) -> int:
    """The records a section's files hold (their manifest row counts)."""
    return sum(f.row_count for run in section.runs for f in run)


def read_batches(
    ctx: TableContext,
    splits: Sequence[Split],
    columns: Sequence[str],
    row_filter: RowFilter | None,
    *,
    batch_rows: int | None = None,
    parallelism: int | None = None,
    apply_filter: bool = True,
    whole_sections: bool = False,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The output schema and the merged rows of ``splits`` (see the module docstring for the
    order and the memory budget): ``columns`` of the rows ``row_filter`` keeps.

    ``apply_filter=False`` leaves the exact filter to the caller (who filters a whole table
    once instead of every batch): the batches then hold every merged row, with the columns
    the filter reads after ``columns``. ``whole_sections=True`` merges a section of several
    runs in one go (see the module docstring), and lets every section run ahead of the one
    being consumed without a bound: for a caller that keeps every row anyway."""
    check_parallelism(parallelism)
    rows = DEFAULT_BATCH_ROWS if batch_rows is None else batch_rows
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ConfigurationError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    stream = SplitStream(
        ctx, columns, row_filter, rows, apply_filter=apply_filter, whole_sections=whole_sections
    )
    sections = stream.sections(splits)
    window = workers_for(parallelism, len(sections))
    # a caller that keeps every row gains nothing from holding the sections ahead of the one
    # it consumes to a few batches: they only wait for it (8 runs x 8M rows: 0.6 s, not 0.9)
    depth = 0 if whole_sections else QUEUE_DEPTH  # 0: unbounded
    return stream.out_schema, ordered_streams(sections, stream.batches, window, depth)
