"""Writing merged, key-sorted records as Paimon key-value data files, with their metadata.

Each file is Parquet, ORC or Avro as the table asks for the level it is written at
(:mod:`lakeops.kv.formats`).

:class:`RollingKeyValueWriter` streams batches into files of one (partition, bucket) and level,
rolling to a new file once the current one reaches ``target-file-size`` on disk; it tracks each
file's key range, key statistics, sequence range and delete count for its ``DataFileMeta``.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.format import binary_row
from lakeops.format.data_file import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.format.kv import KIND, SEQ, RowKind, data_file_schema
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv import avro_layout, orc_layout
from lakeops.kv.formats import FileSettings, settings_for, writer_kwargs
from lakeops.kv.parquet_layout import writer_options
from lakeops.kv.stats import StatsCollector
from lakeops.store.locations import ExternalPaths, FileLocations

__all__ = ["RollingKeyValueWriter"]

_ROWS_PER_WRITE = 65_536


class _OpenFile:
    """State of the file being written."""

    def __init__(
        self,
        path: str,
        name: str,
        writer: Any,
        sink: Any,
        external_path: str | None = None,
    ) -> None:
        self.path, self.name, self.writer, self.sink = path, name, writer, sink
        self.external_path = external_path
        self.rows = 0
        self.first_key: list[Any] | None = None
        self.last_key: list[Any] = []
        self.key_stats: StatsCollector | None = None
        self.seq_min: int | None = None
        self.seq_max: int | None = None
        self.deletes = 0


class RollingKeyValueWriter:
    """Streams key-sorted records (table fields + ``_SEQUENCE_NUMBER`` + ``_VALUE_KIND``) into
    rolling files of one bucket directory at one level."""

    def __init__(
        self,
        file_io: FileIO,
        directory: str,
        schema: TableSchema,
        target_file_size: int,
        level: int,
        file_source: int = FILE_SOURCE_APPEND,
        prefix: str = "data",
        external: ExternalPaths | None = None,
        name_token: str | None = None,
    ) -> None:
        self.file_io = file_io
        self.directory = directory
        #: names and places files as the table's options say (prefixes, external paths)
        self.locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
        self.external = external
        #: the job token new file names carry (:meth:`FileLocations.new_name`); None: random
        self.name_token = name_token
        self.schema = schema
        self.target_file_size = target_file_size
        self.level = level
        self.file_source = file_source
        self.prefix = prefix
        self.file_schema = data_file_schema(schema)
        # the format and codec Paimon gives this level (refuses a format lakeops cannot write)
        self.settings: FileSettings = settings_for(
            schema.options, level, changelog=prefix == "changelog"
        )
        # Paimon's physical types; refuses (before any file is opened) what cannot match them
        self.parquet_options = writer_options(schema) if self.settings.format == "parquet" else {}
        if self.settings.format == "avro":
            avro_layout.check_writable(schema)
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        # keys and sequence numbers are unique and sorted: dictionaries only cost time there
        self.dictionary_columns = [
            f.name for f in schema.fields if f.name not in schema.trimmed_primary_keys
        ] + [KIND]
        self.written: list[str] = []
        self.files: list[DataFileMeta] = []
        self._open: _OpenFile | None = None

    def write(self, records: pa.Table) -> None:
        """Append records that sort after everything written so far."""
        for start in range(0, records.num_rows, _ROWS_PER_WRITE):
            self._write_slice(records.slice(start, _ROWS_PER_WRITE))

    def _write_slice(self, records: pa.Table) -> None:
        if records.num_rows == 0:
            return
        key_cols = [records.column(k) for k in self.key_names]
        columns = [*key_cols, records.column(SEQ), records.column(KIND)]
        columns += [records.column(field.name) for field in self.schema.fields]
        chunk = pa.Table.from_arrays(columns, schema=self.file_schema)
        if self.settings.format == "orc":
            orc_layout.check_values(chunk)  # (before the file is opened)
            chunk = orc_layout.unsliced(chunk)
        f = self._open or self._start()
        f.writer.write(chunk)
        n = records.num_rows
        if f.first_key is None:
            f.first_key = [c[0].as_py() for c in key_cols]
        f.last_key = [c[n - 1].as_py() for c in key_cols]
        if f.key_stats is None:
            f.key_stats = StatsCollector(self.key_types)
        f.key_stats.update(key_cols)
        seq = pc.min_max(records.column(SEQ))
        f.seq_min = seq["min"].as_py() if f.seq_min is None else min(f.seq_min, seq["min"].as_py())
        f.seq_max = seq["max"].as_py() if f.seq_max is None else max(f.seq_max, seq["max"].as_py())
        kinds = records.column(KIND)
        f.deletes += int(
            pc.sum(
                pc.or_(pc.equal(kinds, RowKind.UPDATE_BEFORE), pc.equal(kinds, RowKind.DELETE))
            ).as_py()
            or 0
        )
        f.rows += n
        if f.sink.tell() >= self.target_file_size:
            self._finish()

    def _start(self) -> _OpenFile:
        name = self.locations.new_name(
            changelog=self.prefix == "changelog",
            extension=self.settings.extension,
            token=self.name_token,
        )
        new = self.locations.new_file(self.directory, name, self.external)
        path = new.path
        self.file_io.mkdirs(path.rsplit("/", 1)[0])
        self.written.append(path)
        sink = self.file_io.arrow_fs.open_output_stream(path)
        writer = open_format_writer(
            sink,
            self.settings,
            self.schema,
            self.file_schema,
            self.target_file_size,
            use_dictionary=self.dictionary_columns,
            **self.parquet_options,
        )
        self._open = _OpenFile(path, name, writer, sink, external_path=new.external_path)
        return self._open

    def _finish(self) -> None:
        f = self._open
        if f is None:
            return
        self._open = None
        f.writer.close()
        f.sink.close()
        assert f.first_key is not None and f.seq_min is not None and f.seq_max is not None
        assert f.key_stats is not None
        self.files.append(
            DataFileMeta(
                file_name=f.name,
                file_size=self.file_io.size(f.path),
                row_count=f.rows,
                min_key=binary_row.serialize(f.first_key, self.key_types),
                max_key=binary_row.serialize(f.last_key, self.key_types),
                key_stats=f.key_stats.result(),
                value_stats=SimpleStats(),
                min_sequence_number=f.seq_min,
                max_sequence_number=f.seq_max,
                schema_id=self.schema.id,
                level=self.level,
                creation_time_millis=_local_millis(),
                delete_row_count=f.deletes,
                file_source=self.file_source,
                value_stats_cols=(),
                external_path=f.external_path,
            )
        )

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metadata of every file written."""
        self._finish()
        return self.files

    def abort(self) -> None:
        """Delete every file this writer wrote."""
        if self._open is not None:
            self._open.writer.close()
            self._open.sink.close()
            self._open = None
        for path in self.written:
            self.file_io.delete(path)
        self.written.clear()
        self.files.clear()


def open_format_writer(
    sink: Any,
    settings: FileSettings,
    schema: TableSchema,
    arrow_schema: pa.Schema,
    target_file_size: int,
    **parquet_options: Any,
) -> Any:
    """A writer of one data file over ``sink`` in the format ``settings`` names: ORC (stripes
    bounded by ``target_file_size``), Avro (Paimon's row type of ``schema``: key-value rows for
    a primary-key table, the fields for an append table), else Parquet of ``arrow_schema`` with
    the codec of ``settings`` and ``parquet_options``."""
    if settings.format == "orc":
        return orc_layout.open_writer(sink, settings.compression, target_file_size)
    if settings.format == "avro":
        level = settings.zstd_level if settings.compression == "zstandard" else None
        return avro_layout.open_writer(sink, schema, settings.compression, level)
    return pq.ParquetWriter(sink, arrow_schema, **writer_kwargs(settings), **parquet_options)


def _local_millis() -> int:
    """Wall-clock local time as epoch millis, as Paimon stores ``_CREATION_TIME``."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)
