"""Append data files: written as Paimon's ``RowDataRollingFileWriter`` writes them, read by
field id.

An append table's data file holds the table's fields only (no ``_KEY_``, sequence or row-kind
columns), in the format and codec the table's options give level 0 (Parquet, ORC or Avro, as
for primary-key tables: :mod:`lakeops.kv.formats`). Its ``DataFileMeta`` is Paimon's
``DataFileMeta.forAppend``: empty min/max key and key statistics, the sequence numbers of its
rows (one per row, consecutive), level 0, and the file source (``APPEND`` for new data,
``COMPACT`` for compaction output), and value statistics of every field
(``_VALUE_STATS_COLS`` null: all of them) as Paimon 0.9's writer keeps them for the file's
format and the table's stats modes (:mod:`lakeops.kv.stats`), so filters prune the file.

Files written by another engine are read through the schema they were written with, mapped to
the current schema by field id (:mod:`lakeops.kv.evolution`): renamed columns take their new
name, columns the file lacks read as nulls, widened types are cast.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from lakeops.errors import CorruptDataFileError, MissingDataFileError
from lakeops.format.data_file import EMPTY_ROW, FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.io.data_formats import DataFormat, reader_for
from lakeops.io.file_io import FileIO
from lakeops.kv import avro_layout, orc_layout
from lakeops.kv.evolution import SchemaEvolution, SchemaLookup, read_cast
from lakeops.kv.formats import settings_for
from lakeops.kv.parquet_layout import writer_options
from lakeops.kv.stats import StatsCollector, stats_modes
from lakeops.kv.writer import _local_millis, open_format_writer
from lakeops.options.registry import check_data_file, check_readable
from lakeops.store.locations import ExternalPaths, FileLocations

__all__ = ["AppendFileReader", "RollingAppendWriter", "file_schema"]

_ROWS_PER_WRITE = 65_536


def file_schema(schema: TableSchema) -> pa.Schema:
    """The columns of an append data file: the table's fields, in order."""
    return schema.arrow_schema()


