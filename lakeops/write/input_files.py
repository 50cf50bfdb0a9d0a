"""Input files read against a table's schema: the one reader of CSV, JSON-lines and Parquet
files that ``lakeops write`` (the CLI), the Spark write job and the Airflow ingest DAG share.

A source is a file or a directory of files (its files, in name order; names starting with ``_``
or ``.``, such as ``_SUCCESS``, are skipped; a subdirectory is refused), a local path or any
fsspec URI (``s3://landing/orders/``) opened with the given storage options. The format comes
from the caller or from each file's name: ``.parquet`` / ``.pq`` / ``.parq``; ``.csv``;
``.json`` / ``.jsonl`` / ``.ndjson`` (one JSON object per line); the text formats optionally
compressed (``.gz``, ``.bz2``, ``.zst``, ``.lz4``).

Values are parsed as the table's types, never guessed from the data:

* CSV (with a header line; every record on one line): each table column is read as text and
  converted to the column's type — strings stay strings (``2026-11-20`` in a STRING column is
  the text ``2026-11-20``), DATE from ``YYYY-MM-DD``, DECIMAL exactly (a value with more digits
  than the scale is refused, not rounded), TIMESTAMP from ISO 8601 without an offset, TIMESTAMP
  WITH LOCAL TIME ZONE from ISO 8601 with one (``Z``, ``+01:00``), integers, floats (``NaN``,
  ``inf``) and booleans (``true``/``false``/``1``/``0``) as Arrow parses them. An empty unquoted
  field is NULL; a quoted empty field (``""``) is the empty string. ROW, ARRAY and MAP columns
  cannot be read from CSV.
* JSON lines: strings, numbers (DECIMAL exactly, from the number's digits), booleans, objects
  and arrays as the table's types; DATE, TIME and TIMESTAMP columns from strings, as for CSV. A
  field missing from a line is NULL.
* Parquet: the file's columns, converted into the table's types by the writer's rules
  (:mod:`lakeops.write.conversions`: widening only, nothing lossy or guessed).

Every batch comes out with exactly the table's columns and types. A value that does not fit
raises :class:`~lakeops.errors.DataValidationError` naming the file, the line (CSV and JSON) and
the column; a missing or extra column names the file; an unreadable file names the file and the
format.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from lakeops.errors import ConfigurationError, DataValidationError, LakeopsError
from lakeops.io.file_io import FileIO
from lakeops.write.conversions import check_conversion

__all__ = [
    "InputFile",
    "InputFormat",
    "conform",
    "infer_format",
    "open_inputs",
    "read_batches",
]


class InputFormat(StrEnum):
    """An input file format."""

    PARQUET = "parquet"
    CSV = "csv"
    JSON = "json"


_COMPRESSIONS: dict[str, str] = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}
_SUFFIXES: dict[str, InputFormat] = {
    ".parquet": InputFormat.PARQUET,
    ".pq": InputFormat.PARQUET,
    ".parq": InputFormat.PARQUET,
    **{f".csv{c}": InputFormat.CSV for c in ("", *_COMPRESSIONS)},
    **{
        f".{s}{c}": InputFormat.JSON
        for s in ("json", "jsonl", "ndjson")
        for c in ("", *_COMPRESSIONS)
    },
}


@dataclass(frozen=True)
class InputFile:
    """One file to read: its path (a local path or a URI), format and row count (None when
    unknown before reading: CSV and JSON)."""

    path: str
    format: InputFormat
    rows: int | None = None


def infer_format(path: str, explicit: InputFormat | str | None) -> InputFormat:
    """``explicit`` if given, else the format the file name's suffix says."""
    if explicit is not None:
        try:
            return InputFormat(explicit)
        except ValueError:
            raise ConfigurationError(
                f"unknown input format {explicit!r}: use parquet, csv or json"
            ) from None
    name = path.rsplit("/", 1)[-1].lower()
    for suffix, fmt in sorted(_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(suffix):
            return fmt
    raise ConfigurationError(
        f"cannot tell the format of {path} from its name (.parquet, .csv, .json, .jsonl); "
        "name the format (--format parquet|csv|json for the CLI and the Spark job; the "
        "operator's source_format, the ingest DAG's format Param)"
    )


def _file_io(path: str, storage_options: Mapping[str, Any] | None) -> FileIO:
    return FileIO(path, dict(storage_options or {}))


def _display(fio: FileIO, path: str) -> str:
    return path if fio.is_local else f"{fio.protocol}://{path}"


def _is_hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def open_inputs(
    sources: Sequence[str],
    explicit: InputFormat | str | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> list[InputFile]:
    """The files of ``sources`` (files or directories of files), each with its format, checked
    before anything is read or written. A missing source is a :class:`FileNotFoundError`; a
    directory holding a directory, or no file at all, a
    :class:`~lakeops.errors.ConfigurationError`."""
    inputs: list[InputFile] = []
    for source in sources:
        fio = _file_io(str(source), storage_options)
        root = fio.root
        if not fio.exists(root):
            raise FileNotFoundError(2, "No such file or directory", str(source))
        if not fio.is_dir(root):
            files = [root]
        else:
            files = []
            for name in sorted(fio.list_names(root)):
                path = f"{root}/{name}"
                if _is_hidden(name):
                    continue
                if fio.is_dir(path):
                    raise ConfigurationError(
                        f"{_display(fio, path)} is a directory inside the source {source}: pass "
                        "the data files, or a directory that holds only data files"
                    )
                files.append(path)
            if not files:
                raise ConfigurationError(f"{source} holds no data files to read")
        for path in files:
            shown = _display(fio, path)
            fmt = infer_format(shown, explicit)
            inputs.append(InputFile(shown, fmt, _row_count(fio, path, fmt)))
    return inputs


def _row_count(fio: FileIO, path: str, fmt: InputFormat) -> int | None:
    if fmt is not InputFormat.PARQUET:
        return None
    try:
        with fio.fs.open(path, "rb") as f:
            return int(pq.ParquetFile(f).metadata.num_rows)
    except pa.ArrowException as exc:
        raise DataValidationError(f"cannot read {_display(fio, path)} as parquet: {exc}") from exc


# ----------------------------------------------------------------------------- conversion
def _describe(t: pa.DataType) -> str:
    """How a type is named in messages (the table's type as a user writes the value)."""
    if pa.types.is_date(t):
        return "DATE (YYYY-MM-DD)"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        if t.tz is None:
            return "TIMESTAMP (ISO 8601 without an offset, e.g. 2024-01-02 03:04:05)"
        return "TIMESTAMP WITH LOCAL TIME ZONE (ISO 8601 with an offset, e.g. 2024-01-02T03:04:05Z)"
    if pa.types.is_boolean(t):
        return "BOOLEAN (true/false)"
    return str(t)


def _first_failure(values: pa.Array, target: pa.DataType) -> int:
    """Index of the first value of ``values`` that does not convert to ``target`` (bisecting
    on casts of slices; ``values`` as a whole is known to fail)."""
    lo, hi = 0, len(values)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(values.slice(lo, mid - lo), target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
        else:
            lo = mid
    return lo


class _Where:
    """Where a batch came from: the file, and how to turn a row index into a line number."""

    def __init__(self, item: InputFile, fio: FileIO, path: str, header_lines: int) -> None:
        self.item = item
        self.fio = fio
        self.path = path
        self.header_lines = header_lines

    def line_of(self, row: int) -> int:
        """The line number (1-based) of data row ``row`` (0-based) of the file: the row-th
        non-empty line after the header (readers skip empty lines; records span one line)."""
        seen = -1
        with _open_text(self.fio, self.path) as stream:
            for number, raw in enumerate(stream, start=1):
                if number <= self.header_lines or not raw.rstrip(b"\r\n"):
                    continue
                seen += 1
                if seen == row:
                    return number
        return self.header_lines + row + 1


def _convert_text(
    column: pa.Array, target: pa.DataType, name: str, where: _Where, first_row: int
) -> pa.Array:
    """Text values of column ``name`` as ``target``, or a DataValidationError naming the file,
    line and column of the first value that does not fit."""
    if column.type == target:
        return column
    try:
        return pc.cast(column, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        index = _first_failure(column, target)
        value = column[index].as_py()
        line = where.line_of(first_row + index)
        raise DataValidationError(
            f"{where.item.path}, line {line}, column {name!r}: {value!r} is not a "
            f"{_describe(target)} ({exc})"
        ) from None


def conform(batch: pa.RecordBatch, schema: pa.Schema, source: str) -> pa.RecordBatch:
    """``batch`` as exactly the columns and types of ``schema`` (the table's), by the
    writer's conversion rules; a missing or extra column, or a type the writer would not
    convert, is a DataValidationError naming ``source`` (the file) and the column."""
    names = schema.names
    missing = [n for n in names if n not in batch.schema.names]
    if missing:
        raise DataValidationError(
            f"{source} has no column(s) {missing}; the table has columns {names}"
        )
    extra = [n for n in batch.schema.names if n not in names]
    if extra:
        raise DataValidationError(
            f"{source} has column(s) {extra} that the table does not have (columns: {names}); "
            "drop them from the file"
        )
    columns = []
    for field in schema:
        column = batch.column(field.name)
        if column.type != field.type:
            try:
                check_conversion(field.name, column.type, field.type, str(field.type))
                column = column.cast(field.type, safe=True)
            except DataValidationError as exc:
                raise DataValidationError(f"{source}: {exc}") from None
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise DataValidationError(
                    f"{source}, column {field.name!r}: {column.type} cannot be stored as "
                    f"{field.type} without loss ({exc})"
                ) from None
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# ----------------------------------------------------------------------------- readers
def _codec(path: str) -> str | None:
    lower = path.lower()
    return next((c for s, c in _COMPRESSIONS.items() if lower.endswith(s)), None)


def _open_text(fio: FileIO, path: str) -> IO[bytes]:
    """The file's bytes, decompressed by its suffix."""
    raw: IO[bytes] = fio.fs.open(path, "rb")
    codec = _codec(path)
    if codec is None:
        return raw
    stream: IO[bytes] = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), codec)
    return stream


def _text_types(item: InputFile, schema: pa.Schema) -> dict[str, pa.DataType]:
    """What CSV reads each table column as: text (converted afterwards), never inferred."""
    for field in schema:
        if pa.types.is_nested(field.type):
            raise DataValidationError(
                f"{item.path}: column {field.name!r} is {field.type}, which CSV cannot hold; "
                "write this table from Parquet or JSON"
            )
    return {field.name: pa.string() for field in schema}


def _csv_batches(
    item: InputFile, fio: FileIO, path: str, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    where = _Where(item, fio, path, header_lines=1)
    convert = pacsv.ConvertOptions(
        column_types=_text_types(item, schema),
        null_values=[""],
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    with _open_text(fio, path) as stream:
        yield from _as_table_types(pacsv.open_csv(stream, convert_options=convert), schema, where)


def _json_read_type(t: pa.DataType) -> pa.DataType:
    """What the JSON reader reads a column of type ``t`` as (temporal values are strings)."""
    if pa.types.is_temporal(t):
        return pa.string()
    return t


def _json_batches(
    item: InputFile, fio: FileIO, path: str, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    where = _Where(item, fio, path, header_lines=0)
    explicit = pa.schema([pa.field(f.name, _json_read_type(f.type)) for f in schema])
    options = pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer")
    with _open_text(fio, path) as stream:
        try:
            table = pajson.read_json(stream, parse_options=options)
        except pa.ArrowInvalid as exc:
            raise _json_error(item, where, schema, exc) from None
    yield from _as_table_types(table.to_batches(), schema, where)


def _as_table_types(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, where: _Where
) -> Iterator[pa.RecordBatch]:
    """``batches`` (read as text where the table has a type the reader cannot parse exactly)
    with every column of ``schema`` converted to the table's type; ``where`` names the file,
    line and column of a value that does not fit."""
    row = 0
    for batch in batches:
        columns = [
            _convert_text(column, schema.field(name).type, name, where, row)
            if name in schema.names
            else column
            for name, column in zip(batch.schema.names, batch.columns, strict=True)
        ]
        row += batch.num_rows
        yield pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


_JSON_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _json_kind(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_temporal(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_struct(t) or pa.types.is_map(t):
        return "object"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "array"
    return "number"


def _json_error(
    item: InputFile, where: _Where, schema: pa.Schema, exc: pa.ArrowInvalid
) -> DataValidationError:
    """The reader's failure, with the line and column of the first value of the wrong JSON
    kind when there is one (else the reader's own message, naming the file)."""
    with _open_text(where.fio, where.path) as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as bad:
                return DataValidationError(f"{item.path}, line {number}: not JSON ({bad})")
            if not isinstance(record, dict):
                return DataValidationError(f"{item.path}, line {number}: not a JSON object")
            for field in schema:
                value = record.get(field.name)
                kind = _json_kind(field.type)
                ok = value is None or isinstance(value, _JSON_KINDS[kind])
                if kind == "number" and isinstance(value, bool):
                    ok = False
                if kind == "number" and isinstance(value, str) and pa.types.is_decimal(field.type):
                    ok = True
                if not ok:
                    return DataValidationError(
                        f"{item.path}, line {number}, column {field.name!r}: {value!r} is not "
                        f"a {_describe(field.type)}: the column takes a JSON {kind}"
                    )
    return DataValidationError(f"cannot read {item.path} as json: {exc}")


def _parquet_batches(fio: FileIO, path: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    with fio.fs.open(path, "rb") as f:
        yield from pq.ParquetFile(f).iter_batches(batch_size=batch_rows)


def read_batches(
    item: InputFile,
    schema: pa.Schema,
    batch_rows: int = 100_000,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``batch_rows`` rows of ``item``, each with exactly the
    columns and types of ``schema`` (the table's Arrow schema), parsed as the module says. A
    value that does not fit, or a file that cannot be read, raises
    :class:`~lakeops.errors.DataValidationError` naming the file (and line and column)."""
    fio = _file_io(item.path, storage_options)
    path = fio.root
    if item.format is InputFormat.CSV:
        batches = _csv_batches(item, fio, path, schema)
    elif item.format is InputFormat.JSON:
        batches = _json_batches(item, fio, path, schema)
    else:
        batches = _parquet_batches(fio, path, batch_rows)
    try:
        for batch in batches:
            batch = conform(batch, schema, item.path)
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows)
    except LakeopsError:
        raise
    except (pa.ArrowException, OSError, io.UnsupportedOperation) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DataValidationError(f"cannot read {item.path} as {item.format.value}: {exc}") from exc
