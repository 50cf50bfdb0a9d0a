"""Writing data files of both table kinds, with their metadata: one rolling writer whose layout
says what a file holds.

Each file is Parquet, ORC or Avro as the table asks for the level it is written at
(:mod:`lakeops.kv.formats`).

:class:`RollingFileWriter` streams batches into files of one (partition, bucket), rolling to a
new file once the current one reaches ``target-file-size`` on disk. Its layout is the table
kind's difference:

* :class:`KeyValueLayout`: a primary-key table's key-sorted records as key-value files
  (``_KEY_<k>…, _SEQUENCE_NUMBER, _VALUE_KIND`` plus the table's fields) at one level, each
  file's key range, key statistics, sequence range and delete count in its ``DataFileMeta``;
* :class:`AppendLayout`: an append table's rows as Paimon's ``RowDataRollingFileWriter`` writes
  them: the table's fields only (no ``_KEY_``, sequence or row-kind columns), in the format and
  codec the table's options give level 0. Its ``DataFileMeta`` is Paimon's
  ``DataFileMeta.forAppend``: empty min/max key and key statistics, the sequence numbers of its
  rows (one per row, consecutive from the layout's first, Paimon's ``LongCounter``), level 0,
  the file source (``APPEND`` for new data, ``COMPACT`` for compaction output), and value
  statistics of every field (``_VALUE_STATS_COLS`` null: all of them) as Paimon 0.9's writer
  keeps them for the file's format and the table's stats modes (:mod:`lakeops.kv.stats`), so
  filters prune the file.

:func:`write_runs` writes many small Parquet files of either layout at once — one file per run
of rows, each in a directory of its own (a flush of thousands of small buckets): the same files
and metadata a :class:`RollingFileWriter` per run writes, with the per-file metadata (key
range, key statistics, sequence range, delete count, value statistics, dictionary columns)
computed for every file in a few whole-array passes; only opening, encoding and closing each
file (and taking a Parquet file's string bounds from its footer) stay per file.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.format import binary_row
from lakeops.format.data_file import EMPTY_ROW, FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.format.kv import KIND, SEQ, RowKind, data_file_schema
from lakeops.format.schema import DataField, TableSchema
from lakeops.format.types import DataType
from lakeops.io.file_io import FileIO
from lakeops.kv import avro_layout, orc_layout
from lakeops.kv.file_index import INDEX_SUFFIX, FileIndexPlan, concat, plan_file_index
from lakeops.kv.formats import FileSettings, settings_for, writer_kwargs
from lakeops.kv.parquet_layout import (
    dictionary_columns,
    dictionary_columns_of_runs,
    writer_options,
)
from lakeops.kv.stats import (
    FileBounds,
    StatsCollector,
    collectors_of_runs,
    encode_stats,
    key_stats_of_runs,
    stats_modes,
)
from lakeops.store.locations import ExternalPaths, FileLocations

__all__ = [
    "AppendLayout",
    "KeyValueLayout",
    "RollingFileWriter",
    "TrackedAppendLayout",
    "local_millis",
    "RUN_ROWS_MAX",
    "write_runs",
    "writes_runs",
]

_ROWS_PER_WRITE = 65_536

#: the bytes :func:`write_runs` gathers before it writes them to a file
_WRITE_BUFFER = 1 << 20

RUN_ROWS_MAX = _ROWS_PER_WRITE
"""The most rows one run of :func:`write_runs` may hold: a run a rolling writer writes as one
chunk, so into exactly one file whatever the target file size."""


class _KeyValueFile:
    """What a key-value file's metadata needs of the records written to it."""

    def __init__(self, key_names: list[str], key_types: list[Any]) -> None:
        self.key_names, self.key_types = key_names, key_types
        self.rows = 0
        self.first_key: list[Any] | None = None
        self.last_key: list[Any] = []
        self.key_stats = StatsCollector(key_types)
        self.seq_min: int | None = None
        self.seq_max: int | None = None
        self.deletes = 0

    def update(self, records: pa.Table, _chunk: pa.Table) -> None:
        n = records.num_rows
        key_cols = [records.column(k) for k in self.key_names]
        if self.first_key is None:
            self.first_key = [c[0].as_py() for c in key_cols]
        self.last_key = [c[n - 1].as_py() for c in key_cols]
        self.key_stats.update(key_cols)
        seq = pc.min_max(records.column(SEQ))
        lo, hi = seq["min"].as_py(), seq["max"].as_py()
        self.seq_min = lo if self.seq_min is None else min(self.seq_min, lo)
        self.seq_max = hi if self.seq_max is None else max(self.seq_max, hi)
        kinds = records.column(KIND)
        retracts = pc.or_(pc.equal(kinds, RowKind.UPDATE_BEFORE), pc.equal(kinds, RowKind.DELETE))
        self.deletes += int(pc.sum(retracts).as_py() or 0)
        self.rows += n

    def meta(self, _footer: Any) -> dict[str, Any]:
        assert self.first_key is not None and self.seq_min is not None
        assert self.seq_max is not None
        return {
            "row_count": self.rows,
            "min_key": binary_row.serialize(self.first_key, self.key_types),
            "max_key": binary_row.serialize(self.last_key, self.key_types),
            "key_stats": self.key_stats.result(),
            "value_stats": SimpleStats(),
            "min_sequence_number": self.seq_min,
            "max_sequence_number": self.seq_max,
            "delete_row_count": self.deletes,
            "value_stats_cols": (),
        }


