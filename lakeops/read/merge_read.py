"""Merge-on-read of one split: sections of overlapping files are merged with the engine.

Within a (partition, bucket), files are split into key-disjoint sections
(:mod:`lakeops.merge.interval_partition`). A section of one file with unique keys is read as
it is; otherwise its files are concatenated, sorted by (key, sequence order) and merged with the
same merge engine the writer uses. Keys whose merged kind is a retraction are dropped. Only the
columns needed for the merge and the requested output are read from Parquet.

A file with a deletion vector (a split of a table with ``deletion-vectors.enabled``) loses its
deleted rows as it is read, before anything is merged, as Paimon 0.9's ``MergeFileSplitRead``
applies the split's vectors in its file readers. Paimon reads a bucket whose files hold no
retraction (``deleteRowCount = 0``) without merging (a "raw convertible" split); merging gives
the same rows there, since the vectors leave each key at most once in levels >= 1 and a key's
lone record merges to itself.

A split carrying postponed records (``postpone.merge-on-read``, :mod:`lakeops.read.postpone`)
is merged as one section: its files and, after them, the records routed to its bucket.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND, RowKind, key_column
from lakeops.kv.reader import KeyValueReader
from lakeops.merge import group_starts, sort_merge
from lakeops.merge.interval_partition import partition_sections
from lakeops.merge.ordering import as_table
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.scan import Split
from lakeops.store.context import TableContext

__all__ = ["SplitReader"]


class SplitReader:
    """Reads merged rows of splits of one table."""

    def __init__(self, ctx: TableContext) -> None:
        store, schema = ctx.store, ctx.schema
        self.file_io = store.file_io
        self.table_root = store.root
        self.schema = schema
        self.options = ctx.options
        self.engine = ctx.engine
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        self.merge_keys = [key_column(k) for k in self.key_names]
        #: a key's records deeper than its lowest level above 0 are left out of its merge
        #: (:mod:`lakeops.merge.lookup_view`)
        self.lookup_view = ctx.lookup_view
        self.files = KeyValueReader(store.file_io, schema, store.schema, store.root)
        self.locations = ctx.locations
        self.vectors = DeletionVectorReader(store.file_io)

    def read(self, split: Split, columns: Sequence[str]) -> pa.Table:
        """Merged, live rows of ``split`` with the given table columns (partition columns are
        filled from the split, key columns from ``_KEY_*``)."""
        merged = self._merged_records(split, columns)
        if merged is None:
            return self.schema.arrow_schema().empty_table().select(list(columns))
        kinds = merged.column(KIND)
        live = merged.filter(
            pc.or_(pc.equal(kinds, RowKind.INSERT), pc.equal(kinds, RowKind.UPDATE_AFTER))
        )
        return self._output(live, columns)

    def read_with_kinds(self, split: Split, columns: Sequence[str]) -> tuple[pa.Array, pa.Table]:
        """The merged records of ``split`` with retractions kept (Paimon's ``forceKeepDelete``
        read, what its ``audit_log`` table shows): their row kinds (the int8 codes of
        :class:`~lakeops.format.kv.RowKind`) and their ``columns``."""
        merged = self._merged_records(split, columns)
        if merged is None:
            empty = self.schema.arrow_schema().empty_table().select(list(columns))
            return pa.array([], pa.int8()), empty
        return merged.column(KIND).combine_chunks(), self._output(merged, columns)

    def _output(self, records: pa.Table, columns: Sequence[str]) -> pa.Table:
        out = []
        for c in columns:
            target = self.schema.field(c).type.to_arrow()
            col = records.column(key_column(c)) if c in self.key_names else records.column(c)
            out.append(col if col.type == target else col.cast(target))
        return pa.table(out, names=list(columns))

    def _merged_records(self, split: Split, columns: Sequence[str]) -> pa.Table | None:
        """The merged key-value records of ``split`` (None when it holds none)."""
        directory = self.locations.bucket_path(split.partition_bytes, split.bucket)
        value_cols = [c for c in columns if c not in self.key_names]
        extra = [
            f
            for f in (*self.options.sequence_fields, *self.engine.merge_columns())
            if f not in value_cols
        ]
        extra = list(dict.fromkeys(extra))
        # postponed records may share keys with any file: then the whole bucket is one section
        sections = (
            [list(split.files)]
            if split.postponed is not None
            else partition_sections(split.files, self._key_range)
        )
        parts = [
            self._read_section(split, directory, section, value_cols + extra)
            for section in sections
        ]
        merged = as_table(parts) if parts else None
        return None if merged is None or merged.num_rows == 0 else merged

    def _key_range(self, f: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        return self.files.key_range(f)

    def _read_section(
        self, split: Split, directory: str, files: list[DataFileMeta], value_cols: list[str]
    ) -> pa.Table:
        tables = [
            self.vectors.apply(self.files.read(directory, f, value_cols), split.deletion_of(f), f)
            for f in files
        ]
        if split.postponed is not None:
            tables.append(split.postponed.select(self.files.record_schema(value_cols).names))
        levels = None  # each record's level, where stale ones must be left out
        if self.lookup_view and len(tables) > 1:
            of_tables = [f.level for f in files] + [0] * (len(tables) - len(files))
            levels = np.repeat(np.array(of_tables, np.int32), [t.num_rows for t in tables])
        records = as_table(tables) if len(tables) > 1 else tables[0]
        if len(files) == 1 and split.postponed is None:
            starts = group_starts(records, self.merge_keys)
            if len(starts) == records.num_rows:
                return records  # one sorted file with unique keys: nothing to merge
        return sort_merge(
            records,
            self.merge_keys,
            self.engine,
            self.options.sequence_fields,
            self.options.sequence_descending,
            levels,
        )
