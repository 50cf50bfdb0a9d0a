"""Input files of ``lakeops write``: Parquet or CSV, read in record batches with pyarrow.

The format comes from ``--format`` or from the file name (``.parquet`` / ``.pq`` / ``.parq``;
``.csv``, optionally compressed: ``.csv.gz``, ``.csv.bz2``, ``.csv.zst``, ``.csv.lz4``). CSV
columns named like table columns are parsed as the table's types (other columns keep pyarrow's
inference, and the write then rejects them as extra columns).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from lakeops.cli.errors import CliError

__all__ = ["Format", "InputFile", "infer_format", "open_inputs", "read_batches"]


class Format(StrEnum):
    """An input file format."""

    PARQUET = "parquet"
    CSV = "csv"


_SUFFIXES: dict[str, Format] = {
    ".parquet": Format.PARQUET,
    ".pq": Format.PARQUET,
    ".parq": Format.PARQUET,
    ".csv": Format.CSV,
    ".csv.gz": Format.CSV,
    ".csv.bz2": Format.CSV,
    ".csv.zst": Format.CSV,
    ".csv.lz4": Format.CSV,
}


@dataclass(frozen=True)
class InputFile:
    """One file to write: its path, format and row count (None when unknown before reading)."""

    path: Path
    format: Format
    rows: int | None


def infer_format(path: Path, explicit: Format | None) -> Format:
    """``explicit`` if given, else the format the file name's suffix says."""
    if explicit is not None:
        return explicit
    name = path.name.lower()
    for suffix, fmt in sorted(_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(suffix):
            return fmt
    raise CliError(
        f"cannot tell the format of {path} from its name; pass --format parquet or --format csv"
    )


def _row_count(path: Path, fmt: Format) -> int | None:
    if fmt is not Format.PARQUET:
        return None
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except pa.ArrowException as exc:
        raise CliError(f"cannot read {path} as Parquet: {exc}") from exc


def open_inputs(paths: Sequence[Path], explicit: Format | None) -> list[InputFile]:
    """Check every input exists and has a known format before anything is written."""
    inputs = []
    for path in paths:
        if not path.is_file():
            if path.exists():
                raise CliError(f"{path} is not a file; pass the data files themselves")
            raise FileNotFoundError(2, "No such file or directory", str(path))
        fmt = infer_format(path, explicit)
        inputs.append(InputFile(path, fmt, _row_count(path, fmt)))
    return inputs


def _csv_types(schema: pa.Schema) -> dict[str, pa.DataType]:
    """The table columns CSV can parse directly (nested types cannot be read from CSV)."""
    return {
        f.name: f.type
        for f in schema
        if not pa.types.is_nested(f.type) and not pa.types.is_dictionary(f.type)
    }


def _batches(item: InputFile, schema: pa.Schema, batch_rows: int) -> Iterator[pa.RecordBatch]:
    if item.format is Format.PARQUET:
        yield from pq.ParquetFile(item.path).iter_batches(batch_size=batch_rows)
        return
    stream = pa.input_stream(str(item.path), compression="detect")
    reader = pacsv.open_csv(
        stream, convert_options=pacsv.ConvertOptions(column_types=_csv_types(schema))
    )
    for batch in reader:
        for start in range(0, batch.num_rows, batch_rows):
            yield batch.slice(start, batch_rows)


def read_batches(
    item: InputFile, schema: pa.Schema, batch_rows: int = 100_000
) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``batch_rows`` rows; a read or parse failure raises
    :class:`CliError` naming the file."""
    try:
        yield from _batches(item, schema, batch_rows)
    except pa.ArrowException as exc:
        raise CliError(f"cannot read {item.path} as {item.format.value}: {exc}") from exc
