"""Re-sequencing a writer's new files above what other commits added to the same bucket.

A writer numbers its records from the largest sequence number live in its base snapshot. When
another commit added files to the same bucket after that base, both writers' numbers overlap,
and the merge would order their records by chance (and a later compaction could flip the
winner). Before such a commit is published, its new level-0 files are rewritten with every
sequence number raised by one offset: the records keep their relative order and all sort above
the other commit's. Only the ``_SEQUENCE_NUMBER`` column and the file metadata's sequence range
change; keys, values, row kinds, level and file source stay as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import SEQ
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv.reader import KeyValueReader
from lakeops.kv.writer import KeyValueLayout, RollingFileWriter
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations

__all__ = ["Resequenced", "resequence_files"]

#: files are rewritten one for one: never roll
_NO_ROLL = 1 << 62


@dataclass
class Resequenced:
    """The rewritten files of one bucket and the storage paths written for them."""

    files: list[DataFileMeta] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def resequence_files(
    store: TableStore,
    schema: TableSchema,
    partition: bytes,
    bucket: int,
    files: Sequence[DataFileMeta],
    offset: int,
) -> Resequenced:
    """Copies of ``files`` (new files of one bucket, written under ``schema``) with every
    sequence number raised by ``offset`` (> 0), written beside the originals (same bucket
    directory, or the table's external paths). The originals are left alone."""
    if offset <= 0:
        raise ValueError(f"re-sequencing needs a positive offset, not {offset}")
    file_io: FileIO = store.file_io
    locations = FileLocations.of(file_io, store.root, schema)
    directory = locations.bucket_path(partition, bucket)
    external = locations.external_paths_of(partition, bucket)
    reader = KeyValueReader(file_io, schema, store.schema, store.root)
    values = [f.name for f in schema.fields]
    out = Resequenced()
    try:
        for f in files:
            records = reader.read(directory, f, values)
            shifted = pc.add(records.column(SEQ), pa.scalar(offset, pa.int64()))
            records = records.set_column(records.schema.get_field_index(SEQ), SEQ, shifted)
            writer = RollingFileWriter(
                file_io,
                directory,
                KeyValueLayout(schema, f.level),
                _NO_ROLL,
                f.file_source if f.file_source is not None else 0,
                external,
            )
            try:
                writer.write(records)
                written = writer.close()
            finally:
                out.paths.extend(writer.written)
            out.files.extend(written)
    except BaseException:
        for path in out.paths:
            file_io.delete(path)
        raise
    return out
