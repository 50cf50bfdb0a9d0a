"""Merge-on-read of one split: sections of overlapping files are merged with the engine.

Within a (partition, bucket), files are split into key-disjoint sections
(:mod:`lakeops.compact.interval_partition`). A section of one file with unique keys is read as
it is; otherwise its files are concatenated, sorted by (key, sequence order) and merged with the
same merge engine the writer uses. Keys whose merged kind is a retraction are dropped. Only the
columns needed for the merge and the requested output are read from Parquet.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.compact.interval_partition import partition_sections
from lakeops.io.file_io import FileIO, join
from lakeops.merge import MergeEngine, group_starts, merge_sorted, sort_records
from lakeops.merge.ordering import as_table
from lakeops.options import TableOptions
from lakeops.read.scan import Split
from lakeops.spec import binary_row, paths
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.kv import KIND, SEQ, RowKind, key_column
from lakeops.spec.schema import TableSchema

__all__ = ["SplitReader"]


class SplitReader:
    """Reads merged rows of splits of one table."""

    def __init__(
        self,
        file_io: FileIO,
        table_root: str,
        schema: TableSchema,
        options: TableOptions,
        engine: MergeEngine,
    ) -> None:
        self.file_io = file_io
        self.table_root = table_root
        self.schema = schema
        self.options = options
        self.engine = engine
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        self.merge_keys = [key_column(k) for k in self.key_names]

    def read(self, split: Split, columns: Sequence[str]) -> pa.Table:
        """Merged, live rows of ``split`` with the given table columns (partition columns are
        filled from the split, key columns from ``_KEY_*``)."""
        pdir = paths.partition_dir(
            self.schema.partition_keys, split.partition, self.options.partition_default_name
        )
        directory = join(self.table_root, paths.bucket_dir(pdir, split.bucket))
        value_cols = [c for c in columns if c not in self.key_names]
        extra = [
            f
            for f in (*self.options.sequence_fields, *self.engine.merge_columns())
            if f not in value_cols
        ]
        extra = list(dict.fromkeys(extra))
        sections = partition_sections(split.files, self._key_range)
        parts = [self._read_section(directory, section, value_cols + extra) for section in sections]
        merged = as_table(parts) if parts else None
        if merged is None or merged.num_rows == 0:
            return self.schema.arrow_schema().empty_table().select(list(columns))
        kinds = merged.column(KIND)
        live = merged.filter(
            pc.or_(pc.equal(kinds, RowKind.INSERT), pc.equal(kinds, RowKind.UPDATE_AFTER))
        )
        out = []
        for c in columns:
            target = self.schema.field(c).type.to_arrow()
            col = live.column(key_column(c)) if c in self.key_names else live.column(c)
            out.append(col if col.type == target else col.cast(target))
        return pa.table(out, names=list(columns))

    def _key_range(self, f: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        return (
            binary_row.deserialize(f.min_key, self.key_types),
            binary_row.deserialize(f.max_key, self.key_types),
        )

    def _read_file(self, directory: str, f: DataFileMeta, value_cols: list[str]) -> pa.Table:
        path = f.external_path or join(directory, f.file_name)
        available = set(pq.read_schema(path, filesystem=self.file_io.arrow_fs).names)
        wanted = [*list(self.merge_keys), SEQ, KIND, *value_cols]
        thin = [
            k for k, mk in zip(self.key_names, self.merge_keys, strict=True) if mk not in available
        ]
        read_cols = [c for c in wanted if c in available] + [k for k in thin if k not in wanted]
        missing = [c for c in value_cols if c not in available]
        table = pq.read_table(path, columns=read_cols, filesystem=self.file_io.arrow_fs)
        for k in thin:  # thin-mode files keep keys only in the value columns
            table = table.append_column(key_column(k), table.column(k))
        for c in missing:  # columns added after the file was written read as nulls
            table = table.append_column(
                c, pa.nulls(table.num_rows, self.schema.field(c).type.to_arrow())
            )
        return table.select(wanted).cast(self._section_schema(value_cols))

    def _section_schema(self, value_cols: list[str]) -> pa.Schema:
        """One schema for the records of all files, so they concatenate."""
        fields = [
            pa.field(mk, t.to_arrow(), False)
            for mk, t in zip(self.merge_keys, self.key_types, strict=True)
        ]
        fields += [pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
        for c in value_cols:
            t = self.schema.field(c).type
            fields.append(pa.field(c, t.to_arrow(), True))
        return pa.schema(fields)

    def _read_section(
        self, directory: str, files: list[DataFileMeta], value_cols: list[str]
    ) -> pa.Table:
        tables = [self._read_file(directory, f, value_cols) for f in files]
        records = as_table(tables) if len(tables) > 1 else tables[0]
        if len(files) == 1:
            starts = group_starts(records, self.merge_keys)
            if len(starts) == records.num_rows:
                return records  # one sorted file with unique keys: nothing to merge
        records = sort_records(
            records, self.merge_keys, self.options.sequence_fields, self.options.sequence_descending
        )
        return merge_sorted(records, self.merge_keys, self.engine)
