"""Record-level expiry (``record-level.expire-time`` + ``record-level.time-field``).

During compaction, records whose time field is older than ``now - expire-time`` are dropped
before merging (null times never expire). The time field is INT/BIGINT seconds, BIGINT millis
with ``record-level.time-field-type = millis-long``, or a TIMESTAMP. A file needs rewriting
when the minimum of its time column (read from the Parquet footer) is already expired.
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.errors import CorruptDataFileError, MissingDataFileError
from lakeops.io.data_formats import format_of, reader_for
from lakeops.io.file_io import FileIO
from lakeops.options.compaction import CompactOptions

__all__ = ["RecordExpiry"]


class RecordExpiry:
    """The expiry rule of one table at one moment."""

    def __init__(self, options: CompactOptions, now_ms: int | None = None) -> None:
        assert options.expire_ms is not None and options.expire_field is not None
        self.field = options.expire_field
        self.kind = options.expire_field_type
        now = int(time.time() * 1000) if now_ms is None else now_ms
        self.threshold_ms = now - options.expire_ms

    def _threshold_for(self, arrow_type: pa.DataType) -> pa.Scalar:
        if pa.types.is_timestamp(arrow_type):
            value = dt.datetime.fromtimestamp(self.threshold_ms / 1000, tz=dt.UTC)
            return pa.scalar(
                value if arrow_type.tz else value.replace(tzinfo=None), type=arrow_type
            )
        if self.kind == "millis-long":
            return pa.scalar(self.threshold_ms, type=arrow_type)
        return pa.scalar(self.threshold_ms // 1000, type=arrow_type)

    def keep(self, records: pa.Table) -> pa.Table:
        """The records that have not expired."""
        column = records.column(self.field)
        expired = pc.less(column, self._threshold_for(column.type)).fill_null(False)
        return records.filter(pc.invert(expired))

    def file_has_expired(self, file_io: FileIO, path: str, column: str) -> bool:
        """Whether a data file holds an expired record, from the statistics of ``column`` (the
        name the time field has in that file). ORC and Avro files (whose statistics lakeops
        cannot read) have that column read instead. A file that cannot be read is a
        :class:`~lakeops.errors.CorruptDataFileError` naming it."""
        try:
            return self._file_has_expired(file_io, path, column)
        except FileNotFoundError:
            raise MissingDataFileError(f"data file {path} is missing", path=path) from None
        except (pa.ArrowException, OSError, EOFError) as exc:
            raise CorruptDataFileError(
                f"data file {path} cannot be read: {exc}", path=path
            ) from exc

    def _file_has_expired(self, file_io: FileIO, path: str, column: str) -> bool:
        if format_of(path) != "parquet":
            reader = reader_for(path.rsplit("/", 1)[-1], file_io.arrow_fs)
            if column not in reader.names(path):
                return False
            values = reader.read(path, [column]).column(column)
            expired = pc.less(values, self._threshold_for(values.type)).fill_null(False)
            return bool(pc.any(expired).as_py())
        meta = pq.ParquetFile(path, filesystem=file_io.arrow_fs).metadata
        names = meta.schema.names
        if column not in names:
            return False
        idx = names.index(column)
        arrow_type = meta.schema.to_arrow_schema().field(column).type
        threshold = self._threshold_for(arrow_type).as_py()
        for rg in range(meta.num_row_groups):
            stats = meta.row_group(rg).column(idx).statistics
            if stats is None or not stats.has_min_max:
                return True  # unknown: be safe and rewrite
            low = stats.min
            if (
                isinstance(low, dt.datetime)
                and isinstance(threshold, dt.datetime)
                and (low.tzinfo is None) != (threshold.tzinfo is None)
            ):
                low = low.replace(tzinfo=threshold.tzinfo)
            if low < threshold:
                return True
        return False
