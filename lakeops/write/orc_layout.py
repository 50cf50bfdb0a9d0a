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
do on its own files. ORC keeps every timestamp to the nanosecond, so any precision is exact.

Columns are matched by name (pyarrow writes the real field names, as Paimon does).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.orc as orc

from lakeops.errors import UnsupportedFeatureError
from lakeops.spec.schema import TableSchema

__all__ = ["check_writable", "open_writer"]

#: ORC stripe size (Paimon leaves ORC's default, 64 MiB, unless 'file.block-size' is set)
STRIPE_SIZE = 64 * 1024 * 1024


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when pyarrow's ORC writer cannot write a data
    file of ``schema`` (tried on an empty file in memory, nothing touches the table)."""
    from lakeops.write.file_writer import data_file_schema  # (file_writer imports this module)

    file_schema = data_file_schema(schema)
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


def open_writer(sink: Any, compression: str, target_file_size: int) -> orc.ORCWriter:
    """A pyarrow ORC writer over ``sink`` with Paimon's settings (stripes no larger than the
    target file size, so a rolling writer sees the file grow)."""
    return orc.ORCWriter(
        sink,
        compression=compression,
        stripe_size=max(1024 * 1024, min(STRIPE_SIZE, target_file_size)),
    )
