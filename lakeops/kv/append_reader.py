"""Reading an append table's data files (the table's fields only: no ``_KEY_``, sequence or
row-kind columns; written by :class:`~lakeops.kv.writer.RollingFileWriter` with an
:class:`~lakeops.kv.writer.AppendLayout`) as columns of its current schema.

Files written by another engine are read through the schema they were written with, mapped to
the current schema by field id (:mod:`lakeops.kv.evolution`): renamed columns take their new
name, columns the file lacks read as nulls, widened types are cast.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptDataFileError, CorruptTableError, MissingDataFileError
from lakeops.format.blob_file import is_blob_file
from lakeops.format.data_file import DataFileMeta
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.io.data_formats import BlobFormat, DataFormat, reader_for
from lakeops.io.file_io import FileIO
from lakeops.kv.evolution import SchemaEvolution, SchemaLookup, needs_cast
from lakeops.kv.reader import ReadPlan, relative_name
from lakeops.options.registry import check_data_file, check_readable
from lakeops.store.locations import FileLocations

__all__ = ["AppendFileReader"]


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
        if is_blob_file(f.file_name):
            if not f.write_cols or len(f.write_cols) != 1:
                raise CorruptTableError(
                    f"BLOB file {f.file_name} names {f.write_cols} as its columns; a BLOB file "
                    "holds exactly one column"
                )
            return BlobFormat(self.file_io.arrow_fs, f.write_cols[0])
        return reader_for(f.file_name, self.file_io.arrow_fs, types)

    def _name(self, path: str) -> str:
        return relative_name(self.table_root, path)

    def output_schema(self, columns: Sequence[str]) -> pa.Schema:
        """The Arrow schema of rows with ``columns``."""
        return pa.schema([self.schema.arrow_schema().field(c) for c in columns])

    def _plan(self, f: DataFileMeta, columns: Sequence[str]) -> ReadPlan:
        mapping = self.evolution.mapping(f.schema_id)
        sources: dict[str, str] = {}
        casts: dict[str, tuple[DataType, DataType]] = {}
        for c in columns:
            src = mapping.sources.get(c)
            if src is None:
                continue  # the file's schema lacks this field id: nulls
            sources[c] = src[0]
            current = self.schema.field(c).type
            if needs_cast(src[1], current):
                casts[c] = (src[1], current)
        return ReadPlan(list(dict.fromkeys(sources.values())), sources, casts)

    def _path(self, directory: str, f: DataFileMeta) -> str:
        check_data_file(f.file_name)
        path = self.locations.data_file(directory, f.file_name, f.external_path)
        if not self.file_io.exists(path):
            raise self._missing(path)
        return path

    def _missing(self, path: str) -> MissingDataFileError:
        return MissingDataFileError(
            f"data file {self._name(path)} is missing: a snapshot references it. Run "
            "`lakeops check` to list every missing file",
            path=self._name(path),
        )

    @contextlib.contextmanager
    def _reading(self, path: str) -> Iterator[None]:
        """A file found gone while it is read (after :meth:`_path` saw it: expiry may delete
        it meanwhile) is a :class:`MissingDataFileError` naming it, as one gone before."""
        try:
            yield
        except FileNotFoundError:
            raise self._missing(path) from None

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
        plan = self._plan(f, columns)
        fmt = self._format(f)
        with self._reading(path):
            table = fmt.read(path, plan.read_cols) if plan.read_cols else None
            rows = table.num_rows if table is not None else (fmt.row_count(path) or f.row_count)
        self._check_rows(path, f, rows)
        if table is None:
            return pa.Table.from_arrays(
                [pa.nulls(rows, t.type) for t in self.output_schema(columns)],
                schema=self.output_schema(columns),
            )
        return plan.conform(table, self.output_schema(columns))

    def read_blob(self, directory: str, f: DataFileMeta) -> tuple[pa.Array, np.ndarray]:
        """The values of BLOB file ``f`` (placeholders null) and which rows are placeholders
        (rows whose value an older file of the row holds)."""
        path = self._path(directory, f)
        fmt = self._format(f)
        if not isinstance(fmt, BlobFormat):
            raise CorruptTableError(f"data file {f.file_name} is not a BLOB file")
        with self._reading(path):
            values, placeholders = fmt.versions(path)
        self._check_rows(path, f, len(values))
        return values, placeholders

    def read_physical(
        self, directory: str, f: DataFileMeta, names: Sequence[str]
    ) -> dict[str, pa.ChunkedArray]:
        """The columns of ``names`` the file physically holds (system columns such as
        ``_ROW_ID`` that another engine wrote into it), as stored."""
        path = self._path(directory, f)
        fmt = self._format(f)
        with self._reading(path):
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
        plan = self._plan(f, columns)
        if not plan.read_cols:
            yield self.read(directory, f, columns)
            return
        path = self._path(directory, f)
        rows = 0
        schema = self.output_schema(columns)
        with self._reading(path):
            for batch in self._format(f).iter_batches(path, plan.read_cols, batch_rows):
                rows += batch.num_rows
                yield plan.conform(batch, schema)
        self._check_rows(path, f, rows)
