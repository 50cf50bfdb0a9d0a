"""Row tracking and data evolution of append tables, read as Paimon reads them.

**Row tracking** (``row-tracking.enabled``): every row has a row id and a sequence number,
selectable as the system columns ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (BIGINT NOT NULL). A
file's manifest entry carries ``_FIRST_ROW_ID``; a row's ``_ROW_ID`` is the value the file
holds in a physical ``_ROW_ID`` column where it has one and it is not null, else
``first_row_id`` + the row's position in the file. Its ``_SEQUENCE_NUMBER`` likewise falls back
to the file's ``max_sequence_number`` (Paimon's ``DataFileRecordReader`` /
``ColumnarRowIterator.assignRowTracking``).

**Data evolution** (``data-evolution.enabled``): a file may hold only some columns of rows
that other files complete (``_WRITE_COLS``: the columns it was written with, named as in the
schema of its ``schema_id``; none: every field of that schema). Paimon's
``DataEvolutionSplitRead``:

* files whose row-id ranges ``[first_row_id, first_row_id + row_count)`` overlap form one
  **group**, and every data file of a group must cover the same range;
* in a group, files are ordered by ``max_sequence_number``, newest first (ties keep manifest
  order); each column (matched by field id) comes from the newest file that holds it, a column
  no file holds reads as nulls; ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (which every file holds)
  come from the newest file;
* a file without a first row id is a group of its own;
* a BLOB file (``*.blob``: one BLOB column of some rows, :mod:`lakeops.format.blob_file`)
  belongs to the group whose rows it holds and supplies that column: a row's value comes from
  the newest of its BLOB files (by ``max_sequence_number``; files of one number, a rolled
  write, do not overlap) that holds a value for it — null included — rather than a
  placeholder, which an update of the column writes for the rows it leaves (pypaimon's
  ``BlobFallbackBatchReader``); a row no file holds a value for is null.

Filters never prune one file of a group (a sibling may supply the columns it lacks): pruning
by value statistics takes, per filtered column, the statistics of the file that supplies it
in the group, and only from files written with every column (a partial file's statistics are
left aside; a compaction's file, which names every field and the system columns in
``_WRITE_COLS``, counts as complete).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.blob_file import is_blob_file
from lakeops.format.data_file import DataFileMeta
from lakeops.format.schema import TableSchema
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.expression import Stats
from lakeops.read.predicate import RowFilter
from lakeops.read.stats import value_stats

__all__ = [
    "ROW_ID",
    "SEQUENCE_NUMBER",
    "SYSTEM_FIELDS",
    "GroupReader",
    "data_evolution",
    "row_id_groups",
    "row_tracking",
]

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
#: the row-tracking system columns, as Paimon types them (BIGINT NOT NULL)
SYSTEM_FIELDS = (pa.field(ROW_ID, pa.int64(), False), pa.field(SEQUENCE_NUMBER, pa.int64(), False))
_SYSTEM = {f.name: f for f in SYSTEM_FIELDS}


def _enabled(schema: TableSchema, key: str) -> bool:
    return schema.options.get(key, "false").strip().lower() == "true"


def row_tracking(schema: TableSchema) -> bool:
    """Whether rows of the table carry row ids and sequence numbers."""
    return _enabled(schema, "row-tracking.enabled")


def data_evolution(schema: TableSchema) -> bool:
    """Whether files of the table may hold some columns of rows other files complete."""
    return _enabled(schema, "data-evolution.enabled")


def _row_range(f: DataFileMeta) -> tuple[int, int]:
    assert f.first_row_id is not None
    return f.first_row_id, f.first_row_id + f.row_count


def row_id_groups(files: Sequence[DataFileMeta]) -> list[tuple[DataFileMeta, ...]]:
    """``files`` as Paimon's ``mergeRangesAndSort`` groups them: by overlapping row-id range,
    in row-id order (files without a first row id first, alone), each group newest first.
    A group whose files cover different ranges is a corrupt table (Paimon refuses it too)."""
    loose = [(f,) for f in files if f.first_row_id is None]
    blobs = [f for f in files if f.first_row_id is not None and is_blob_file(f.file_name)]
    tracked = sorted(
        (f for f in files if f.first_row_id is not None and not is_blob_file(f.file_name)),
        key=lambda f: _row_range(f)[0],
    )
    groups: list[list[DataFileMeta]] = []
    end = None
    for f in tracked:
        lo, hi = _row_range(f)
        if groups and end is not None and lo < end:
            groups[-1].append(f)
            end = max(end, hi)
        else:
            groups.append([f])
            end = hi
    for group in groups:
        ranges = {_row_range(f) for f in group}
        if len(ranges) > 1:
            names = ", ".join(f"{f.file_name} {_row_range(f)}" for f in group)
            raise CorruptTableError(
                "data files of a data-evolution table overlap in row ids without covering the "
                f"same rows ({names}); Paimon cannot read this table either"
            )
        # Python's sort is stable: ties in sequence number keep manifest order, as Java's
        group.sort(key=lambda f: -f.max_sequence_number)
    _attach_blobs(groups, blobs)
    return [*loose, *(tuple(g) for g in groups)]


def _attach_blobs(groups: list[list[DataFileMeta]], blobs: Sequence[DataFileMeta]) -> None:
    """Put each BLOB file after the files of the group whose rows it holds some of."""
    if not blobs:
        return
    starts = np.array([_row_range(g[0])[0] for g in groups], dtype=np.int64)
    for b in sorted(blobs, key=lambda f: _row_range(f)[0]):
        lo, hi = _row_range(b)
        i = int(np.searchsorted(starts, lo, side="right")) - 1
        if i < 0 or hi > _row_range(groups[i][0])[1]:
            raise CorruptTableError(
                f"BLOB file {b.file_name} holds rows {lo}..{hi - 1}, which no data file of "
                "its bucket holds; Paimon cannot read this table either"
            )
        groups[i].append(b)


class GroupReader:
    """Reads groups of files (:func:`row_id_groups`) of one row-tracking / data-evolution
    table as columns of its current schema, the system columns included where asked."""

    def __init__(self, reader: AppendFileReader) -> None:
        self.reader = reader
        self.schema = reader.schema
        self.evolution: SchemaEvolution = reader.evolution

    def output_schema(self, columns: Sequence[str]) -> pa.Schema:
        """The Arrow schema of rows with ``columns`` (table or system columns)."""
        table = self.schema.arrow_schema()
        return pa.schema([_SYSTEM[c] if c in _SYSTEM else table.field(c) for c in columns])

    def holds(self, f: DataFileMeta, column: str) -> bool:
        """Whether ``f`` holds the current ``column`` (by field id; only its write columns)."""
        src = self.evolution.mapping(f.schema_id).sources.get(column)
        if src is None:
            return False
        return f.write_cols is None or src[0] in f.write_cols

    def complete(self, f: DataFileMeta) -> bool:
        """Whether ``f`` holds every field of its schema (no ``_WRITE_COLS``, or ones naming
        all of them, as a compaction's files with the system columns do): its value
        statistics are then of those fields."""
        if f.write_cols is None:
            return True
        fields = self.evolution.mapping(f.schema_id).file_schema.field_names
        return set(fields) <= set(f.write_cols)

    def supplier(self, group: Sequence[DataFileMeta], column: str) -> DataFileMeta | None:
        """The file of ``group`` (newest first) that supplies ``column`` (None: nulls)."""
        if column in _SYSTEM:
            return group[0]
        return next((f for f in group if self.holds(f, column)), None)

    def group_stats(
        self, group: Sequence[DataFileMeta], columns: Sequence[str]
    ) -> dict[str, Stats]:
        """What value statistics say of ``columns`` in the group's rows: per column, the
        statistics of the file that supplies it, where that file holds every column."""
        out: dict[str, Stats] = {}
        for c in columns:
            if c in _SYSTEM:
                continue
            f = self.supplier(group, c)
            if f is None or not self.complete(f):
                continue
            out.update(value_stats(self.evolution, f, [c]))
        return out

    def may_hold(self, group: Sequence[DataFileMeta], rf: RowFilter) -> bool:
        """Whether the group's rows may pass ``rf`` (its statistics do not rule it out)."""
        return rf.may_hold(self.group_stats(group, rf.columns))

    def _system(self, directory: str, f: DataFileMeta, names: list[str]) -> dict[str, pa.Array]:
        """The system columns of ``f``'s rows: physical values where present, else derived."""
        physical = self.reader.read_physical(directory, f, names)
        out: dict[str, pa.Array] = {}
        n = f.row_count
        for name in names:
            if name == ROW_ID:
                if f.first_row_id is None:
                    raise UnsupportedFeatureError(
                        f"data file {f.file_name} has no first row id, so its rows have no "
                        f"{ROW_ID}; lakeops cannot select {ROW_ID} of this table"
                    )
                derived = pa.array(np.arange(f.first_row_id, f.first_row_id + n, dtype=np.int64))
            else:
                derived = pa.array(np.full(n, f.max_sequence_number, dtype=np.int64))
            col = physical.get(name)
            if col is not None and col.null_count:
                col = pc.coalesce(col.cast(pa.int64()), derived)
            elif col is not None:
                col = col.cast(pa.int64())
            out[name] = derived if col is None else col.combine_chunks()
        return out

    def read(
        self, directory: str, group: Sequence[DataFileMeta], columns: Sequence[str]
    ) -> pa.Table:
        """The rows of one group as ``columns``."""
        schema = self.output_schema(columns)
        n = group[0].row_count
        blobs = [f for f in group if is_blob_file(f.file_name)]
        group = [f for f in group if not is_blob_file(f.file_name)]
        if any(f.row_count != n for f in group):
            raise CorruptTableError(
                "data files of one row-id range hold different row counts ("
                + ", ".join(f"{f.file_name}: {f.row_count}" for f in group)
                + "); Paimon cannot read this table either"
            )
        wins: dict[int, list[str]] = {}
        values: dict[str, pa.ChunkedArray | pa.Array] = {}
        for c in columns:
            held = [b for b in blobs if self.holds(b, c)]
            if held:
                values[c] = self._blob_column(directory, group[0], held, c)
                continue
            f = self.supplier(group, c)
            if f is not None:
                wins.setdefault(id(f), []).append(c)
        for f in group:
            cols = wins.get(id(f))
            if not cols:
                continue
            data_cols = [c for c in cols if c not in _SYSTEM]
            if data_cols:
                table = self.reader.read(directory, f, data_cols)
                values.update({c: table.column(c) for c in data_cols})
            system = [c for c in cols if c in _SYSTEM]
            if system:
                values.update(self._system(directory, f, system))
        for t in schema:
            if t.name not in values and not t.nullable:
                raise CorruptTableError(
                    f"no data file of row ids {_row_range(group[0])} holds the NOT NULL column "
                    f"{t.name!r}; Paimon cannot read this table either"
                )
        arrays = [values[t.name] if t.name in values else pa.nulls(n, t.type) for t in schema]
        return pa.Table.from_arrays(arrays, schema=schema)

    def _blob_column(
        self, directory: str, anchor: DataFileMeta, files: Sequence[DataFileMeta], column: str
    ) -> pa.Array:
        """A BLOB column of the group of ``anchor`` from its BLOB files (see the module
        docstring): each row's value from the newest file (largest ``max_sequence_number``)
        that holds one for it — null included — rather than a placeholder; null where none
        does. Files of one sequence number must not overlap (Paimon refuses that too)."""
        lo, hi = _row_range(anchor)
        chosen = np.full(hi - lo, -1, dtype=np.int64)  # per row: its value's index in `parts`
        parts: list[pa.Array] = []
        taken = 0
        newest_first = sorted(files, key=lambda f: -f.max_sequence_number)
        covered: dict[int, np.ndarray] = {}
        for f in newest_first:
            a, b = _row_range(f)
            seen = covered.setdefault(f.max_sequence_number, np.zeros(hi - lo, dtype=bool))
            if seen[a - lo : b - lo].any():
                raise CorruptTableError(
                    f"BLOB files of column {column!r} with sequence number "
                    f"{f.max_sequence_number} overlap in rows of {lo}..{hi - 1}; Paimon cannot "
                    "read this table either"
                )
            seen[a - lo : b - lo] = True
            values, placeholders = self.reader.read_blob(directory, f)
            fill = np.flatnonzero((chosen[a - lo : b - lo] < 0) & ~placeholders)
            chosen[a - lo + fill] = taken + fill
            parts.append(values)
            taken += len(values)
        target = self.reader.output_schema([column]).field(0).type
        pool = pa.concat_arrays(parts) if parts else pa.array([], pa.large_binary())
        return pool.take(pa.array(chosen, mask=chosen < 0)).cast(target)
