"""Column updates of a data-evolution table by row id, as pypaimon's ``TableUpdateByRowId``
writes them (``update_columns``; Paimon reads them with ``DataEvolutionSplitRead``).

A BLOB column's new values go to ``.blob`` files of the group instead
(:func:`_blob_update`): where the group already has one of that column, they span the rows up
to the last one updated, the others placeholders that keep their older value; else every row of
the group, the others null (pypaimon's rule). Their entries take the row ids of the rows they
hold and sequence numbers 0 like the other file, so they are the newest of the rows'
versions (:mod:`lakeops.read.row_tracking`).

Input: ``_ROW_ID`` (unique, not null) and new values of some columns of the table (not
partition columns). Each row id falls in one **row-id group** of the snapshot planned on
(:func:`lakeops.read.row_tracking.row_id_groups`: the files of rows
``[first_row_id, first_row_id + row_count)``). For every group some row of which is updated,
one file is written to the group's bucket directory holding the updated columns only, for
every row of the group (the group's current values, with the new values at the updated
positions), with ``_FIRST_ROW_ID`` the group's first row id, ``_WRITE_COLS`` the updated
columns (in schema order) and sequence numbers 0: the commit gives it the new snapshot's id
(:mod:`lakeops.commit.row_ids`), so it is the newest file of its group and supplies those
columns on read. A row id in no group of the snapshot is refused before anything is written.

The committer refuses (:class:`~lakeops.errors.CommitConflictError`) such a file whose group
another commit replaced meanwhile (an overwrite, a compaction): its values would no longer
line up with the group's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from lakeops.errors import ConfigurationError, DataValidationError, UnsupportedFeatureError
from lakeops.format.blob_file import is_blob_file
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.blob_writer import write_blob_files
from lakeops.kv.writer import AppendLayout, RollingFileWriter
from lakeops.options.rows_files import BLOB_TARGET_FILE_SIZE
from lakeops.read.row_tracking import ROW_ID, GroupReader, row_id_groups
from lakeops.read.scan import plan_append_splits
from lakeops.store.context import TableContext

__all__ = ["ColumnUpdate", "write_column_updates"]

#: one file per group: never rolled, whatever its size
_NO_ROLLING = 1 << 62


@dataclass(frozen=True)
class ColumnUpdate:
    """What an update wrote: its commit messages (planned on ``base``) and the storage paths
    of the files (to delete if it is not committed)."""

    messages: list[CommitMessage]
    written: list[str]


@dataclass(frozen=True)
class _Group:
    partition: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]

    @property
    def start(self) -> int:
        first = self.files[0].first_row_id
        assert first is not None
        return first

    @property
    def rows(self) -> int:
        return self.files[0].row_count


def _columns(schema: TableSchema, data: pa.Table, columns: Sequence[str] | None) -> list[str]:
    """The updated columns, in schema order (checked against the table)."""
    if ROW_ID not in data.column_names:
        raise DataValidationError(f"an update by row id needs a {ROW_ID} column; the data has none")
    given = [c for c in data.column_names if c != ROW_ID] if columns is None else list(columns)
    if not given:
        raise ConfigurationError("an update by row id needs at least one column to update")
    names = schema.field_names
    for c in given:
        if c not in names:
            raise DataValidationError(
                f"column {c!r} to update is not a column of the table ({names})"
            )
        if c in schema.partition_keys:
            raise DataValidationError(
                f"column {c!r} is a partition column; an update by row id cannot move rows "
                "to another partition"
            )
        if c not in data.column_names:
            raise DataValidationError(f"column {c!r} to update is missing from the data")
    if len(set(given)) != len(given):
        raise ConfigurationError(f"columns to update are named twice: {given}")
    return [n for n in names if n in given]


def _values(schema: TableSchema, data: pa.Table, columns: list[str]) -> pa.Table:
    """The new values as the table's types (a NOT NULL column refuses nulls)."""
    target = pa.schema([schema.arrow_schema().field(c) for c in columns])
    out = []
    for f in target:
        col = data.column(f.name)
        try:
            col = col.cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise DataValidationError(
                f"column {f.name!r} cannot hold the update's values: {exc}"
            ) from None
        if not f.nullable and col.null_count:
            raise DataValidationError(f"column {f.name!r} is NOT NULL; the update sets it to null")
        out.append(col)
    return pa.Table.from_arrays(out, schema=target)


