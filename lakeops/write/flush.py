"""Flushing one (partition, bucket) buffer: sort, merge, encode and write level-0 files.

:func:`flush_bucket` is a function of its arguments alone: it reads the buffered batches and the
frozen :class:`FlushSettings`, writes new files into the bucket's directory and returns what it
wrote; it changes no state of the writer. Flushes of different buckets are therefore
independent of each other and of the order they run in. The only mutable object it touches is
the bucket's own :class:`~lakeops.store.locations.ExternalPaths` (which external root the next
file goes to), so two flushes of the same bucket must not run at once.

The buffered records are sorted by (key, sequence order); with ``changelog-producer = input``
they are first written as they are, as changelog files; then each key's records are merged by
the table's merge engine and written as rolling level-0 data files.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakeops.format.data_file import FILE_SOURCE_APPEND, DataFileMeta
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv.writer import KeyValueLayout, RollingFileWriter
from lakeops.merge import MergeEngine, merge_sorted, sort_records
from lakeops.merge.ordering import as_table
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths

__all__ = ["FlushSettings", "Flushed", "flush_bucket"]


@dataclass(frozen=True)
class FlushSettings:
    """What every flush of one table's writer needs."""

    file_io: FileIO
    schema: TableSchema
    engine: MergeEngine
    target_file_size: int
    key_names: tuple[str, ...]
    sequence_fields: tuple[str, ...]
    sequence_descending: bool
    #: ``changelog-producer = input``: the buffered records are written as changelog files too
    input_changelog: bool

    @functools.cached_property
    def data_layout(self) -> KeyValueLayout:
        """The layout of the level-0 data files (made once per settings: it holds no state
        of a file, so every flush of every bucket shares it)."""
        return KeyValueLayout(self.schema, 0)

    @functools.cached_property
    def changelog_layout(self) -> KeyValueLayout:
        """The layout of the changelog files (``changelog-producer = input``)."""
        return KeyValueLayout(self.schema, 0, changelog=True)

    @classmethod
    def of(cls, table: TableContext) -> FlushSettings:
        """The flush settings of ``table``."""
        schema, options = table.schema, table.options
        return cls(
            table.file_io,
            schema,
            table.engine,
            options.target_file_size,
            tuple(schema.trimmed_primary_keys),
            options.sequence_fields,
            options.sequence_descending,
            table.changelog.producer == "input",
        )


@dataclass(frozen=True)
class Flushed:
    """What one flush wrote."""

    #: the new level-0 data files
    files: tuple[DataFileMeta, ...]
    #: the new changelog files (``changelog-producer = input``)
    changelog: tuple[DataFileMeta, ...]
    #: the storage path of every file written
    written: tuple[str, ...]


def flush_bucket(
    batches: Sequence[pa.Table],
    settings: FlushSettings,
    directory: str,
    external: ExternalPaths | None = None,
) -> Flushed:
    """Write the buffered ``batches`` of the bucket in ``directory`` (``external``: where its
    files go when the table writes external paths); see the module docstring. On failure
    every file it wrote is deleted before the error propagates."""
    records = sort_records(
        as_table(batches),
        settings.key_names,
        settings.sequence_fields,
        settings.sequence_descending,
    )
    written: list[str] = []
    try:
        changelog: list[DataFileMeta] = []
        if settings.input_changelog:  # the input records, as they came
            changelog = _write(records, settings, directory, external, "changelog", written)
        # a writer's keys are mostly distinct: then the sorted records pass through unmerged
        merged = merge_sorted(records, settings.key_names, settings.engine)
        files = _write(merged, settings, directory, external, "data", written)
    except BaseException:
        for path in written:
            settings.file_io.delete(path)
        raise
    return Flushed(tuple(files), tuple(changelog), tuple(written))


def _write(
    records: pa.Table,
    settings: FlushSettings,
    directory: str,
    external: ExternalPaths | None,
    prefix: str,
    written: list[str],
) -> list[DataFileMeta]:
    """Key-sorted ``records`` as rolling level-0 files (``prefix`` ``changelog``: changelog
    files); every path opened is added to ``written`` as soon as it is opened."""
    writer = RollingFileWriter(
        settings.file_io,
        directory,
        settings.changelog_layout if prefix == "changelog" else settings.data_layout,
        settings.target_file_size,
        FILE_SOURCE_APPEND,
        external,
    )
    try:
        writer.write(records)
        return writer.close()
    finally:
        written.extend(writer.written)