class KeyValueLayout:
    """Key-value files of a primary-key table at ``level`` (``changelog``: changelog files):
    records that sort after everything written so far (table fields, ``_SEQUENCE_NUMBER``,
    ``_VALUE_KIND``)."""

    def __init__(self, schema: TableSchema, level: int, *, changelog: bool = False) -> None:
        self.schema = schema
        self.level = level
        self.changelog = changelog
        self.file_schema = data_file_schema(schema)
        self.key_names = schema.trimmed_primary_keys
        self.key_types = schema.types_of(self.key_names)
        #: Parquet columns never dictionary-encoded (sequence numbers are unique and sorted)
        self.plain_columns: frozenset[str] = frozenset({SEQ})

    def chunk(self, records: pa.Table) -> pa.Table:
        """``records`` as the file's columns."""
        columns = [records.column(k) for k in self.key_names]
        columns += [records.column(SEQ), records.column(KIND)]
        columns += [records.column(field.name) for field in self.schema.fields]
        return pa.Table.from_arrays(columns, schema=self.file_schema)

    def new_file(self) -> _KeyValueFile:
        return _KeyValueFile(self.key_names, self.key_types)

    def runs_meta(self, records: pa.Table, offsets: np.ndarray) -> list[dict[str, Any]]:
        """What :meth:`_KeyValueFile.meta` gives for each of many files at once: file ``i``
        holds rows ``offsets[i]`` to ``offsets[i + 1]`` of the key-sorted ``records`` (each
        run non-empty), written as one chunk. Row count, key range (first and last key,
        serialized in one encode each), key statistics
        (:func:`~lakeops.kv.stats.key_stats_of_runs`), sequence range and the count of
        retractions (``-U``, ``-D``) of every file, in whole-array passes."""
        offsets = np.asarray(offsets, dtype=np.int64)
        starts = offsets[:-1]
        rows = np.diff(offsets)
        if np.any(rows <= 0):
            raise ValueError("every run of a file must hold rows")
        keys = []
        for name, t in zip(self.key_names, self.key_types, strict=True):
            column = records.column(name).combine_chunks()
            keys.append(column if column.type == t.to_arrow() else column.cast(t.to_arrow()))
        first, last = pa.array(starts), pa.array(offsets[1:] - 1)
        min_keys = binary_row.serialize_rows([c.take(first) for c in keys], self.key_types)
        max_keys = binary_row.serialize_rows([c.take(last) for c in keys], self.key_types)
        key_stats = key_stats_of_runs(keys, self.key_types, offsets)
        seq = np.asarray(records.column(SEQ).to_numpy(), dtype=np.int64)
        seq_min = np.minimum.reduceat(seq, starts).tolist()
        seq_max = np.maximum.reduceat(seq, starts).tolist()
        kinds = np.asarray(records.column(KIND).to_numpy(), dtype=np.int8)
        retracts = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        deletes = np.add.reduceat(retracts.astype(np.int64), starts).tolist()
        return [
            {
                "row_count": n,
                "min_key": min_keys[i],
                "max_key": max_keys[i],
                "key_stats": key_stats[i],
                "value_stats": SimpleStats(),
                "min_sequence_number": seq_min[i],
                "max_sequence_number": seq_max[i],
                "delete_row_count": deletes[i],
                "value_stats_cols": (),
            }
            for i, n in enumerate(rows.tolist())
        ]


