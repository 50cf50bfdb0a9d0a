"""Reading key-value data files into a uniform record layout.

Every file is read as ``_KEY_<k>…, _SEQUENCE_NUMBER, _VALUE_KIND`` plus the requested value
columns of the table's *current* schema, with one Arrow schema for all files of a table, so
records of different files (and writers: lakeops, pypaimon, Java Paimon) concatenate and merge
directly. Each file is read through the schema it was written with, mapped to the current one
by field id (:mod:`lakeops.kv.evolution`): renamed columns take their new name, columns the
file's schema lacks read as nulls, changed types are widened. Thin-mode files (no ``_KEY_``
columns) get them from the key fields. Parquet, ORC and Avro files are read alike, each by its
own format (:mod:`lakeops.io.data_formats`).

Before a file is read, its size (and, where the footer holds it, its row count) is checked
against its manifest entry, once per reader: a missing, truncated or swapped file is refused
with a :class:`~lakeops.errors.CorruptDataFileError` naming it, never read as if it were right.
A whole-file read also checks the rows it got.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from lakeops.errors import (
    CorruptDataFileError,
    LakeopsError,
    MissingDataFileError,
    UnsupportedFeatureError,
)
from lakeops.format.data_file import DataFileMeta
from lakeops.format.floats import canonical_nan, is_floating
from lakeops.format.kv import KIND, SEQ, key_column
from lakeops.format.schema import TableSchema
from lakeops.format.types import VARIANT_ARROW, DataType
from lakeops.io.data_formats import DataFormat, reader_for
from lakeops.io.file_io import FileIO
from lakeops.kv.evolution import SchemaEvolution, SchemaLookup, needs_cast, read_cast
from lakeops.options.registry import check_data_file, check_readable
from lakeops.store.locations import FileLocations

__all__ = ["KeyValueReader", "ReadPlan", "relative_name"]


def relative_name(table_root: str | None, path: str) -> str:
    """``path`` as errors name it: relative to the table directory when below it."""
    root = (table_root or "").rstrip("/")
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


@dataclass(frozen=True)
class ReadPlan:
    """What to read from one file and how to turn it into the reader's columns (records of a
    key-value file, current columns of an append file)."""

    read_cols: list[str]
    #: output column -> the file column that holds it (absent: the file lacks it, nulls)
    sources: dict[str, str]
    #: output column -> (file type, current type) where the type changed
    casts: dict[str, tuple[DataType, DataType]]

    def conform(
        self, table: pa.Table, schema: pa.Schema, canonical_nans: Collection[str] = ()
    ) -> pa.Table:
        """``table`` (columns read from the file) as ``schema``'s columns: a column the file
        lacks as nulls, a changed type widened, NaN made canonical in ``canonical_nans``
        (lakeops.format.floats)."""
        out = []
        for target in schema:
            file_col = self.sources.get(target.name)
            if file_col is None:
                out.append(pa.nulls(table.num_rows, target.type))
                continue
            col = table.column(file_col)
            cast = self.casts.get(target.name)
            if cast is not None:
                col = read_cast(col, *cast)
            if col.type != target.type:
                _check_unshredded(target.name, col.type, target.type)
                col = col.cast(target.type)
            if target.name in canonical_nans:
                col = canonical_nan(col)
            out.append(col)
        return pa.Table.from_arrays(out, schema=schema)


def _check_unshredded(name: str, have: pa.DataType, want: pa.DataType) -> None:
    """Refuse a VARIANT column stored shredded (a ``typed_value`` beside ``value`` and
    ``metadata``, Paimon's ``variant.shreddingSchema``): casting it would drop the shredded
    values."""
    if want == VARIANT_ARROW and pa.types.is_struct(have):
        names = {f.name for f in have}
        if names != {"value", "metadata"}:
            raise UnsupportedFeatureError(
                f"column {name!r} is a VARIANT stored shredded (fields {sorted(names)}), which "
                "lakeops does not read; rewrite the table's files without "
                "'variant.shreddingSchema' / 'variant.inferShreddingSchema' (Paimon's compaction "
                "with the options removed)"
            )


class KeyValueReader:
    """Reads the data files of one table, each through the schema it was written with."""

    def __init__(
        self,
        file_io: FileIO,
        schema: TableSchema,
        schemas: SchemaLookup,
        table_root: str | None = None,
    ) -> None:
        check_readable(schema.options)
        self.file_io = file_io
        #: errors name files relative to this (the table directory) when given
        self.table_root = table_root
        #: files whose size and row count were checked against their manifest entries
        self._verified: set[str] = set()
        self.schema = schema
        #: external paths are followed only below the roots the table's options name
        self.locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
        self.evolution = SchemaEvolution(schema, schemas)
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        self.merge_keys = [key_column(k) for k in self.key_names]
        #: FLOAT/DOUBLE merge-key columns: NaN made canonical on read (lakeops.format.floats)
        self._float_keys = {
            mk
            for mk, t in zip(self.merge_keys, self.key_types, strict=True)
            if is_floating(t.to_arrow())
        }
        #: schema id -> the Arrow type of every column of files written with that schema
        self._file_types: dict[int, dict[str, pa.DataType]] = {}

    def path(self, directory: str, f: DataFileMeta) -> str:
        """Where ``f`` is stored; refuses files lakeops cannot read (formats other than
        Parquet, ORC and Avro; external paths on another file system) with
        :class:`~lakeops.errors.UnsupportedFeatureError`."""
        check_data_file(f.file_name)
        return self.locations.data_file(directory, f.file_name, f.external_path)

    def _name(self, path: str) -> str:
        return relative_name(self.table_root, path)

    def _checked(self, directory: str, f: DataFileMeta, footer_rows: bool = True) -> str:
        """The path of ``f`` once its size (and, with ``footer_rows``, its footer's row count:
        callers that read the whole file count the rows they get instead) match its manifest
        entry."""
        path = self.path(directory, f)
        if path in self._verified:
            return path
        with self._reading(path):
            info = self.file_io.arrow_fs.get_file_info(path)
            if info.type == pafs.FileType.NotFound:
                raise MissingDataFileError(
                    f"data file {self._name(path)} is missing: a snapshot references it. "
                    "Run `lakeops check` to list every missing file; restore it from a backup "
                    "or roll back to a snapshot that does not reference it",
                    path=self._name(path),
                )
            if info.size != f.file_size:
                raise self._disagrees(path, f"is {info.size} bytes", f"{f.file_size} bytes")
            if not footer_rows:
                return path  # verified once the rows are counted
            rows = self._format(f).row_count(path)
            if rows is not None and rows != f.row_count:
                raise self._disagrees(path, f"holds {rows} rows", f"{f.row_count} rows")
        self._verified.add(path)
        return path

    def _disagrees(self, path: str, found: str, recorded: str) -> CorruptDataFileError:
        name = self._name(path)
        return CorruptDataFileError(
            f"data file {name} {found}, but its manifest entry records {recorded}: it was "
            "truncated or replaced, and lakeops does not read it. Restore the original file, "
            "or roll back to a snapshot that does not reference it",
            path=name,
        )

    @contextlib.contextmanager
    def _reading(self, path: str) -> Iterator[None]:
        """Turn a failure to read the file at ``path`` into an error naming it."""
        try:
            yield
        except LakeopsError:
            raise
        except FileNotFoundError:
            raise MissingDataFileError(
                f"data file {self._name(path)} is missing: a snapshot references it",
                path=self._name(path),
            ) from None
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            raise CorruptDataFileError(
                f"data file {self._name(path)} cannot be read: {exc}", path=self._name(path)
            ) from exc

    def record_schema(self, value_cols: Sequence[str]) -> pa.Schema:
        """The uniform schema of records with these value columns."""
        fields = [
            pa.field(mk, t.to_arrow(), False)
            for mk, t in zip(self.merge_keys, self.key_types, strict=True)
        ]
        fields += [pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
        fields += [pa.field(c, self.schema.field(c).type.to_arrow(), True) for c in value_cols]
        return pa.schema(fields)

    def key_range(self, f: DataFileMeta) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(min key, max key) of ``f``, decoded through the schema it was written with."""
        return self.evolution.key_range(f)

    def _format(self, f: DataFileMeta) -> DataFormat:
        types = self._file_types.get(f.schema_id)
        if types is None:
            written = self.evolution.mapping(f.schema_id).file_schema
            types = {
                key_column(k): written.field(k).type.to_arrow()
                for k in written.trimmed_primary_keys
            }
            types.update({SEQ: pa.int64(), KIND: pa.int8()})
            types.update({fld.name: fld.type.to_arrow() for fld in written.fields})
            self._file_types[f.schema_id] = types
        return reader_for(f.file_name, self.file_io.arrow_fs, types)

    def _plan(self, path: str, f: DataFileMeta, value_cols: Sequence[str]) -> ReadPlan:
        available = set(self._format(f).names(path))
        mapping = self.evolution.mapping(f.schema_id)
        sources: dict[str, str] = {SEQ: SEQ, KIND: KIND}
        casts: dict[str, tuple[DataType, DataType]] = {}
        wanted = list(zip(self.merge_keys, self.key_names, strict=True))
        wanted += [(c, c) for c in value_cols]
        for record_col, field_name in wanted:
            src = mapping.sources.get(field_name)
            if src is None:
                continue  # the file's schema lacks this field id: nulls
            file_name, file_type = src
            file_col = file_name
            if record_col != field_name and key_column(file_name) in available:
                file_col = key_column(file_name)  # a key; thin-mode files only have the field
            elif (
                field_name in self.key_names
                and key_column(file_name) in available
                and not is_floating(file_type.to_arrow())
            ):
                # a key field's value column holds what its key column holds (the key is the
                # value row's projection: what thin mode relies on): decode it once
                file_col = key_column(file_name)
            if file_col not in available:
                continue
            sources[record_col] = file_col
            if not mapping.identity:
                current = self.schema.field(field_name).type
                if needs_cast(file_type, current):
                    casts[record_col] = (file_type, current)
        return ReadPlan(list(dict.fromkeys(sources.values())), sources, casts)

    def _normalize(self, table: pa.Table, plan: ReadPlan, value_cols: Sequence[str]) -> pa.Table:
        return self.conform(table, plan, self.record_schema(value_cols))

    def conform(self, table: pa.Table, plan: ReadPlan, schema: pa.Schema) -> pa.Table:
        """``table`` (file columns read by ``plan``) as ``schema`` (fields of
        :meth:`record_schema`), float merge keys with one NaN bit pattern
        (lakeops.format.floats)."""
        return plan.conform(table, schema, self._float_keys)

    def unit_plan(
        self, directory: str, f: DataFileMeta, value_cols: Sequence[str]
    ) -> tuple[str, ReadPlan]:
        """The path of ``f`` (its size and footer row count checked) and the plan that reads
        its records with these value columns, for reads of single units
        (:meth:`read_unit_columns`)."""
        path = self._checked(directory, f)
        with self._reading(path):
            return path, self._plan(path, f, value_cols)

    def unit_rows(self, directory: str, f: DataFileMeta) -> list[int] | None:
        """The rows of each unit (Parquet row group) of ``f`` as its footer records them; None
        where the format's footer does not (ORC, Avro)."""
        path = self._checked(directory, f)
        with self._reading(path):
            return self._format(f).unit_rows(path)

    def read_unit_columns(
        self, path: str, f: DataFileMeta, unit: int, columns: list[str]
    ) -> pa.Table:
        """The file columns ``columns`` (as :meth:`unit_plan`'s plan names them) of one unit of
        ``f`` at ``path``, as the file stores them (:meth:`conform` makes them records)."""
        with self._reading(path):
            return self._format(f).read_unit(path, unit, columns)

    def read(self, directory: str, f: DataFileMeta, value_cols: Sequence[str]) -> pa.Table:
        """All records of one file."""
        path = self._checked(directory, f, footer_rows=False)
        with self._reading(path):
            plan = self._plan(path, f, value_cols)
            table = self._format(f).read(path, plan.read_cols)
        if table.num_rows != f.row_count:
            raise self._disagrees(path, f"holds {table.num_rows} rows", f"{f.row_count} rows")
        return self._normalize(table, plan, value_cols)

    def read_filtered(
        self,
        directory: str,
        f: DataFileMeta,
        value_cols: Sequence[str],
        merge_key: str,
        values: list[Any],
    ) -> pa.Table:
        """The records of one file whose key column ``merge_key`` (``_KEY_<k>``) is one of
        ``values`` (row groups pruned by statistics)."""
        path = self._checked(directory, f)
        with self._reading(path):
            plan = self._plan(path, f, value_cols)
            table = self._format(f).read(path, plan.read_cols, (plan.sources[merge_key], values))
        return self._normalize(table, plan, value_cols)

    def row_group_key_ranges(
        self,
        directory: str,
        f: DataFileMeta,
    ) -> list[tuple[Any, Any] | None]:
        """Per row group, (min, max) of the first key column from the Parquet footer (None
        where the statistics are missing, and everywhere for a float key: Parquet statistics
        leave NaN out, and Java orders it above every other value)."""
        path = self._checked(directory, f)
        if self.merge_keys[0] in self._float_keys:
            return [None] * self._format(f).unit_count(path)
        fmt = self._format(f)
        first = self.evolution.mapping(f.schema_id).source_name(self.key_names[0])
        assert first is not None
        with self._reading(path):
            column = key_column(first) if key_column(first) in fmt.names(path) else first
            return fmt.unit_ranges(path, column)

    def read_row_group(
        self, directory: str, f: DataFileMeta, row_group: int, value_cols: Sequence[str]
    ) -> pa.Table:
        """The records of one row group of a file."""
        path = self._checked(directory, f)
        with self._reading(path):
            plan = self._plan(path, f, value_cols)
            table = self._format(f).read_unit(path, row_group, plan.read_cols)
        return self._normalize(table, plan, value_cols)

    def unit_key_ranges(
        self, directory: str, f: DataFileMeta, keys: Sequence[str]
    ) -> list[dict[str, tuple[Any, Any]]]:
        """Per unit (Parquet row group), (min, max) of each of the key columns ``keys`` (trimmed
        primary-key fields) from the file's statistics; a column is left out where they are
        missing, and float keys always (statistics leave NaN out). ORC and Avro units have
        none."""
        path = self._checked(directory, f)
        fmt = self._format(f)
        mapping = self.evolution.mapping(f.schema_id)
        with self._reading(path):
            names = set(fmt.names(path))
            out: list[dict[str, tuple[Any, Any]]] = [{} for _ in range(fmt.unit_count(path))]
            for k in keys:
                if key_column(k) in self._float_keys:
                    continue
                source = mapping.source_name(k)
                if source is None:
                    continue
                column = key_column(source) if key_column(source) in names else source
                if column not in names:
                    continue
                for unit, bounds in enumerate(fmt.unit_ranges(path, column)):
                    if bounds is not None:
                        out[unit][k] = bounds
        return out

    def iter_batches(
        self,
        directory: str,
        files: Sequence[DataFileMeta],
        value_cols: Sequence[str],
        batch_rows: int,
        units: Sequence[int] | None = None,
    ) -> Iterator[pa.Table]:
        """Records of files read one after another, in batches of at most ``batch_rows``
        (``units``: only these units — Parquet row groups — of a single file)."""
        if units is not None and len(files) != 1:
            raise ValueError("units select the units of one file")
        for f in files:
            path = self._checked(directory, f, footer_rows=units is not None)
            with self._reading(path):
                plan = self._plan(path, f, value_cols)
                batches = self._format(f).iter_batches(path, plan.read_cols, batch_rows, units)
            rows = 0
            while True:
                with self._reading(path):
                    batch = next(batches, None)
                if batch is None:
                    break
                rows += batch.num_rows
                yield self._normalize(batch, plan, value_cols)
            if units is None and rows != f.row_count:
                raise self._disagrees(path, f"holds {rows} rows", f"{f.row_count} rows")
