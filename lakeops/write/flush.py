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

:func:`flush_buckets` flushes many small buckets together (a write to thousands of partitions):
their records are sorted once by (bucket, key, sequence order), merged once, and written one
file per bucket by :func:`~lakeops.kv.writer.write_runs`, whose per-file metadata is computed
for all files in whole-array passes. Each bucket gets the files, and the metadata, that
:func:`flush_bucket` writes for it alone (file names aside, which are random);
:func:`runs_fit` says which buckets it takes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakeops.format.data_file import FILE_SOURCE_APPEND, DataFileMeta
from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.kv.writer import (
    RUN_ROWS_MAX,
    KeyValueLayout,
    RollingFileWriter,
    write_runs,
    writes_runs,
)
from lakeops.merge import MergeEngine, merge_sorted, sort_records
from lakeops.merge.ordering import as_table, group_starts, merge_groups
from lakeops.store.context import TableContext
from lakeops.store.locations import ExternalPaths

__all__ = ["FlushSettings", "Flushed", "flush_bucket", "flush_buckets", "runs_fit"]

#: the column :func:`flush_buckets` tags each record with its bucket's position in
_RUN = "__lakeops_flush_run"


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

    @functools.cached_property
    def writes_runs(self) -> bool:
        """Whether :func:`flush_buckets` can flush buckets of these settings (its files are
        Parquet key-value files, changelog files too when the input is one)."""
        return writes_runs(self.data_layout) and (
            not self.input_changelog or writes_runs(self.changelog_layout)
        )

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


def runs_fit(batches: Sequence[pa.Table], settings: FlushSettings) -> bool:
    """Whether :func:`flush_buckets` takes a bucket whose buffer holds ``batches``: one file of
    each kind holds all of its records (at most :data:`~lakeops.kv.writer.RUN_ROWS_MAX`, one
    chunk of a rolling writer), its files are Parquet (:attr:`FlushSettings.writes_runs`),
    and no field is named like the column that tags the buckets."""
    if not settings.writes_runs or not batches or _RUN in batches[0].column_names:
        return False
    rows = int(sum(b.num_rows for b in batches))
    return 0 < rows <= RUN_ROWS_MAX


def flush_buckets(
    buckets: Sequence[tuple[Sequence[pa.Table], str, ExternalPaths | None]],
    settings: FlushSettings,
) -> list[Flushed]:
    """Flush many buckets together: ``buckets`` holds, per bucket, its buffered batches (each
    bucket's for which :func:`runs_fit` holds), its directory and its external paths (or
    None). What comes back, in the order of ``buckets``, is what :func:`flush_bucket` returns
    for each (see the module docstring): the records of all buckets are sorted in one sort by
    (bucket, key, sequence order) — each bucket's records in the order its own sort gives
    them — its key groups merged in one call of the engine (a group never spans two buckets),
    and every bucket's files written by :func:`~lakeops.kv.writer.write_runs`. On failure
    every file it wrote, of every bucket, is deleted before the error propagates."""
    if not buckets:
        return []
    sizes = np.array([sum(b.num_rows for b in batches) for batches, _, _ in buckets], np.int64)
    if np.any(sizes <= 0) or np.any(sizes > RUN_ROWS_MAX):
        raise ValueError(f"every bucket must hold 1 to {RUN_ROWS_MAX} records")
    places = [(directory, external) for _, directory, external in buckets]
    count = len(buckets)
    records = as_table([b for batches, _, _ in buckets for b in batches])
    runs = np.repeat(np.arange(count, dtype=np.int32), sizes)
    keys = (_RUN, *settings.key_names)
    tagged = sort_records(
        records.append_column(_RUN, pa.array(runs)),
        keys,
        settings.sequence_fields,
        settings.sequence_descending,
    )
    sorted_runs = np.asarray(tagged.column(_RUN).to_numpy(), dtype=np.int64)
    starts = group_starts(tagged, keys)
    records = tagged.drop_columns([_RUN])
    written: list[list[str]] = [[] for _ in range(count)]
    try:
        changelog: list[list[DataFileMeta]] = [[] for _ in range(count)]
        if settings.input_changelog:  # the input records, as they came
            changelog = _per_run(
                write_runs(
                    settings.file_io,
                    settings.changelog_layout,
                    records,
                    _run_offsets(sorted_runs, count),
                    places,
                    written,
                )
            )
        merged = merge_groups(records, starts, settings.engine)
        files = write_runs(
            settings.file_io,
            settings.data_layout,
            merged,
            _run_offsets(sorted_runs[starts], count),
            places,
            written,
        )
    except BaseException:
        for paths in written:
            for path in paths:
                settings.file_io.delete(path)
        raise
    return [
        Flushed((data,), tuple(log), tuple(paths))
        for data, log, paths in zip(files, changelog, written, strict=True)
    ]


def _run_offsets(runs: np.ndarray, count: int) -> np.ndarray:
    """Where each run starts in rows tagged with ascending run numbers ``runs`` (``count``
    runs, each present), and where the last one ends."""
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(runs, minlength=count), out=offsets[1:])
    return offsets


def _per_run(files: list[DataFileMeta]) -> list[list[DataFileMeta]]:
    """One file per run, as lists (a bucket's changelog files)."""
    return [[f] for f in files]