class _AppendFile:
    """What an append file's metadata needs of the rows written to it."""

    def __init__(self, layout: AppendLayout) -> None:
        self.layout = layout
        self.rows = 0
        self.first_sequence = layout.next_sequence
        schema = layout.stats_schema
        self.stats = StatsCollector(
            [f.type for f in schema.fields], layout.stats_modes, layout.format, schema.field_names
        )

    def update(self, _records: pa.Table, chunk: pa.Table) -> None:
        self.stats.update(chunk.columns)
        self.rows += chunk.num_rows
        self.layout.next_sequence += chunk.num_rows

    def meta(self, footer: Any) -> dict[str, Any]:
        return {
            "row_count": self.rows,
            "min_key": EMPTY_ROW,
            "max_key": EMPTY_ROW,
            "key_stats": SimpleStats(),
            "value_stats": self.stats.result(footer),
            "min_sequence_number": self.first_sequence,
            "max_sequence_number": self.layout.next_sequence - 1,
            "delete_row_count": 0,
            "value_stats_cols": None,
        }


class AppendLayout:
    """An append table's files (see the module docstring): its fields, in schema order, rows
    numbered from ``first_sequence`` on (:attr:`next_sequence`: the number of the next row)."""

    def __init__(self, schema: TableSchema, first_sequence: int) -> None:
        self.schema = schema
        self.level = 0
        self.changelog = False
        #: Parquet columns never dictionary-encoded
        self.plain_columns: frozenset[str] = frozenset()
        self.next_sequence = first_sequence
        self.file_schema = schema.arrow_schema()
        self.format = settings_for(schema.options, 0).format
        #: the columns a file's value statistics cover
        self.stats_schema = schema
        self.stats_modes = stats_modes(schema.options, schema.field_names)

    def chunk(self, records: pa.Table) -> pa.Table:
        """``records`` (the table's fields, any order, maybe more) as the file's columns."""
        rows = records.select(self.file_schema.names)
        return pa.Table.from_arrays(list(rows.columns), schema=self.file_schema)

    def new_file(self) -> _AppendFile:
        return _AppendFile(self)

    def runs_collectors(self, chunks: pa.Table, offsets: np.ndarray) -> list[StatsCollector]:
        """The value statistics of many files at once, before their footers: file ``i``
        holds rows ``offsets[i]`` to ``offsets[i + 1]`` of ``chunks`` (the files' columns,
        :meth:`chunk`; each run non-empty), written as one chunk; its collector is in the
        state :meth:`_AppendFile.update` leaves a file's
        (:func:`~lakeops.kv.stats.collectors_of_runs`)."""
        schema = self.stats_schema
        types = [f.type for f in schema.fields]
        return collectors_of_runs(
            chunks.columns[: len(types)],
            offsets,
            types,
            self.stats_modes,
            self.format,
            schema.field_names,
        )

    def runs_meta(
        self, offsets: np.ndarray, bounds: Sequence[FileBounds], first_sequences: Sequence[int]
    ) -> list[dict[str, Any]]:
        """What :meth:`_AppendFile.meta` gives for each of many files at once: file ``i``
        holds rows ``offsets[i]`` to ``offsets[i + 1]``, numbered from ``first_sequences[i]``,
        and ``bounds[i]`` are its value statistics (:meth:`runs_collectors`, then
        :meth:`~lakeops.kv.stats.StatsCollector.bounds` with its footer), encoded here for
        all files together (:func:`~lakeops.kv.stats.encode_stats`)."""
        stats = encode_stats(bounds, [f.type for f in self.stats_schema.fields])
        rows = np.diff(np.asarray(offsets, dtype=np.int64)).tolist()
        return [
            {
                "row_count": n,
                "min_key": EMPTY_ROW,
                "max_key": EMPTY_ROW,
                "key_stats": SimpleStats(),
                "value_stats": value_stats,
                "min_sequence_number": first,
                "max_sequence_number": first + n - 1,
                "delete_row_count": 0,
                "value_stats_cols": None,
            }
            for n, value_stats, first in zip(rows, stats, first_sequences, strict=True)
        ]


