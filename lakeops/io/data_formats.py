"""Reading data files by their own format: Parquet, ORC, Avro and BLOB files, chosen per file
by its extension (as Paimon's readers do — ``file.format`` only says what a writer writes).

All expose the same small surface over Arrow: column names, a projected read (optionally
filtered), reading one unit (a Parquet row group, an ORC stripe, a whole Avro file), batches,
and per-unit min/max of one column where the format's footer has them (Parquet only).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.blob_file import decode_blob_file, decode_blob_versions
from lakeops.io.avro_data import open_columns

__all__ = ["READABLE_FORMATS", "DataFormat", "format_of", "reader_for"]

#: data file formats lakeops reads (by each file's extension)
READABLE_FORMATS = ("parquet", "orc", "avro")

#: bytes read ahead from an Avro file (fastavro reads its block headers a byte at a time)
_AVRO_BUFFER = 1 << 20


def format_of(file_name: str) -> str:
    """A data file's format from its name (``data-….parquet`` → ``parquet``)."""
    return file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""


class DataFormat(Protocol):
    """What lakeops reads from a data file of one format."""

    def names(self, path: str) -> list[str]: ...

    def read(
        self, path: str, columns: list[str], filter_in: tuple[str, list[Any]] | None = None
    ) -> pa.Table: ...

    def unit_count(self, path: str) -> int: ...

    def read_unit(self, path: str, unit: int, columns: list[str]) -> pa.Table: ...

    def iter_batches(
        self, path: str, columns: list[str], batch_rows: int, units: Sequence[int] | None = None
    ) -> Iterator[pa.Table]:
        """The file's rows (of ``units`` only, in order, when given) in batches of at most
        ``batch_rows``."""
        ...

    def unit_ranges(self, path: str, column: str) -> list[tuple[Any, Any] | None]: ...

    def unit_rows(self, path: str) -> list[int] | None:
        """The rows of each unit where the footer records them (Parquet), else None."""
        ...

    def row_count(self, path: str) -> int | None:
        """The rows the file's footer records (None: the format has no footer count)."""
        ...


class ParquetFormat:
    """Parquet, through pyarrow.parquet (row groups are the units)."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        self.fs = fs

    def names(self, path: str) -> list[str]:
        return list(pq.read_schema(path, filesystem=self.fs).names)

    def read(
        self, path: str, columns: list[str], filter_in: tuple[str, list[Any]] | None = None
    ) -> pa.Table:
        filters = [(filter_in[0], "in", filter_in[1])] if filter_in is not None else None
        return pq.read_table(path, columns=columns, filesystem=self.fs, filters=filters)

    def unit_count(self, path: str) -> int:
        return int(pq.ParquetFile(path, filesystem=self.fs).metadata.num_row_groups)

    def row_count(self, path: str) -> int | None:
        return int(pq.ParquetFile(path, filesystem=self.fs).metadata.num_rows)

    def unit_rows(self, path: str) -> list[int] | None:
        meta = pq.ParquetFile(path, filesystem=self.fs).metadata
        return [int(meta.row_group(rg).num_rows) for rg in range(meta.num_row_groups)]

    def _open(self, path: str) -> pa.NativeFile:
        """``path`` opened for reading. A local file's reads allocate from pyarrow's current
        default pool (:mod:`lakeops.io.memory_pool`); the local file system's own reads keep
        the pool that was the default when pyarrow first made one."""
        if isinstance(self.fs, pafs.LocalFileSystem):
            return pa.OSFile(path, "r", memory_pool=pa.default_memory_pool())
        return self.fs.open_input_file(path)

    def read_unit(self, path: str, unit: int, columns: list[str]) -> pa.Table:
        with self._open(path) as source:
            return pq.ParquetFile(source, pre_buffer=False).read_row_group(unit, columns=columns)

    def iter_batches(
        self, path: str, columns: list[str], batch_rows: int, units: Sequence[int] | None = None
    ) -> Iterator[pa.Table]:
        if units is not None and not units:
            return
        with self._open(path) as source:
            # no pre-buffering: it reads far ahead of the batch and defeats bounded memory
            pf = pq.ParquetFile(source, pre_buffer=False)
            for batch in pf.iter_batches(
                batch_size=batch_rows,
                columns=columns,
                row_groups=list(units) if units is not None else None,
            ):
                yield pa.Table.from_batches([batch])

    def unit_ranges(self, path: str, column: str) -> list[tuple[Any, Any] | None]:
        meta = pq.ParquetFile(path, filesystem=self.fs).metadata
        idx = meta.schema.names.index(column)
        out: list[tuple[Any, Any] | None] = []
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(idx).statistics
            out.append((stats.min, stats.max) if stats is not None and stats.has_min_max else None)
        return out


class OrcFormat:
    """ORC, through pyarrow.orc (stripes are the units; their statistics are not exposed, so
    no stripe is ever pruned)."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        self.fs = fs

    def _open(self, path: str) -> tuple[Any, orc.ORCFile]:
        source = self.fs.open_input_file(path)
        return source, orc.ORCFile(source)

    def names(self, path: str) -> list[str]:
        source, f = self._open(path)
        with source:
            return list(f.schema.names)

    def read(
        self, path: str, columns: list[str], filter_in: tuple[str, list[Any]] | None = None
    ) -> pa.Table:
        source, f = self._open(path)
        with source:
            table = f.read(columns=columns)
        if filter_in is not None:
            col = table.column(filter_in[0])
            table = table.filter(pc.is_in(col, pa.array(filter_in[1], col.type)))
        return table

    def unit_count(self, path: str) -> int:
        source, f = self._open(path)
        with source:
            return int(f.nstripes)

    def row_count(self, path: str) -> int | None:
        source, f = self._open(path)
        with source:
            return int(f.nrows)

    def unit_rows(self, _path: str) -> list[int] | None:
        return None  # pyarrow does not expose the rows of each stripe

    def read_unit(self, path: str, unit: int, columns: list[str]) -> pa.Table:
        source, f = self._open(path)
        with source:
            return pa.Table.from_batches([f.read_stripe(unit, columns=columns)])

    def iter_batches(
        self, path: str, columns: list[str], batch_rows: int, units: Sequence[int] | None = None
    ) -> Iterator[pa.Table]:
        source, f = self._open(path)
        with source:
            for stripe in range(f.nstripes) if units is None else units:
                table = pa.Table.from_batches([f.read_stripe(stripe, columns=columns)])
                for start in range(0, table.num_rows, batch_rows):
                    yield table.slice(start, batch_rows)

    def unit_ranges(self, path: str, _column: str) -> list[tuple[Any, Any] | None]:
        return [None] * self.unit_count(path)