class RollingAppendWriter:
    """Writes rows of one (partition, bucket) as rolling level-0 files, numbering the rows
    from ``first_sequence`` (Paimon's ``LongCounter``), rolling once a file reaches
    ``target_file_size`` on disk."""

    def __init__(
        self,
        file_io: FileIO,
        directory: str,
        schema: TableSchema,
        target_file_size: int,
        first_sequence: int,
        file_source: int = FILE_SOURCE_APPEND,
        external: ExternalPaths | None = None,
        name_token: str | None = None,
    ) -> None:
        self.file_io = file_io
        #: carried in every file name (:meth:`~lakeops.store.locations.FileLocations.new_name`)
        self.name_token = name_token
        self.directory = directory
        self.schema = schema
        self.target_file_size = target_file_size
        self.next_sequence = first_sequence
        self.file_source = file_source
        self.external = external
        self.locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
        self.settings = settings_for(schema.options, 0)
        self.arrow_schema = file_schema(schema)
        self.field_types = [f.type for f in schema.fields]
        self.stats_modes = stats_modes(schema.options, schema.field_names)
        self.parquet_options = writer_options(schema) if self.settings.format == "parquet" else {}
        if self.settings.format == "avro":
            avro_layout.check_writable(schema)
        #: the storage path of every file opened (for an abort)
        self.written: list[str] = []
        self.files: list[DataFileMeta] = []
        self._open: tuple[str, str, str | None, Any, Any] | None = None
        self._rows = 0
        self._first_seq = 0
        self._stats = StatsCollector(
            self.field_types, self.stats_modes, self.settings.format, schema.field_names
        )

    def write(self, rows: pa.Table) -> None:
        """Append ``rows`` (the table's fields, in schema order) after everything so far."""
        rows = rows.select(self.arrow_schema.names)
        for start in range(0, rows.num_rows, _ROWS_PER_WRITE):
            chunk = rows.slice(start, _ROWS_PER_WRITE)
            if chunk.num_rows == 0:
                continue
            chunk = pa.Table.from_arrays(list(chunk.columns), schema=self.arrow_schema)
            if self.settings.format == "orc":
                orc_layout.check_values(chunk)  # before the file is opened
                chunk = orc_layout.unsliced(chunk)
            *_, writer, sink = self._open or self._start()
            writer.write(chunk)
            self._stats.update(chunk.columns)
            self._rows += chunk.num_rows
            self.next_sequence += chunk.num_rows
            if sink.tell() >= self.target_file_size:
                self._finish()

    def _start(self) -> tuple[str, str, str | None, Any, Any]:
        name = self.locations.new_name(
            changelog=False, extension=self.settings.extension, token=self.name_token
        )
        new = self.locations.new_file(self.directory, name, self.external)
        self.file_io.mkdirs(new.path.rsplit("/", 1)[0])
        self.written.append(new.path)
        sink = self.file_io.arrow_fs.open_output_stream(new.path)
        writer = open_format_writer(
            sink,
            self.settings,
            self.schema,
            self.arrow_schema,
            self.target_file_size,
            **self.parquet_options,
        )
        self._open = (new.path, name, new.external_path, writer, sink)
        self._rows = 0
        self._first_seq = self.next_sequence
        self._stats = StatsCollector(
            self.field_types, self.stats_modes, self.settings.format, self.schema.field_names
        )
        return self._open

    def _finish(self) -> None:
        if self._open is None:
            return
        path, name, external, writer, sink = self._open
        self._open = None
        writer.close()
        sink.close()
        footer = writer.writer.metadata if self.settings.format == "parquet" else None
        self.files.append(
            DataFileMeta(
                file_name=name,
                file_size=self.file_io.size(path),
                row_count=self._rows,
                min_key=EMPTY_ROW,
                max_key=EMPTY_ROW,
                key_stats=SimpleStats(),
                value_stats=self._stats.result(footer),
                min_sequence_number=self._first_seq,
                max_sequence_number=self.next_sequence - 1,
                schema_id=self.schema.id,
                level=0,
                creation_time_millis=_local_millis(),
                delete_row_count=0,
                file_source=self.file_source,
                value_stats_cols=None,
                external_path=external,
            )
        )

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metadata of every file written."""
        self._finish()
        return self.files

    def abort(self) -> None:
        """Delete every file this writer wrote."""
        if self._open is not None:
            self._open[3].close()
            self._open[4].close()
            self._open = None
        for path in self.written:
            self.file_io.delete(path)
        self.written.clear()
        self.files.clear()


class AppendFileReader:
    """Reads append data files of one table as columns of its current schema."""

    def __init__(
        self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, table_root: str
    ) -> None:
        # options whose reads would be wrong refuse here; row tracking and data evolution are
        # read by lakeops.read.row_tracking
        check_readable(
            {
                k: v
                for k, v in schema.options.items()
                if k not in ("row-tracking.enabled", "data-evolution.enabled")
            }
        )
        self.file_io = file_io
        self.schema = schema
        self.table_root = table_root.rstrip("/")
        self.locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
        self.evolution = SchemaEvolution(schema, schemas)
        self._types: dict[int, dict[str, pa.DataType]] = {}

    def _format(self, f: DataFileMeta) -> DataFormat:
        types = self._types.get(f.schema_id)
        if types is None:
            written = self.evolution.mapping(f.schema_id).file_schema
            types = {fld.name: fld.type.to_arrow() for fld in written.fields}
            self._types[f.schema_id] = types
        return reader_for(f.file_name, self.file_io.arrow_fs, types)

    def _name(self, path: str) -> str:
        prefix = self.table_root + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def output_schema(self, columns: Sequence[str]) -> pa.Schema:
        """The Arrow schema of rows with ``columns``."""
        return pa.schema([self.schema.arrow_schema().field(c) for c in columns])

    def _plan(
        self, f: DataFileMeta, columns: Sequence[str]
    ) -> tuple[list[str], dict[str, str], dict[str, tuple[DataType, DataType]]]:
        mapping = self.evolution.mapping(f.schema_id)
        sources: dict[str, str] = {}
        casts: dict[str, tuple[DataType, DataType]] = {}
        for c in columns:
            src = mapping.sources.get(c)
            if src is None:
                continue  # the file's schema lacks this field id: nulls
            sources[c] = src[0]
            current = self.schema.field(c).type
            if src[1].to_arrow() != current.to_arrow():
                casts[c] = (src[1], current)
        return list(dict.fromkeys(sources.values())), sources, casts

    def _normalize(
        self,
        table: pa.Table,
        columns: Sequence[str],
        sources: dict[str, str],
        casts: dict[str, tuple[DataType, DataType]],
    ) -> pa.Table:
        schema = self.output_schema(columns)
        out = []
        for target in schema:
            src = sources.get(target.name)
            if src is None:
                out.append(pa.nulls(table.num_rows, target.type))
                continue
            col = table.column(src)
            cast = casts.get(target.name)
            if cast is not None:
                col = read_cast(col, *cast)
            if col.type != target.type:
                col = col.cast(target.type)
            out.append(col)
        return pa.Table.from_arrays(out, schema=schema)

    def _path(self, directory: str, f: DataFileMeta) -> str:
        check_data_file(f.file_name)
        path = self.locations.data_file(directory, f.file_name, f.external_path)
        if not self.file_io.exists(path):
            raise MissingDataFileError(
                f"data file {self._name(path)} is missing: a snapshot references it. Run "
                "`lakeops check` to list every missing file",
                path=self._name(path),
            )
        return path

    def _check_rows(self, path: str, f: DataFileMeta, rows: int) -> None:
        if rows != f.row_count:
            raise CorruptDataFileError(
                f"data file {self._name(path)} holds {rows} rows, but its manifest entry "
                f"records {f.row_count}: it was truncated or replaced, and lakeops does not "
                "read it",
                path=self._name(path),
            )

    def read(self, directory: str, f: DataFileMeta, columns: Sequence[str]) -> pa.Table:
        """Every row of one file, as ``columns`` of the current schema."""
        path = self._path(directory, f)
        read_cols, sources, casts = self._plan(f, columns)
        fmt = self._format(f)
        table = fmt.read(path, read_cols) if read_cols else None
        rows = table.num_rows if table is not None else (fmt.row_count(path) or f.row_count)
        self._check_rows(path, f, rows)
        if table is None:
            return pa.Table.from_arrays(
                [pa.nulls(rows, t.type) for t in self.output_schema(columns)],
                schema=self.output_schema(columns),
            )
        return self._normalize(table, columns, sources, casts)

    def read_physical(
        self, directory: str, f: DataFileMeta, names: Sequence[str]
    ) -> dict[str, pa.ChunkedArray]:
        """The columns of ``names`` the file physically holds (system columns such as
        ``_ROW_ID`` that another engine wrote into it), as stored."""
        path = self._path(directory, f)
        fmt = self._format(f)
        present = [n for n in names if n in fmt.names(path)]
        if not present:
            return {}
        table = fmt.read(path, present)
        self._check_rows(path, f, table.num_rows)
        return {n: table.column(n) for n in present}

    def iter_batches(
        self, directory: str, f: DataFileMeta, columns: Sequence[str], batch_rows: int
    ) -> Iterator[pa.Table]:
        """The rows of one file in batches of at most ``batch_rows``."""
        read_cols, sources, casts = self._plan(f, columns)
        if not read_cols:
            yield self.read(directory, f, columns)
            return
        path = self._path(directory, f)
        rows = 0
        for batch in self._format(f).iter_batches(path, read_cols, batch_rows):
            rows += batch.num_rows
            yield self._normalize(batch, columns, sources, casts)
        self._check_rows(path, f, rows)