#: Paimon's row-tracking system fields (``SpecialFields``): ids, names, BIGINT NOT NULL
TRACKED_FIELDS = (("_ROW_ID", 2**31 - 1 - 5), ("_SEQUENCE_NUMBER", 2**31 - 1 - 1))


class _TrackedAppendFile(_AppendFile):
    """An append file that also holds each row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER``: its
    statistics are of the table's fields only; its first row id is its first row's id and its
    sequence range that of its rows' sequence numbers (Paimon's
    ``RowDataFileSequenceNumberTracker`` in row-tracking mode)."""

    def __init__(self, layout: TrackedAppendLayout) -> None:
        super().__init__(layout)
        self.fields = len(layout.stats_schema.fields)
        self.first_row_id: int | None = None
        self.sequences: list[tuple[int, int]] = []

    def update(self, _records: pa.Table, chunk: pa.Table) -> None:
        if not chunk.num_rows:
            return
        self.stats.update(chunk.columns[: self.fields])
        if self.first_row_id is None:
            self.first_row_id = int(chunk.column(self.fields)[0].as_py())
        bounds = pc.min_max(chunk.column(self.fields + 1))
        self.sequences.append((int(bounds["min"].as_py()), int(bounds["max"].as_py())))
        self.rows += chunk.num_rows

    def meta(self, footer: Any) -> dict[str, Any]:
        out = super().meta(footer)
        out["min_sequence_number"] = min(lo for lo, _ in self.sequences)
        out["max_sequence_number"] = max(hi for _, hi in self.sequences)
        out["first_row_id"] = self.first_row_id
        out["write_cols"] = tuple(self.layout.schema.field_names)
        return out


class TrackedAppendLayout(AppendLayout):
    """The files a row-tracking append table's compaction writes (Paimon's compaction writes
    with ``SpecialFields.rowTypeWithRowTracking``): the table's fields, then ``_ROW_ID`` and
    ``_SEQUENCE_NUMBER`` as physical columns, named in the files' ``_WRITE_COLS``. Rows given
    to it carry both columns; a file's rows must hold consecutive row ids (the caller's
    duty), so its ``_FIRST_ROW_ID`` (its first row's id) gives every row its id in readers
    that derive ids from it."""

    def __init__(self, schema: TableSchema, first_sequence: int) -> None:
        bigint = DataType.parse("BIGINT NOT NULL")
        tracked = tuple(DataField(i, name, bigint) for name, i in TRACKED_FIELDS)
        super().__init__(replace(schema, fields=(*schema.fields, *tracked)), first_sequence)
        self.plain_columns = frozenset(name for name, _ in TRACKED_FIELDS)  # unique numbers
        self.stats_schema = schema
        self.stats_modes = stats_modes(schema.options, schema.field_names)

    def new_file(self) -> _AppendFile:
        return _TrackedAppendFile(self)


class _OpenFile:
    """State of the file being written."""

    def __init__(
        self,
        path: str,
        name: str,
        writer: Any,
        sink: Any,
        external_path: str | None,
        content: _KeyValueFile | _AppendFile,
    ) -> None:
        self.path, self.name, self.writer, self.sink = path, name, writer, sink
        self.external_path = external_path
        self.content = content
        #: the indexed columns' values written so far (when the table asks for file indexes)
        self.indexed: dict[str, list[pa.Array | pa.ChunkedArray]] = {}