def _row_ids(data: pa.Table) -> np.ndarray:
    ids = data.column(ROW_ID)
    if ids.null_count:
        raise DataValidationError(f"{ROW_ID} of an update must not be null")
    arr = np.asarray(ids.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    if len(np.unique(arr)) != len(arr):
        raise DataValidationError(
            f"{ROW_ID} of an update must be unique; some row is updated twice"
        )
    return arr


def _groups(ctx: TableContext, snapshot: Snapshot) -> list[_Group]:
    out = []
    for split in plan_append_splits(ctx, snapshot):
        for files in row_id_groups(split.files):
            if files[0].first_row_id is not None:
                out.append(_Group(split.partition_bytes, split.bucket, files))
    return sorted(out, key=lambda g: g.start)


def _merged(current: pa.Table, updates: pa.Table, positions: np.ndarray) -> pa.Table:
    """``current`` with row ``positions[i]`` replaced by row ``i`` of ``updates``."""
    n = current.num_rows
    take = np.arange(n, dtype=np.int64)
    take[positions] = n + np.arange(len(positions), dtype=np.int64)
    index = pa.array(take)
    cols = [
        pa.concat_arrays(
            [current.column(c).combine_chunks(), updates.column(c).combine_chunks()]
        ).take(index)
        for c in current.column_names
    ]
    return pa.Table.from_arrays(cols, schema=current.schema)


def write_column_updates(
    ctx: TableContext,
    reader: AppendFileReader,
    snapshot: Snapshot,
    data: pa.Table,
    columns: Sequence[str] | None = None,
) -> ColumnUpdate:
    """Write the files of an update of ``columns`` (default: every column of ``data`` but
    ``_ROW_ID``) of the rows ``data`` names by ``_ROW_ID``, planned on ``snapshot``; see the
    module docstring. Nothing is committed; on any error nothing stays written."""
    schema = ctx.schema
    cols = _columns(schema, data, columns)
    values = _values(schema, data, cols)
    ids = _row_ids(data)
    groups = _groups(ctx, snapshot)
    starts = np.array([g.start for g in groups], dtype=np.int64)
    ends = starts + np.array([g.rows for g in groups], dtype=np.int64)
    which = np.searchsorted(starts, ids, side="right") - 1
    outside = (which < 0) | (ids >= ends[np.maximum(which, 0)] if len(groups) else True)
    if np.any(outside):
        bad = ids[outside][:5].tolist()
        raise ConfigurationError(
            f"row ids {bad} are not rows of snapshot {snapshot.id} of the table (its rows "
            f"hold ids in {len(groups)} ranges below {int(ends.max()) if len(groups) else 0}); "
            "nothing was written"
        )
    blobs = [c for c in cols if schema.field(c).type.root == "BLOB"]
    normal = [c for c in cols if c not in blobs]
    projected = replace(
        schema, fields=tuple(f for f in schema.fields if f.name in normal), partition_keys=()
    )
    groups_reader = GroupReader(reader)
    blob_target = BLOB_TARGET_FILE_SIZE.find(schema.options)
    target = int(blob_target) if blob_target is not None else ctx.options.target_file_size
    touched = np.unique(which).tolist()
    # every BLOB column's update is planned (and refused) before anything is written
    blob_plans = {
        (g, c): _blob_update(
            groups[g],
            c,
            values.column(c).take(np.flatnonzero(which == g)),
            ids[which == g] - groups[g].start,
            snapshot.id,
        )
        for g in touched
        for c in blobs
    }
    messages: list[CommitMessage] = []
    written: list[str] = []
    try:
        for g in touched:
            group = groups[g]
            rows = np.flatnonzero(which == g)
            positions = ids[rows] - group.start
            directory = ctx.bucket_path(group.partition, group.bucket)
            files: list[DataFileMeta] = []
            if normal:
                current = groups_reader.read(directory, group.files, normal)
                updates = values.select(normal).take(pa.array(rows))
                merged = _merged(current, updates, positions)
                writer = RollingFileWriter(
                    ctx.file_io, directory, AppendLayout(projected, 0), _NO_ROLLING
                )
                try:
                    writer.write(merged)
                    files += [
                        replace(f, write_cols=tuple(normal), value_stats_cols=tuple(normal))
                        for f in writer.close()
                    ]
                finally:
                    written.extend(writer.written)
            for c in blobs:
                column, holders = blob_plans[(g, c)]
                files += write_blob_files(
                    ctx.file_io,
                    directory,
                    None,
                    schema,
                    c,
                    column,
                    0,
                    target,
                    written,
                    placeholders=holders,
                    first_row_id=group.start,
                )
            new = [
                replace(
                    f,
                    schema_id=schema.id,
                    first_row_id=group.start if f.first_row_id is None else f.first_row_id,
                    min_sequence_number=0,
                    max_sequence_number=0,
                )
                for f in files
            ]
            messages.append(
                CommitMessage(
                    group.partition,
                    group.bucket,
                    ctx.options.bucket,
                    tuple(new),
                    base_snapshot_id=snapshot.id,
                )
            )
    except BaseException:
        for path in written:
            ctx.file_io.delete(path)
        raise
    return ColumnUpdate(messages, written)


def _blob_update(
    group: _Group, column: str, updates: pa.ChunkedArray, positions: np.ndarray, base: int
) -> tuple[pa.Array, np.ndarray | None]:
    """The values of an update of BLOB ``column`` of ``group`` (``updates`` at row
    ``positions``, planned on snapshot ``base``) and its placeholders, as pypaimon's
    ``TableUpdateByRowId`` writes them: where the group already has a BLOB file of the column,
    rows up to the last updated one, every other row a placeholder (it keeps its older value);
    else every row of the group, the others null.

    The update's files take the new snapshot's id as sequence number, and a row's newest file
    by sequence number holds its value. A BLOB file written after the first of a rolled write
    keeps its rows' own sequence numbers (Paimon's and pypaimon's commit do), which can exceed
    that id: an update of its rows would not be read (by Paimon either), so it is refused."""
    held = [
        f for f in group.files if is_blob_file(f.file_name) and (f.write_cols or ()) == (column,)
    ]
    baseline = bool(held)
    for f in held:
        assert f.first_row_id is not None
        lo = f.first_row_id - group.start
        hit = positions[(positions >= lo) & (positions < lo + f.row_count)]
        if hit.size and f.max_sequence_number > base:
            raise UnsupportedFeatureError(
                f"BLOB file {f.file_name} holds rows from {f.first_row_id} of column "
                f"{column!r} with sequence number {f.max_sequence_number}, above the id this "
                f"update's commit may take ({base + 1}): readers (Paimon's too) would keep "
                f"its values over the update's, so the update of row ids "
                f"{(hit[:5] + group.start).tolist()} is refused; nothing was written"
            )
    n = int(positions.max()) + 1 if baseline else group.rows
    take = np.full(n, -1, dtype=np.int64)
    take[positions] = np.arange(len(positions), dtype=np.int64)
    values = updates.combine_chunks().take(pa.array(take, mask=take < 0))
    return values, (take < 0) if baseline else None
