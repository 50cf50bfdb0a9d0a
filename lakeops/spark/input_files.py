"""The Spark write job's input: files read against the table's schema by
:mod:`lakeops.write.input_files` (the reader the CLI shares), one Spark task per file.

Spark's own CSV and JSON readers guess types from the data (a ``2026-11-20`` in a STRING key
became a date, and the write refused it); here every value is parsed as its table column's type,
and a value that does not fit names the file, line and column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from lakeops.errors import DataValidationError
from lakeops.spark.types import as_nullable, spark_arrow_schema, spark_schema, to_spark_arrow
from lakeops.write.input_files import InputFile, InputFormat, open_inputs, read_batches

__all__ = ["input_error", "read_source"]

_MARK = "lakeops.errors.DataValidationError: "


def read_source(
    spark: Any,
    source: str,
    fmt: str | None,
    table_schema: pa.Schema,
    storage_options: Mapping[str, Any] | None = None,
) -> Any:
    """A DataFrame of the files of ``source`` (a file or a directory of files, local or a URI)
    in format ``fmt`` (None: from each file's name), with the table's columns and types. The
    files are listed (and checked) on the driver; each is read by one task."""
    inputs = open_inputs(
        [source], InputFormat(fmt) if fmt else None, storage_options=storage_options
    )
    arrow = as_nullable(table_schema)
    struct = spark_schema(arrow)
    target = spark_arrow_schema(struct)
    options = dict(storage_options or {})

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, name in zip(
                batch.column("path").to_pylist(), batch.column("format").to_pylist(), strict=True
            ):
                item = InputFile(path, InputFormat(name))
                for part in read_batches(item, arrow, storage_options=options):
                    yield from to_spark_arrow(pa.Table.from_batches([part]), target).to_batches()

    files = spark.createDataFrame(
        [(i.path, i.format.value) for i in inputs], "path string, format string"
    )
    return files.repartition(len(inputs)).mapInArrow(read, struct)


def input_error(exc: BaseException) -> DataValidationError | None:
    """The reader's :class:`~lakeops.errors.DataValidationError` (file, line, column) that
    failed a Spark task, out of the Spark exception that carries it (None if it is not one):
    the driver raises it as itself, not as a page of JVM stack."""
    text = str(exc)
    at = text.find(_MARK)
    if at < 0:
        return None
    return DataValidationError(text[at + len(_MARK) :].splitlines()[0].strip())