class RollingFileWriter:
    """Streams batches into rolling files of one bucket directory, as ``layout`` lays them
    out (see the module docstring)."""

    def __init__(
        self,
        file_io: FileIO,
        directory: str,
        layout: KeyValueLayout | AppendLayout,
        target_file_size: int,
        file_source: int = FILE_SOURCE_APPEND,
        external: ExternalPaths | None = None,
        name_token: str | None = None,
    ) -> None:
        self.file_io = file_io
        self.directory = directory
        self.layout = layout
        self.schema = schema = layout.schema
        #: names and places files as the table's options say (prefixes, external paths)
        self.locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
        self.external = external
        #: the job token new file names carry (:meth:`FileLocations.new_name`); None: random
        self.name_token = name_token
        self.target_file_size = target_file_size
        self.file_source = file_source
        # the format and codec Paimon gives this level (refuses a format lakeops cannot write)
        self.settings: FileSettings = settings_for(
            schema.options, layout.level, changelog=layout.changelog
        )
        # Paimon's physical types; refuses (before any file is opened) what cannot match them
        self.parquet_options = writer_options(schema) if self.settings.format == "parquet" else {}
        #: the encodings of the file being opened (Parquet: :func:`dictionary_columns`)
        self._encoding: dict[str, Any] = {}
        if self.settings.format == "avro":
            avro_layout.check_writable(schema)
        #: the file indexes each file gets (none in changelog files, as Paimon writes them)
        self.file_index: FileIndexPlan | None = (
            None if layout.changelog else plan_file_index(schema)
        )
        #: the storage path of every file opened (for an abort)
        self.written: list[str] = []
        self.files: list[DataFileMeta] = []
        self._open: _OpenFile | None = None

    def write(self, records: pa.Table) -> None:
        """Append ``records`` after everything written so far."""
        for start in range(0, records.num_rows, _ROWS_PER_WRITE):
            part = records.slice(start, _ROWS_PER_WRITE)
            chunk = self.layout.chunk(part)
            if self.settings.format == "orc":
                orc_layout.check_values(chunk)  # (before the file is opened)
                chunk = orc_layout.unsliced(chunk)
            if self._open is None and self.settings.format == "parquet":
                # each new file's dictionary columns, from the first batch it gets
                self._encoding = {
                    "use_dictionary": dictionary_columns(chunk, self.layout.plain_columns)
                }
            f = self._open or self._start()
            f.writer.write(chunk)
            f.content.update(part, chunk)
            if self.file_index is not None:
                for name in self.file_index.columns:
                    f.indexed.setdefault(name, []).append(part.column(name))
            if f.sink.tell() >= self.target_file_size:
                self._finish()

    def _start(self) -> _OpenFile:
        name = self.locations.new_name(
            changelog=self.layout.changelog,
            extension=self.settings.extension,
            token=self.name_token,
        )
        new = self.locations.new_file(self.directory, name, self.external)
        path = new.path
        self.written.append(path)
        sink = self.file_io.open_output_stream(path)  # (makes a missing directory)
        writer = open_format_writer(
            sink,
            self.settings,
            self.schema,
            self.layout.file_schema,
            self.target_file_size,
            **self._encoding,
            **self.parquet_options,
        )
        self._open = _OpenFile(path, name, writer, sink, new.external_path, self.layout.new_file())
        return self._open

    def _finish(self) -> None:
        f = self._open
        if f is None:
            return
        self._open = None
        f.writer.close()
        f.sink.close()
        footer = f.writer.writer.metadata if self.settings.format == "parquet" else None
        embedded, extra = self._write_index(f)
        self.files.append(
            DataFileMeta(
                file_name=f.name,
                file_size=self.file_io.size(f.path),
                schema_id=self.schema.id,
                level=self.layout.level,
                creation_time_millis=local_millis(),
                file_source=self.file_source,
                external_path=f.external_path,
                embedded_file_index=embedded,
                extra_files=extra,
                **f.content.meta(footer),
            )
        )

    def _write_index(self, f: _OpenFile) -> tuple[bytes | None, tuple[str, ...]]:
        """The file indexes of ``f`` (see :func:`_place_index`)."""
        if self.file_index is None:
            return None, ()
        return _place_index(
            self.file_io, self.file_index, self.schema, f.path, f.name, f.indexed, self.written
        )

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; the metadata of every file written."""
        self._finish()
        return self.files

    def abort(self) -> None:
        """Delete every file this writer wrote."""
        if self._open is not None:
            self._open.writer.close()
            self._open.sink.close()
            self._open = None
        for path in self.written:
            self.file_io.delete(path)
        self.written.clear()
        self.files.clear()


def _place_index(
    file_io: FileIO,
    plan: FileIndexPlan,
    schema: TableSchema,
    path: str,
    name: str,
    indexed: Mapping[str, Sequence[pa.Array | pa.ChunkedArray]],
    written: list[str],
) -> tuple[bytes | None, tuple[str, ...]]:
    """The file indexes of the data file ``name`` at ``path`` whose indexed columns hold the
    parts ``indexed``: embedded (the container) when at most the table's in-manifest
    threshold, else written as ``<data file>.index`` next to the data file (its path added to
    ``written``; the name returned, for ``_EXTRA_FILES``)."""
    fields = {field.name: field.type for field in schema.fields}
    columns = {
        column: concat(list(indexed.get(column, [])), fields[column].to_arrow())
        for column in plan.columns
    }
    embedded, container = plan.place(columns)
    if container is None:
        return embedded, ()
    index_path = path + INDEX_SUFFIX
    written.append(index_path)
    file_io.write_bytes(index_path, container)
    return None, (name + INDEX_SUFFIX,)


def writes_runs(layout: KeyValueLayout | AppendLayout) -> bool:
    """Whether :func:`write_runs` writes the files of ``layout``: key-value files (data or
    changelog) or an append table's files (not a compaction's row-tracking files), in
    Parquet at the layout's level."""
    if isinstance(layout, TrackedAppendLayout):
        return False
    options = layout.schema.options
    return settings_for(options, layout.level, changelog=layout.changelog).format == "parquet"