class AvroFormat:
    """Avro, through :mod:`lakeops.io.avro_data` (where ``lakeops[avro]`` is installed, the
    compiled decoder of flat rows or Arrow's Avro decoder when the file's types are ones they
    decode exactly, else fastavro; the same Arrow values either way): a whole file is one unit,
    with no statistics (Paimon's Avro files have none inside), so it is never pruned.

    ``arrow_types`` (column name -> Arrow type, e.g. from the table schema the file was written
    with) gives columns the exact Arrow types the Parquet and ORC readers give the same Paimon
    types where the Avro type does not say them (TINYINT and SMALLINT are Avro ``int``).
    """

    def __init__(
        self, fs: pafs.FileSystem, arrow_types: Mapping[str, pa.DataType] | None = None
    ) -> None:
        self.fs = fs
        self.arrow_types = dict(arrow_types or {})

    def _open(self, path: str) -> io.BufferedReader:
        # buffered in Python: fastavro reads block headers a byte at a time and asks tell()
        return io.BufferedReader(self.fs.open_input_file(path), buffer_size=_AVRO_BUFFER)

    def _chunks(
        self, path: str, columns: list[str], filter_in: tuple[str, list[Any]] | None = None
    ) -> Iterator[pa.Table]:
        with self._open(path) as f:
            wanted = list(columns)
            if filter_in is not None and filter_in[0] not in wanted:
                wanted.append(filter_in[0])
            for chunk in open_columns(f, path).chunks(wanted):
                chunk = self._typed(chunk)
                if filter_in is not None:
                    col = chunk.column(filter_in[0])
                    chunk = chunk.filter(pc.is_in(col, pa.array(filter_in[1], col.type)))
                yield chunk.select(columns)

    def _typed(self, table: pa.Table) -> pa.Table:
        for i, name in enumerate(table.column_names):
            want = self.arrow_types.get(name)
            if want is not None and table.schema.field(i).type != want:
                field = pa.field(name, want, table.schema.field(i).nullable)
                table = table.set_column(i, field, table.column(i).cast(want))
        return table

    def _empty(self, path: str, columns: list[str]) -> pa.Table:
        with self._open(path) as f:
            reader = open_columns(f, path)
            by_name = dict(zip(reader.root.names, reader.root.children, strict=True))
            return self._typed(
                pa.schema(
                    [pa.field(c, by_name[c].arrow, by_name[c].nullable) for c in columns]
                ).empty_table()
            )

    def names(self, path: str) -> list[str]:
        with self._open(path) as f:
            return open_columns(f, path).names

    def read(
        self, path: str, columns: list[str], filter_in: tuple[str, list[Any]] | None = None
    ) -> pa.Table:
        chunks = list(self._chunks(path, columns, filter_in))
        if not chunks:
            return self._empty(path, columns)
        return pa.concat_tables(chunks) if len(chunks) > 1 else chunks[0]

    def unit_count(self, _path: str) -> int:
        return 1

    def row_count(self, _path: str) -> int | None:
        return None  # Avro files count rows per block only: checked on a whole-file read

    def unit_rows(self, _path: str) -> list[int] | None:
        return None

    def read_unit(self, path: str, unit: int, columns: list[str]) -> pa.Table:
        if unit != 0:
            raise IndexError(f"Avro data file {path} is one unit; no unit {unit}")
        return self.read(path, columns)

    def iter_batches(
        self, path: str, columns: list[str], batch_rows: int, units: Sequence[int] | None = None
    ) -> Iterator[pa.Table]:
        if units is not None and 0 not in units:
            return
        for chunk in self._chunks(path, columns):
            for start in range(0, chunk.num_rows, batch_rows):
                yield chunk.slice(start, batch_rows)

    def unit_ranges(self, _path: str, _column: str) -> list[tuple[Any, Any] | None]:
        return [None]


