"""Writing merged, sorted records as Paimon key-value Parquet files, with their metadata."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.io.file_io import FileIO, join
from lakeops.spec import binary_row
from lakeops.spec.data_file import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.spec.kv import KIND, SEQ, RowKind, key_column
from lakeops.spec.paths import data_file_name
from lakeops.spec.schema import TableSchema

__all__ = ["KeyValueFileWriter", "data_file_schema"]


def data_file_schema(schema: TableSchema) -> pa.Schema:
    """``_KEY_<k>…, _SEQUENCE_NUMBER, _VALUE_KIND`` then every table field."""
    keys = [
        pa.field(key_column(k), schema.field(k).type.to_arrow(), False)
        for k in schema.trimmed_primary_keys
    ]
    system = [pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
    return pa.schema(keys + system + list(schema.arrow_schema()))


class KeyValueFileWriter:
    """Writes level-N files for one (partition, bucket), rolling at ``target_file_size``.

    Args:
        file_io: storage.
        table_root: path of the table.
        bucket_path: directory of the bucket, relative to the table root.
        schema: the table schema the records follow.
        target_file_size: roll to a new file past this many (uncompressed Arrow) bytes.
    """

    def __init__(
        self,
        file_io: FileIO,
        table_root: str,
        bucket_path: str,
        schema: TableSchema,
        target_file_size: int,
    ) -> None:
        self.file_io = file_io
        self.directory = join(table_root, bucket_path)
        self.schema = schema
        self.target_file_size = target_file_size
        self.file_schema = data_file_schema(schema)
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        self.written: list[str] = []
        # keys and sequence numbers are unique and sorted: dictionaries only cost time there
        self.dictionary_columns = [
            f.name for f in schema.fields if f.name not in schema.trimmed_primary_keys
        ] + [KIND]

    def write(
        self, records: pa.Table, level: int = 0, file_source: int = FILE_SOURCE_APPEND
    ) -> list[DataFileMeta]:
        """Write key-sorted, merged ``records`` (fields + ``_SEQUENCE_NUMBER`` +
        ``_VALUE_KIND``) and return one :class:`DataFileMeta` per file."""
        if records.num_rows == 0:
            return []
        bytes_per_row = max(records.nbytes / records.num_rows, 1.0)
        rows_per_file = max(int(self.target_file_size / bytes_per_row), 1)
        return [
            self._write_file(records.slice(start, rows_per_file), level, file_source)
            for start in range(0, records.num_rows, rows_per_file)
        ]

    def _write_file(self, records: pa.Table, level: int, file_source: int) -> DataFileMeta:
        columns = [records.column(k) for k in self.key_names]
        columns += [records.column(SEQ), records.column(KIND)]
        columns += [records.column(f.name) for f in self.schema.fields]
        table = pa.Table.from_arrays(columns, schema=self.file_schema)
        name = data_file_name()
        path = join(self.directory, name)
        self.file_io.mkdirs(self.directory)
        self.written.append(path)
        pq.write_table(
            table, path, filesystem=self.file_io.arrow_fs, compression="zstd", compression_level=1
        )
        n = table.num_rows
        key_cols = [records.column(k) for k in self.key_names]
        min_key = binary_row.serialize([c[0].as_py() for c in key_cols], self.key_types)
        max_key = binary_row.serialize([c[n - 1].as_py() for c in key_cols], self.key_types)
        mins, maxs = [], []
        for c in key_cols:
            mm = pc.min_max(c)
            mins.append(mm["min"].as_py())
            maxs.append(mm["max"].as_py())
        key_stats = SimpleStats(
            binary_row.serialize(mins, self.key_types),
            binary_row.serialize(maxs, self.key_types),
            tuple(0 for _ in key_cols),
        )
        seq = pc.min_max(records.column(SEQ))
        kinds = records.column(KIND)
        deletes = (
            pc.sum(
                pc.or_(pc.equal(kinds, RowKind.UPDATE_BEFORE), pc.equal(kinds, RowKind.DELETE))
            ).as_py()
            or 0
        )
        return DataFileMeta(
            file_name=name,
            file_size=self.file_io.size(path),
            row_count=n,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=SimpleStats(),
            min_sequence_number=seq["min"].as_py(),
            max_sequence_number=seq["max"].as_py(),
            schema_id=self.schema.id,
            level=level,
            creation_time_millis=_local_millis(),
            delete_row_count=int(deletes),
            file_source=file_source,
            value_stats_cols=(),
        )

    def abort(self) -> None:
        """Delete every file this writer wrote."""
        for path in self.written:
            self.file_io.delete(path)
        self.written.clear()


def _local_millis() -> int:
    """Wall-clock local time as epoch millis, as Paimon stores ``_CREATION_TIME``."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)