def write_runs(
    file_io: FileIO,
    layout: KeyValueLayout | AppendLayout,
    records: pa.Table,
    offsets: np.ndarray,
    places: Sequence[tuple[str, ExternalPaths | None]],
    written: Sequence[list[str]],
    file_source: int = FILE_SOURCE_APPEND,
    name_token: str | None = None,
    first_sequences: Sequence[int] | None = None,
) -> list[DataFileMeta]:
    """One file per run of ``records``: run ``i`` (rows ``offsets[i]`` to ``offsets[i + 1]``,
    at least one and at most :data:`RUN_ROWS_MAX`) into the directory ``places[i][0]``
    (``places[i][1]``: the external paths of its bucket, or None) — the file, and the
    ``DataFileMeta``, that a :class:`RollingFileWriter` of that directory writes when given
    those rows in one call (:func:`writes_runs` must hold for ``layout``; key-value records
    key-sorted; an append layout numbers run ``i``'s rows from ``first_sequences[i]``, and
    its own :attr:`AppendLayout.next_sequence` is left as it is). Every file's dictionary
    columns and metadata are computed for all files together
    (:func:`dictionary_columns_of_runs`, :meth:`KeyValueLayout.runs_meta`,
    :meth:`AppendLayout.runs_meta`); the files are written one after another. Every path
    opened for run ``i`` is added to ``written[i]`` as soon as it is opened (the caller
    deletes them on failure); the metadata of every file comes back in run order."""
    offsets = np.asarray(offsets, dtype=np.int64)
    rows = np.diff(offsets)
    if len(places) != len(rows) or len(written) != len(rows):
        raise ValueError(f"{len(places)} directories, {len(written)} lists for {len(rows)} runs")
    if len(rows) and (rows.min() <= 0 or rows.max() > RUN_ROWS_MAX):
        raise ValueError(f"every run must hold 1 to {RUN_ROWS_MAX} rows")
    if not writes_runs(layout):
        raise ValueError("write_runs writes Parquet key-value and append files only")
    if isinstance(layout, AppendLayout) and (
        first_sequences is None or len(first_sequences) != len(rows)
    ):
        raise ValueError("an append layout needs the first sequence number of every run")
    if not len(rows):
        return []
    schema = layout.schema
    settings = settings_for(schema.options, layout.level, changelog=layout.changelog)
    options = {**writer_kwargs(settings), **writer_options(schema)}
    plan = None if layout.changelog else plan_file_index(schema)
    locations = FileLocations("", schema.options, file_io.protocol, file_io.is_local)
    # (not combined: each run's slice is chunked as the records it was given)
    chunks = layout.chunk(records)
    encodings = dictionary_columns_of_runs(chunks, offsets, layout.plain_columns)
    # the statistics of every file, but what an append file takes from its footer
    collectors = (
        None if isinstance(layout, KeyValueLayout) else layout.runs_collectors(chunks, offsets)
    )
    bounds: list[FileBounds] = []
    files: list[dict[str, Any]] = []
    for i, ((directory, external), start, n) in enumerate(
        zip(places, offsets[:-1].tolist(), rows.tolist(), strict=True)
    ):
        name = locations.new_name(
            changelog=layout.changelog, extension=settings.extension, token=name_token
        )
        new = locations.new_file(directory, name, external)
        written[i].append(new.path)
        sink = file_io.open_output_stream(new.path)  # (makes a missing directory)
        # the Parquet writer writes (and asks the position) per page and per column chunk: a
        # buffer makes that one write of a small file instead of dozens of system calls
        out = pa.BufferedOutputStream(sink, _WRITE_BUFFER)
        try:
            writer = pq.ParquetWriter(
                out, layout.file_schema, use_dictionary=encodings[i], **options
            )
            writer.write(chunks.slice(start, n))
            writer.close()
        finally:
            out.close()  # (flushes, and closes the file)
            sink.close()
        if collectors is not None:  # (bounds taken now: no footer outlives its file)
            bounds.append(collectors[i].bounds(writer.writer.metadata))
        embedded: bytes | None = None
        extra: tuple[str, ...] = ()
        if plan is not None:
            part = records.slice(start, n)
            indexed = {column: [part.column(column)] for column in plan.columns}
            embedded, extra = _place_index(
                file_io, plan, schema, new.path, name, indexed, written[i]
            )
        files.append(
            {
                "file_name": name,
                "file_size": file_io.size(new.path),
                "schema_id": schema.id,
                "level": layout.level,
                "creation_time_millis": local_millis(),
                "file_source": file_source,
                "external_path": new.external_path,
                "embedded_file_index": embedded,
                "extra_files": extra,
            }
        )
    if isinstance(layout, KeyValueLayout):
        metas = layout.runs_meta(records, offsets)
    else:
        assert first_sequences is not None
        metas = layout.runs_meta(offsets, bounds, first_sequences)
    return [DataFileMeta(**f, **meta) for f, meta in zip(files, metas, strict=True)]


def open_format_writer(
    sink: Any,
    settings: FileSettings,
    schema: TableSchema,
    arrow_schema: pa.Schema,
    target_file_size: int,
    **parquet_options: Any,
) -> Any:
    """A writer of one data file over ``sink`` in the format ``settings`` names: ORC (stripes
    bounded by ``target_file_size``), Avro (Paimon's row type of ``schema``: key-value rows for
    a primary-key table, the fields for an append table), else Parquet of ``arrow_schema`` with
    the codec of ``settings`` and ``parquet_options``."""
    if settings.format == "orc":
        return orc_layout.open_writer(sink, settings.compression, target_file_size)
    if settings.format == "avro":
        level = settings.zstd_level if settings.compression == "zstandard" else None
        return avro_layout.open_writer(sink, schema, settings.compression, level)
    return pq.ParquetWriter(sink, arrow_schema, **writer_kwargs(settings), **parquet_options)


def local_millis() -> int:
    """Wall-clock local time as epoch millis, as Paimon stores ``_CREATION_TIME``."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)