class BlobFormat:
    """A BLOB file (:mod:`lakeops.format.blob_file`): one column, named by the file's manifest
    entry (``column``), read whole (one unit, no statistics)."""

    def __init__(self, fs: pafs.FileSystem, column: str) -> None:
        self.fs = fs
        self.column = column

    def names(self, path: str) -> list[str]:  # noqa: ARG002
        return [self.column]

    def _values(self, path: str) -> pa.LargeBinaryArray:
        with self.fs.open_input_file(path) as source:
            data = source.read()
        return decode_blob_file(data, path.rsplit("/", 1)[-1])

    def versions(self, path: str) -> tuple[pa.LargeBinaryArray, np.ndarray]:
        """Every row's value (placeholders null) and which rows are placeholders
        (:func:`~lakeops.format.blob_file.decode_blob_versions`)."""
        with self.fs.open_input_file(path) as source:
            data = source.read()
        return decode_blob_versions(data, path.rsplit("/", 1)[-1])

    def read(
        self,
        path: str,
        columns: list[str],
        filter_in: tuple[str, list[Any]] | None = None,  # noqa: ARG002
    ) -> pa.Table:
        values = self._values(path)
        return pa.table({c: values for c in columns if c == self.column})

    def unit_count(self, path: str) -> int:  # noqa: ARG002
        return 1

    def row_count(self, path: str) -> int | None:  # noqa: ARG002
        return None

    def unit_rows(self, path: str) -> list[int] | None:  # noqa: ARG002
        return None

    def read_unit(self, path: str, unit: int, columns: list[str]) -> pa.Table:  # noqa: ARG002
        return self.read(path, columns)

    def iter_batches(
        self, path: str, columns: list[str], batch_rows: int, units: Sequence[int] | None = None
    ) -> Iterator[pa.Table]:
        if units is not None and not units:
            return
        whole = self.read(path, columns)
        for start in range(0, whole.num_rows, batch_rows):
            yield whole.slice(start, batch_rows)

    def unit_ranges(self, path: str, column: str) -> list[tuple[Any, Any] | None]:  # noqa: ARG002
        return [None]


def reader_for(
    file_name: str,
    fs: pafs.FileSystem,
    arrow_types: Mapping[str, pa.DataType] | None = None,
) -> DataFormat:
    """The reader of a data file's own format (UnsupportedFeatureError for others).

    ``arrow_types`` (column -> Arrow type of the Paimon type it was written as) serves formats
    whose files do not carry every type (Avro)."""
    fmt = format_of(file_name)
    if fmt == "parquet":
        return ParquetFormat(fs)
    if fmt == "orc":
        return OrcFormat(fs)
    if fmt == "avro":
        return AvroFormat(fs, arrow_types)
    raise UnsupportedFeatureError(
        f"data file {file_name} is in {fmt or 'an unknown'} format; lakeops reads Parquet, "
        "ORC and Avro data files — read this table with Paimon"
    )
