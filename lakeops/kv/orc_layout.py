"""The ORC types Paimon 0.9 gives each type (``OrcSplitReaderUtil.toOrcType``), as lakeops
writes them through pyarrow's ORC writer.

Paimon writes TINYINT as ``tinyint``, SMALLINT ``smallint``, INT ``int``, BIGINT ``bigint``,
FLOAT/DOUBLE, BOOLEAN, DATE ``date``, DECIMAL(p, s) ``decimal(p,s)``, BINARY/VARBINARY/BYTES
``binary``, TIMESTAMP ``timestamp``, TIMESTAMP_LTZ ``timestamp with local time zone`` (ORC's
TIMESTAMP_INSTANT), ARRAY ``array``, MAP ``map``, ROW ``struct``, STRING ``string`` and
CHAR(n)/VARCHAR(n) ``char(n)``/``varchar(n)``. pyarrow gives the same ORC types (an Arrow
timestamp with a time zone becomes TIMESTAMP_INSTANT, stored as UTC), except that Arrow has no
CHAR/VARCHAR, so those columns are ORC ``string``: Paimon's reader reads them through ORC's
string-to-char/varchar conversion, which trims/truncates exactly as its CHAR/VARCHAR readers
do on its own files. pyarrow has no ORC type for Arrow's time either, so a TIME column (ORC
``int`` in Paimon, the millisecond of the day) is handed to it as its int32 milliseconds and
read back by the cast to the table's ``time32('ms')``. ORC keeps every timestamp to the
nanosecond, so any precision is exact.

Paimon's ORC writer has no MULTISET or VARIANT (``OrcTypeUtil``): a table with one is refused
(use Parquet). Columns are matched by name (pyarrow writes the real field names, as Paimon does).

One value cannot be written so that Paimon reads it: a time before 1970 with a sub-millisecond
part (only in TIMESTAMP / TIMESTAMP_LTZ of precision 4..9). Paimon 0.9's ORC reader
(``OrcTimestampColumnVector`` over ORC Java's reader) fails on such a time in a file from the
ORC C++ writer (``IllegalArgumentException`` in ``Timestamp.fromEpochMillis``), so
:func:`check_values` refuses it before the file is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.kv import data_file_schema
from lakeops.format.schema import TableSchema

__all__ = ["check_values", "check_writable", "open_writer"]

_SUB_MILLI = {"us": 1_000, "ns": 1_000_000}

#: ORC stripe size (Paimon leaves ORC's default, 64 MiB, unless 'file.block-size' is set)
STRIPE_SIZE = 64 * 1024 * 1024


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when pyarrow's ORC writer cannot write a data
    file of ``schema`` (tried on an empty file in memory, nothing touches the table)."""

    file_schema = physical_schema(data_file_schema(schema))
    unwritable = [f.name for f in schema.fields if f.type.holds("MULTISET", "VARIANT")]
    if unwritable:
        raise UnsupportedFeatureError(
            f"cannot {what} as ORC: column(s) {unwritable} are MULTISET or VARIANT, which "
            "Paimon's ORC format does not store; use file.format = 'parquet'"
        )
    try:
        sink = pa.BufferOutputStream()
        writer = orc.ORCWriter(sink)
        writer.write(file_schema.empty_table())
        writer.close()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UnsupportedFeatureError(
            f"cannot {what}: lakeops' ORC writer cannot write this table's types ({exc}); "
            "use file.format = 'parquet'"
        ) from None


def _physical(t: pa.DataType) -> pa.DataType:
    """The Arrow type pyarrow's ORC writer is given for ``t``: times as int32 milliseconds."""
    if pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_physical(t.key_type)),
            t.item_field.with_type(_physical(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_physical(f.type)) for f in t])
    return t


def physical_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as lakeops hands it to pyarrow's ORC writer (TIME as ORC ``int``)."""
    return pa.schema([f.with_type(_physical(f.type)) for f in schema])


class OrcDataWriter:
    """pyarrow's ORC writer, given each table with :func:`physical_schema`'s types."""

    def __init__(self, writer: orc.ORCWriter) -> None:
        self._writer = writer

    def write(self, table: pa.Table) -> None:
        target = physical_schema(table.schema)
        self._writer.write(table if target == table.schema else table.cast(target))

    def close(self) -> None:
        self._writer.close()


def open_writer(sink: Any, compression: str, target_file_size: int) -> OrcDataWriter:
    """An ORC writer over ``sink`` with Paimon's settings (stripes no larger than the
    target file size, so a rolling writer sees the file grow)."""
    return OrcDataWriter(
        orc.ORCWriter(
            sink,
            compression=compression,
            stripe_size=max(1024 * 1024, min(STRIPE_SIZE, target_file_size)),
        )
    )


def unsliced(table: pa.Table) -> pa.Table:
    """``table`` with every array starting at offset 0: pyarrow's ORC writer ignores the
    offset of a sliced STRUCT array's children and would write other rows' values."""
    if all(chunk.offset == 0 for col in table.columns for chunk in col.chunks):
        return table
    return table.take(pa.array(np.arange(table.num_rows, dtype=np.int64)))


def _leaves(array: pa.Array) -> list[pa.Array]:
    """The timestamp arrays of sub-millisecond units inside ``array`` (nested ones included)."""
    t = array.type
    if pa.types.is_timestamp(t):
        return [array] if t.unit in _SUB_MILLI else []
    if pa.types.is_map(t):
        entries = pc.list_flatten(pa.ListArray.from_arrays(array.offsets, array.values))
        return _leaves(entries.field(0)) + _leaves(entries.field(1))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaves(pc.list_flatten(array))
    if pa.types.is_struct(t):
        return [leaf for child in array.flatten() for leaf in _leaves(child)]
    return []


def check_values(table: pa.Table, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when ``table`` holds a time Paimon's ORC reader
    cannot read back from lakeops' ORC files: before 1970 with a sub-millisecond part."""
    for name in table.column_names:
        for chunk in table.column(name).chunks:
            for leaf in _leaves(chunk):
                if leaf.type.unit not in _SUB_MILLI:
                    continue
                unit = _SUB_MILLI[leaf.type.unit]
                raw = leaf.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
                bad = (raw < 0) & (raw % unit != 0)
                if bool(np.any(bad)):
                    example = leaf.filter(pa.array(bad))[0]
                    raise UnsupportedFeatureError(
                        f"cannot {what} as ORC: column {name!r} holds {example} (a time before "
                        "1970 with a sub-millisecond part), which Java Paimon 0.9's ORC reader "
                        "cannot read from a file lakeops writes; use file.format = 'parquet' "
                        "(or 'file.format.per.level') for this table"
                    )
