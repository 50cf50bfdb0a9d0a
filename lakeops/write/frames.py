"""What a table write accepts, turned into Arrow before any validation.

A write takes Arrow data — a ``pyarrow.Table``, ``RecordBatch``, ``RecordBatchReader`` or an
iterable of tables and batches — and data frames of other libraries, converted here without
importing them:

* a **pandas** ``DataFrame``: ``pyarrow.Table.from_pandas``; its index is dropped unless it is
  named (``df.set_index("id")``: then it is the column of that name, as pandas users expect);
* anything with ``__arrow_c_stream__`` (the Arrow PyCapsule stream interface: **polars**
  ``DataFrame``, DuckDB relations, pyarrow datasets' scanners, …): read as a
  ``RecordBatchReader``, batch by batch;
* anything with ``__arrow_c_array__`` (one struct array or record batch): one ``RecordBatch``.

Types are not changed here: the write then matches the columns to the table by name and casts
them only where that loses nothing (:mod:`lakeops.write.records`), so a pandas ``object``
column of strings into an INT column is refused by name there, as Arrow input would be.
Anything else is refused naming the type it got (a dict, a list of rows, a polars ``Series``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeAlias

import pyarrow as pa

from lakeops.errors import DataValidationError

__all__ = ["ArrowPart", "ArrowStream", "WriteInput", "arrow_parts", "in_memory"]

#: one piece of input, as Arrow
ArrowPart: TypeAlias = pa.Table | pa.RecordBatch


class ArrowStream(Protocol):
    """Data that exports an Arrow stream (pandas and polars DataFrames, DuckDB relations)."""

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...


#: what a table write accepts (see the module docstring)
WriteInput: TypeAlias = (
    pa.Table
    | pa.RecordBatch
    | pa.RecordBatchReader
    | ArrowStream
    | Iterable[ArrowPart | ArrowStream]
)

_HOW = (
    "pass a pyarrow Table, RecordBatch or RecordBatchReader, a pandas or polars DataFrame, "
    "anything with __arrow_c_stream__, or an iterable of tables, batches or data frames"
)


def _is_pandas_frame(data: object) -> bool:
    kind = type(data)
    return kind.__name__ == "DataFrame" and kind.__module__.split(".", 1)[0] == "pandas"


def _from_pandas(frame: Any) -> pa.Table:
    named = any(name is not None for name in frame.index.names)
    try:
        return pa.Table.from_pandas(frame, preserve_index=named)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise DataValidationError(
            f"cannot convert the pandas DataFrame to Arrow: {error}; give each column one "
            "type (an object column must hold values of one kind, or None)"
        ) from error


def in_memory(data: WriteInput) -> WriteInput:
    """``data`` as one Arrow table where it is a data frame held in memory (pandas, polars),
    so that a write can run it again; anything else unchanged."""
    if _is_pandas_frame(data):
        return _from_pandas(data)
    kind = type(data)
    if kind.__name__ == "DataFrame" and kind.__module__.split(".", 1)[0] == "polars":
        return pa.table(data)
    return data


def _convert(data: object) -> ArrowPart | pa.RecordBatchReader | None:
    """``data`` as Arrow when it is a single piece of input, else None."""
    if isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader):
        return data
    if _is_pandas_frame(data):
        return _from_pandas(data)
    try:
        if hasattr(data, "__arrow_c_stream__"):
            return pa.RecordBatchReader.from_stream(data)
        if hasattr(data, "__arrow_c_array__"):
            return pa.record_batch(data)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # one column (a Series), not rows of columns
    return None


def _refuse(data: object, inside: object | None = None) -> DataValidationError:
    what = type(data).__name__
    where = "" if inside is None else f" (an item of the {type(inside).__name__} given)"
    return DataValidationError(f"cannot write a {what}{where}: {_HOW}")


def arrow_parts(data: object) -> Iterator[ArrowPart]:
    """The pieces of a write's input as Arrow tables and batches, in order (a reader or a
    stream lazily, batch by batch); raises :class:`DataValidationError` naming the type of
    anything that is not input (see the module docstring)."""
    single = _convert(data)
    if isinstance(single, pa.RecordBatchReader):
        yield from single
        return
    if single is not None:
        yield single
        return
    exported = hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")
    if exported or isinstance(data, str | bytes | dict) or not isinstance(data, Iterable):
        raise _refuse(data)  # (an exported column, a Series, is no rows of columns)
    for item in data:
        part = _convert(item)
        if part is None:
            raise _refuse(item, data)
        if isinstance(part, pa.RecordBatchReader):
            yield from part
        else:
            yield part
