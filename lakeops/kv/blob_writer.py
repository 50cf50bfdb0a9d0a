"""The ``.blob`` files of one BLOB column of rows an append writer flushes, as Paimon's
``BlobWriter`` / pypaimon's ``BlobWriter`` lay them out (:mod:`lakeops.format.blob_file`).

The rows' values are cut, in order, into files of about ``target_size`` bytes of values each
(a file closes once its values reach the target; a file holds one row at least); each file's
entry names the column in ``_WRITE_COLS``, carries no value statistics
(``_VALUE_STATS_COLS`` empty), no first row id (the commit gives it the ids of the data file
it follows: :mod:`lakeops.commit.row_ids`) and the sequence numbers of its rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.blob_file import BLOB_EXTENSION, encode_blob_file
from lakeops.format.data_file import EMPTY_ROW, FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv.writer import local_millis
from lakeops.store.locations import ExternalPaths, FileLocations

__all__ = ["write_blob_files"]


def _cuts(values: pa.Array | pa.ChunkedArray, target_size: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of each file's rows: a file closes once its values reach
    ``target_size`` bytes."""
    n = len(values)
    if n == 0:
        return []
    sizes = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    total = np.cumsum(sizes.astype(np.int64))
    cuts, start, base = [], 0, 0
    while start < n:
        # the first row whose running total reaches the target closes the file
        end = int(np.searchsorted(total, base + target_size, side="left")) + 1
        end = min(max(end, start + 1), n)
        cuts.append((start, end - start))
        base = int(total[end - 1])
        start = end
    return cuts


def write_blob_files(
    file_io: FileIO,
    directory: str,
    external: ExternalPaths | None,
    schema: TableSchema,
    column: str,
    values: pa.Array | pa.ChunkedArray,
    first_sequence: int,
    target_size: int,
    written: list[str],
    *,
    placeholders: np.ndarray | None = None,
    first_row_id: int | None = None,
) -> list[DataFileMeta]:
    """Write ``values`` (the BLOB ``column`` of consecutive rows numbered from
    ``first_sequence``) as ``.blob`` files of the bucket in ``directory``; every path is
    appended to ``written`` before it is written (for an abort). ``placeholders``: rows
    written as placeholders (an update of the column: those rows keep their older value);
    ``first_row_id``: the row id of the first row (an update: each file's entry takes the id
    of its first row; else the commit gives them)."""
    locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
    out = []
    for offset, length in _cuts(values, target_size):
        held = placeholders[offset : offset + length] if placeholders is not None else None
        data = encode_blob_file(values.slice(offset, length), held)
        new = locations.new_file(
            directory, locations.new_name(changelog=False, extension=BLOB_EXTENSION), external
        )
        written.append(new.path)
        file_io.write_bytes(new.path, data)
        out.append(
            DataFileMeta(
                file_name=new.name,
                file_size=len(data),
                row_count=length,
                min_key=EMPTY_ROW,
                max_key=EMPTY_ROW,
                key_stats=SimpleStats(),
                value_stats=SimpleStats(),
                min_sequence_number=first_sequence + offset,
                max_sequence_number=first_sequence + offset + length - 1,
                schema_id=schema.id,
                level=0,
                creation_time_millis=local_millis(),
                file_source=FILE_SOURCE_APPEND,
                value_stats_cols=(),
                external_path=new.external_path,
                write_cols=(column,),
                first_row_id=None if first_row_id is None else first_row_id + offset,
            )
        )
    return out
