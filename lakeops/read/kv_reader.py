"""Reading key-value data files into a uniform record layout.

Every file is read as ``_KEY_<k>…, _SEQUENCE_NUMBER, _VALUE_KIND`` plus the requested value
columns, with one Arrow schema for all files of a table, so records of different files (and
writers: lakeops, pypaimon, Java Paimon) concatenate and merge directly. Thin-mode files (no
``_KEY_`` columns) get them from the key fields; columns a file lacks read as nulls.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakeops.io.file_io import FileIO, join
from lakeops.option_registry import check_data_file, check_readable, resolve_external_path
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.kv import KIND, SEQ, key_column
from lakeops.spec.schema import TableSchema

__all__ = ["KeyValueReader"]


class KeyValueReader:
    """Reads the data files of one table."""

    def __init__(self, file_io: FileIO, schema: TableSchema) -> None:
        check_readable(schema.options)
        self.file_io = file_io
        self.schema = schema
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        self.merge_keys = [key_column(k) for k in self.key_names]

    def path(self, directory: str, f: DataFileMeta) -> str:
        """Where ``f`` is stored; refuses files lakeops cannot read (ORC, Avro, external paths
        on another file system) with :class:`~lakeops.errors.UnsupportedFeatureError`."""
        check_data_file(f.file_name)
        if f.external_path:
            return resolve_external_path(
                f.external_path, self.file_io.protocol, self.file_io.is_local
            )
        return join(directory, f.file_name)

    def record_schema(self, value_cols: Sequence[str]) -> pa.Schema:
        """The uniform schema of records with these value columns."""
        fields = [
            pa.field(mk, t.to_arrow(), False)
            for mk, t in zip(self.merge_keys, self.key_types, strict=True)
        ]
        fields += [pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
        fields += [pa.field(c, self.schema.field(c).type.to_arrow(), True) for c in value_cols]
        return pa.schema(fields)

    def _plan(self, path: str, value_cols: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
        available = set(pq.read_schema(path, filesystem=self.file_io.arrow_fs).names)
        wanted = [*self.merge_keys, SEQ, KIND, *value_cols]
        thin = [
            k for k, mk in zip(self.key_names, self.merge_keys, strict=True) if mk not in available
        ]
        read_cols = [c for c in wanted if c in available] + [k for k in thin if k not in wanted]
        return read_cols, thin, [c for c in value_cols if c not in available]

    def _normalize(
        self, table: pa.Table, thin: list[str], missing: list[str], value_cols: Sequence[str]
    ) -> pa.Table:
        for k in thin:
            table = table.append_column(key_column(k), table.column(k))
        for c in missing:
            table = table.append_column(
                c, pa.nulls(table.num_rows, self.schema.field(c).type.to_arrow())
            )
        schema = self.record_schema(value_cols)
        return table.select(schema.names).cast(schema)

    def read(self, directory: str, f: DataFileMeta, value_cols: Sequence[str]) -> pa.Table:
        """All records of one file."""
        path = self.path(directory, f)
        read_cols, thin, missing = self._plan(path, value_cols)
        table = pq.read_table(path, columns=read_cols, filesystem=self.file_io.arrow_fs)
        return self._normalize(table, thin, missing, value_cols)

    def row_group_key_ranges(
        self,
        directory: str,
        f: DataFileMeta,
    ) -> list[tuple[Any, Any] | None]:
        """Per row group, (min, max) of the first key column from the Parquet footer (None
        where the statistics are missing)."""
        path = self.path(directory, f)
        meta = pq.ParquetFile(path, filesystem=self.file_io.arrow_fs).metadata
        names = meta.schema.names
        first = self.merge_keys[0] if self.merge_keys[0] in names else self.key_names[0]
        idx = names.index(first)
        out: list[tuple[Any, Any] | None] = []
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(idx).statistics
            out.append((stats.min, stats.max) if stats is not None and stats.has_min_max else None)
        return out

    def read_row_group(
        self, directory: str, f: DataFileMeta, row_group: int, value_cols: Sequence[str]
    ) -> pa.Table:
        """The records of one row group of a file."""
        path = self.path(directory, f)
        read_cols, thin, missing = self._plan(path, value_cols)
        with self.file_io.arrow_fs.open_input_file(path) as source:
            table = pq.ParquetFile(source, pre_buffer=False).read_row_group(
                row_group, columns=read_cols
            )
        return self._normalize(table, thin, missing, value_cols)

    def iter_batches(
        self,
        directory: str,
        files: Sequence[DataFileMeta],
        value_cols: Sequence[str],
        batch_rows: int,
    ) -> Iterator[pa.Table]:
        """Records of files read one after another, in batches of at most ``batch_rows``."""
        for f in files:
            path = self.path(directory, f)
            read_cols, thin, missing = self._plan(path, value_cols)
            with self.file_io.arrow_fs.open_input_file(path) as source:
                # no pre-buffering: it reads far ahead of the batch and defeats bounded memory
                pf = pq.ParquetFile(source, pre_buffer=False)
                for batch in pf.iter_batches(batch_size=batch_rows, columns=read_cols):
                    yield self._normalize(pa.Table.from_batches([batch]), thin, missing, value_cols)
