"""Row-level changes by condition — ``delete``, ``update`` and ``merge`` — as Paimon's ``DELETE``,
``UPDATE`` and ``MERGE INTO`` (its Spark commands) commit them: one snapshot each.

**Primary-key tables** (Paimon's "primary-key upsert"): the rows the change touches, read merged
at the latest snapshot, are written back through the table's writer as records of one row kind
— ``-D`` for a deleted row, ``+U`` for an updated one (the whole row, assignments applied),
``+I`` for a merge's inserted row — in one ``APPEND`` commit, and merge like any record (the
later commit wins a key, as for every write). As Paimon: a delete needs an engine that can
remove a key (``deduplicate``; ``partial-update`` with ``partial-update.remove-record-on-delete``
or ``.remove-record-on-sequence-group``; ``aggregation`` with
``aggregation.remove-record-on-delete``); an update or merge needs ``deduplicate`` or
``partial-update``; a primary-key column is never assigned. ``ignore-delete`` would drop a
delete's records: refused rather than deleting nothing.

**Append tables**: the files holding a touched row are found (statistics first, then the rows).
With ``deletion-vectors.enabled`` the touched rows go into the file's deletion vector (Paimon's
append ``DELETE`` with vectors); otherwise the file is rewritten without them (copy-on-write,
dropping any vector it had). Updated and inserted rows are appended as new files. One
``OVERWRITE`` snapshot (Paimon commits an append that deletes files or vectors so); it is a
:class:`~lakeops.errors.CommitConflictError`, nothing committed, if another commit replaced
those files or gave them vectors meanwhile. Row-tracking tables are refused (their rewrites
would have to keep every row's id).

A **condition** is a filter as ``read`` takes it; a row where it is NULL is not touched (SQL).
**Assignments** map columns to a value (cast to the column's type without loss) or a
``pyarrow.compute`` expression over the row. In a merge, expressions name the target row's
columns ``target.<column>`` and the source row's ``source.<column>``; ``on`` columns match a
source row to target rows by equality (NULL matches nothing); a target row matched by two
source rows is an error, as in SQL. Clauses apply in the order given: a row takes the first
clause whose condition holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Unpack

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakeops.commit.committer import Committer, PlannedChange
from lakeops.compact.vectors import BucketVectors
from lakeops.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    ConfigurationError,
    DataValidationError,
    UnsupportedFeatureError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX, deletion_files
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.kv import RowKind
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.kv.append_reader import AppendFileReader
from lakeops.options.rows_merge import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
)
from lakeops.parallel import imap_ordered, run_ordered
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.predicate import Filter, RowFilter, row_filter
from lakeops.read.row_tracking import row_tracking
from lakeops.read.scan import Split
from lakeops.store.context import TableContext
from lakeops.table.scan import ScanArgs
from lakeops.write.frames import WriteInput, arrow_parts

__all__ = ["MergeBuilder", "RowChanges", "delete_rows", "update_rows"]

#: what an assignment may give a column
Assignment = Any
#: transient columns of a merge's join
_TARGET_ROW = "__target_row"
_SOURCE_ROW = "__source_row"


@dataclass(frozen=True)
class RowChanges:
    """What a ``delete``, ``update`` or ``merge`` changed: rows deleted, updated and inserted,
    and its snapshot (None when it changed nothing and committed nothing)."""

    deleted: int = 0
    updated: int = 0
    inserted: int = 0
    snapshot_id: int | None = None


class Target(Protocol):
    """What a row-level change needs of a table (:class:`lakeops.table.base.BaseTable`)."""

    identifier: str
    context: TableContext

    @property
    def arrow_schema(self) -> pa.Schema: ...

    def read(self, *, parallelism: int | None = None, **scan: Unpack[ScanArgs]) -> pa.Table: ...
    def new_write(self, *, overwrite: bool = False, parallelism: int | None = None) -> Any: ...
    def commit(self, messages: Sequence[CommitMessage]) -> Snapshot | None: ...
    def _committer(self) -> Committer: ...
    def _plan(self, snapshot: Snapshot | None, rf: RowFilter | None) -> Sequence[Any]: ...
    def _require_writable(self, action: str) -> None: ...


# ------------------------------------------------------------------------ checks
def _check(table: Target, op: str) -> None:
    """Refuse ``op`` ("delete", "update", "merge") where Paimon does, before anything."""
    table._require_writable(op)
    ctx = table.context
    if not ctx.schema.primary_keys:
        if row_tracking(ctx.schema):
            raise UnsupportedFeatureError(
                f"lakeops does not {op} rows of {table.identifier!r}: it has row tracking, and "
                "rewritten rows would have to keep their row ids; nothing was written — use "
                "Paimon (Spark) for this, or update_columns for a data-evolution table"
            )
        return
    opts = ctx.options
    engine = opts.merge_engine
    if op == "delete":
        raw = ctx.schema.options
        removable = {
            "deduplicate": True,
            "partial-update": PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.get(raw)
            or bool(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.get(raw)),
            "aggregation": AGGREGATION_REMOVE_RECORD_ON_DELETE.get(raw),
        }
        if not removable.get(engine, False):
            fix = {
                "partial-update": "set 'partial-update.remove-record-on-delete' = 'true' (or "
                "'partial-update.remove-record-on-sequence-group')",
                "aggregation": "set 'aggregation.remove-record-on-delete' = 'true'",
            }.get(engine, "this engine cannot remove a key")
            raise UnsupportedFeatureError(
                f"cannot delete rows of {table.identifier!r}: merge engine {engine!r} does not "
                f"remove a key on a delete record by default; {fix}; nothing was written"
            )
    elif engine not in ("deduplicate", "partial-update"):
        raise UnsupportedFeatureError(
            f"cannot {op} rows of {table.identifier!r}: merge engine {engine!r} cannot take "
            f"an {op} (Paimon allows it for deduplicate and partial-update only); nothing was "
            "written"
        )
    if opts.ignore_delete and op in ("delete", "merge"):
        raise UnsupportedFeatureError(
            f"cannot {op} rows of {table.identifier!r}: 'ignore-delete' = 'true' makes the "
            "table drop delete records, so nothing would be deleted; nothing was written"
        )


def _condition(table: Target, condition: Filter | None) -> RowFilter:
    rf = row_filter(condition, table.arrow_schema)
    if rf is None:
        raise ConfigurationError(
            "a row-level change needs a condition (e.g. pc.field('id') == 7); to replace "
            "every row, overwrite the table"
        )
    return rf


def _truth(rows: pa.Table, expression: pc.Expression) -> np.ndarray:
    """Where ``expression`` is TRUE over ``rows`` (NULL counts as not true)."""
    if rows.num_rows == 0:
        return np.zeros(0, dtype=bool)
    out = ds.dataset(rows).to_table(columns={"m": expression}).column(0)
    mask: np.ndarray = pc.fill_null(out, False).to_numpy(zero_copy_only=False).astype(bool)
    return mask


def _assigned(
    rows: pa.Table,
    schema: pa.Schema,
    assignments: Mapping[str, Assignment],
    prefix: str = "",
) -> pa.Table:
    """The table's columns of ``rows`` (named ``prefix`` + column) with ``assignments`` applied,
    each value cast to its column's type without loss."""
    unknown = sorted(set(assignments) - set(schema.names))
    if unknown:
        raise ConfigurationError(
            f"assignments name {unknown}, which are not columns of the table ({schema.names})"
        )
    n = rows.num_rows
    columns: list[pa.Array | pa.ChunkedArray] = []
    for f in schema:
        if f.name not in assignments:
            columns.append(rows.column(prefix + f.name))
            continue
        value = assignments[f.name]
        try:
            if isinstance(value, pc.Expression):
                got = ds.dataset(rows).to_table(columns={"v": value}).column(0) if n else None
                column = pa.array([], f.type) if got is None else got.cast(f.type, safe=True)
            else:
                scalar = value if isinstance(value, pa.Scalar) else pa.scalar(value)
                column = pa.array([scalar.cast(f.type, safe=True).as_py()] * n, f.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise DataValidationError(
                f"the value assigned to column {f.name!r} ({value}) does not fit its type "
                f"{f.type} without loss: {exc}"
            ) from None
        columns.append(column)
    return pa.table(columns, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))


def _check_keys_kept(table: Target, assignments: Mapping[str, Assignment]) -> None:
    keys = set(table.context.schema.primary_keys)
    hit = sorted(keys & set(assignments))
    if hit:
        raise ConfigurationError(
            f"cannot assign primary-key column(s) {hit} of {table.identifier!r} (Paimon cannot "
            "update a primary key): delete the row and insert the new one"
        )


# ---------------------------------------------------------------- primary keys
def _commit_keyed(
    table: Target, deletes: pa.Table, updates: pa.Table, inserts: pa.Table
) -> int | None:
    """Write the changes as ``-D``, ``+U`` and ``+I`` records in one commit; its snapshot id."""
    if not (deletes.num_rows or updates.num_rows or inserts.num_rows):
        return None
    writer = table.new_write()
    try:
        for rows, kind in (
            (deletes, RowKind.DELETE),
            (updates, RowKind.UPDATE_AFTER),
            (inserts, RowKind.INSERT),
        ):
            if rows.num_rows:
                writer.write_changes(rows, kind)
        messages = writer.prepare_commit()
        snapshot = table.commit(messages)
    except CommitStateUnknownError:
        raise  # the snapshot may reference these files: keep them
    except BaseException:
        writer.abort()
        raise
    return None if snapshot is None else snapshot.id


# ---------------------------------------------------------------- append tables
@dataclass
class _FileRows:
    """One data file of an append table: its entry, every row it holds (physical order), and
    which rows are gone — already deleted by its vector, and removed by this change."""

    entry: ManifestEntry
    rows: pa.Table
    dead: np.ndarray
    removed: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.removed = np.zeros(self.rows.num_rows, dtype=bool)

    @property
    def alive(self) -> np.ndarray:
        kept: np.ndarray = ~self.dead & ~self.removed
        return kept


def _append_files(
    table: Target, snapshot: Snapshot, rf: RowFilter | None, keep: Callable[[pa.Table], bool]
) -> list[_FileRows]:
    """The data files of ``snapshot`` that ``rf``'s statistics do not rule out, read whole, on
    the cores; only those whose rows ``keep`` (given the live rows) holds."""
    ctx = table.context
    entries = {
        (e.partition, e.bucket, e.file.file_name): e for e in ctx.store.live_entries(snapshot)
    }
    reader = AppendFileReader(ctx.file_io, ctx.schema, ctx.store.schema, ctx.root)
    vectors = DeletionVectorReader(ctx.file_io)
    names = ctx.schema.field_names
    jobs = [
        (split, f, split.deletion_of(f)) for split in table._plan(snapshot, rf) for f in split.files
    ]

    def load(job: tuple[Split, DataFileMeta, Any]) -> _FileRows | None:
        split, f, df = job
        rows = reader.read(ctx.bucket_path(split.partition_bytes, split.bucket), f, names)
        dead = np.zeros(rows.num_rows, dtype=bool)
        if df is not None:
            dead[vectors.positions(df).astype(np.int64)] = True
        found = _FileRows(entries[(split.partition_bytes, split.bucket, f.file_name)], rows, dead)
        return found if keep(rows.filter(pa.array(~dead))) else None

    return [r for r in imap_ordered(load, jobs, None) if r is not None]


def _any_rows(_live: pa.Table) -> bool:
    return True


def _commit_files(
    table: Target, snapshot: Snapshot, files: Sequence[_FileRows], appended: pa.Table
) -> int | None:
    """Commit what ``files`` had removed (vectors, or rewrites) and ``appended``'s rows as one
    ``OVERWRITE`` snapshot (see the module docstring); its id."""
    touched = [f for f in files if f.removed.any()]
    if not touched and not appended.num_rows:
        return None
    ctx = table.context
    vectored = ctx.options.deletion_vectors
    parts = [] if vectored else [f.rows.filter(pa.array(f.alive)) for f in touched]
    parts = [p for p in [*parts, appended] if p.num_rows]
    writers: list[Any] = []
    written: list[str] = []
    try:
        messages = _write_parts(table, parts, writers)
        index_changes, marked = _vector_changes(ctx, snapshot, touched, vectored, written)
        rewritten = () if vectored else touched
        entries = [replace(f.entry, kind=FileKind.DELETE) for f in rewritten]
        entries += [
            ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, new)
            for m in messages
            for new in m.new_files
        ]
        removed = {e.file.file_name for e in index_changes if e.kind == FileKind.DELETE}

        def plan(latest: Snapshot | None) -> PlannedChange:
            _check_vectors_unchanged(ctx, latest, marked, removed)
            return PlannedChange(entries, [], index_changes)

        published = table._committer().commit_rewrite(plan)
    except CommitStateUnknownError:
        raise  # the snapshot may reference these files: keep them
    except BaseException:
        for writer in writers:
            writer.abort()
        for path in written:
            ctx.file_io.delete(path)
        raise
    return published.id


def _write_parts(table: Target, parts: Sequence[pa.Table], writers: list[Any]) -> list[Any]:
    """The commit messages of ``parts`` written as new files (each writer made is added to
    ``writers``, for an abort). An unaware-bucket table's parts are written at once on the
    cores, a writer each (its files need no order: Paimon's own writers of one such bucket are
    many); a fixed bucket's by one writer, in order, so its sequence numbers keep counting."""
    if table.context.options.bucket > 0 or len(parts) < 2:
        writer = table.new_write()
        writers.append(writer)
        for part in parts:
            writer.write(part)
        return list(writer.prepare_commit())
    made = [table.new_write(parallelism=1) for _ in parts]
    writers.extend(made)

    def write(job: tuple[Any, pa.Table]) -> list[Any]:
        writer, part = job
        writer.write(part)
        return list(writer.prepare_commit())

    return [m for ms in run_ordered(write, list(zip(made, parts, strict=True)), None) for m in ms]


def _vector_changes(
    ctx: TableContext,
    snapshot: Snapshot,
    touched: Sequence[_FileRows],
    vectored: bool,
    written: list[str],
) -> tuple[list[IndexManifestEntry], set[tuple[bytes, int, str]]]:
    """The deletion-vector index changes of ``touched`` files: with vectors, their removed rows
    marked; without, the vectors of the files rewritten dropped. Also the files marked."""
    live = [
        e for e in ctx.store.index_entries(snapshot) if e.file.index_type == DELETION_VECTORS_INDEX
    ]
    by_bucket: dict[tuple[bytes, int], list[_FileRows]] = {}
    for f in touched:
        by_bucket.setdefault((f.entry.partition, f.entry.bucket), []).append(f)
    changes: list[IndexManifestEntry] = []
    marked: set[tuple[bytes, int, str]] = set()
    for (partition, bucket), group in by_bucket.items():
        mine = [e for e in live if (e.partition, e.bucket) == (partition, bucket)]
        if not vectored and not mine:
            continue
        paths = {
            e.file.file_name: ctx.locations.index_entry_path(partition, bucket, e.file)
            for e in mine
        }
        bitmap64 = ctx.options.deletion_vectors_bitmap64
        vectors = BucketVectors(ctx.file_io, tuple(mine), paths, bitmap64)
        for f in group if vectored else ():
            vectors.mark(f.entry.file.file_name, np.flatnonzero(f.removed).astype(np.uint64))
            marked.add((partition, bucket, f.entry.file.file_name))
        before = [] if vectored else [f.entry.file for f in group]
        entries, paths_written = vectors.changes(partition, bucket, before, [], ctx.locations)
        written += paths_written
        changes += entries
    return changes, marked


def _check_vectors_unchanged(
    ctx: TableContext,
    latest: Snapshot | None,
    marked: set[tuple[bytes, int, str]],
    removed: set[str],
) -> None:
    """Refuse the commit when a file this change gives a vector got one meanwhile in an index
    file it does not replace (two vectors of one file: rows deleted by another commit)."""
    if not marked or latest is None:
        return
    current = deletion_files(ctx.store.index_entries(latest))  # paths: index file names
    for key in marked:
        df = current.get(key)
        if df is not None and df.path not in removed:
            raise CommitConflictError(
                f"data file {key[2]} got a deletion vector from another commit while this "
                "change was prepared; nothing was committed — run it again"
            )


# ---------------------------------------------------------------- delete / update
def delete_rows(table: Target, condition: Filter) -> RowChanges:
    """Delete the rows ``condition`` holds for (see the module docstring)."""
    _check(table, "delete")
    rf = _condition(table, condition)
    ctx = table.context
    snapshot = ctx.store.latest_snapshot()
    if snapshot is None:
        return RowChanges()
    if ctx.schema.primary_keys:
        rows = table.read(filter=rf.expression, snapshot_id=snapshot.id)
        empty = rows.schema.empty_table()
        return RowChanges(rows.num_rows, 0, 0, _commit_keyed(table, rows, empty, empty))
    files = _append_files(table, snapshot, rf, lambda live: bool(_truth(live, rf.expression).any()))
    deleted = 0
    for f in files:
        f.removed = _truth(f.rows, rf.expression) & ~f.dead
        deleted += int(f.removed.sum())
    appended = table.arrow_schema.empty_table()
    return RowChanges(deleted, 0, 0, _commit_files(table, snapshot, files, appended))


def update_rows(
    table: Target, condition: Filter, assignments: Mapping[str, Assignment]
) -> RowChanges:
    """Set ``assignments`` on the rows ``condition`` holds for (see the module docstring)."""
    _check(table, "update")
    if not assignments:
        raise ConfigurationError("an update needs at least one column to set")
    _check_keys_kept(table, assignments)
    rf = _condition(table, condition)
    ctx = table.context
    snapshot = ctx.store.latest_snapshot()
    if snapshot is None:
        return RowChanges()
    schema = table.arrow_schema
    _assigned(schema.empty_table(), schema, assignments)  # names and types, before reading
    if ctx.schema.primary_keys:
        rows = table.read(filter=rf.expression, snapshot_id=snapshot.id)
        updates = _assigned(rows, schema, assignments)
        empty = schema.empty_table()
        return RowChanges(0, rows.num_rows, 0, _commit_keyed(table, empty, updates, empty))
    files = _append_files(table, snapshot, rf, lambda live: bool(_truth(live, rf.expression).any()))
    parts = []
    for f in files:
        f.removed = _truth(f.rows, rf.expression) & ~f.dead
        parts.append(_assigned(f.rows.filter(pa.array(f.removed)), schema, assignments))
    appended = pa.concat_tables(parts) if parts else schema.empty_table()
    snapshot_id = _commit_files(table, snapshot, files, appended)
    return RowChanges(0, appended.num_rows, 0, snapshot_id)


# ------------------------------------------------------------------------ merge
@dataclass(frozen=True)
class _Clause:
    kind: str  # "update", "delete", "insert"
    condition: pc.Expression | None
    assignments: Mapping[str, Assignment] | None  # None: every column from the source


def _prefixed(rows: pa.Table, prefix: str) -> pa.Table:
    return rows.rename_columns([prefix + n for n in rows.column_names])


class MergeBuilder:
    """A ``MERGE INTO`` of ``source`` rows into a table, matched on ``on`` columns: add
    clauses, then :meth:`execute` (one commit; see the module docstring).

    Example:
        >>> (table.merge(updates, on=["id"])                          # doctest: +SKIP
        ...     .when_matched_update({"v": pc.field("source.v")})
        ...     .when_matched_delete(condition=pc.field("source.gone"))
        ...     .when_not_matched_insert_all()
        ...     .execute())
    """

    def __init__(self, table: Target, source: WriteInput, on: Sequence[str]) -> None:
        parts = list(arrow_parts(source))
        if not parts:
            raise DataValidationError("the merge's source holds no table or batch")
        tables = [pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p for p in parts]
        self.table = table
        self.source = pa.concat_tables(tables, promote_options="default")
        self.on = list(on)
        if not self.on or isinstance(on, str):
            raise ConfigurationError("merge needs on=[column, ...]: the columns rows match on")
        names = table.arrow_schema.names
        missing = [c for c in self.on if c not in names or c not in self.source.column_names]
        if missing:
            raise ConfigurationError(
                f"merge on {missing}: each must be a column of the table ({names}) and of the "
                f"source ({self.source.column_names})"
            )
        self.matched: list[_Clause] = []
        self.not_matched: list[_Clause] = []

    def when_matched_update(
        self, set: Mapping[str, Assignment], *, condition: pc.Expression | None = None
    ) -> MergeBuilder:
        """Update matched target rows: ``set`` columns to values or expressions."""
        _check_keys_kept(self.table, set)
        self.matched.append(_Clause("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, *, condition: pc.Expression | None = None) -> MergeBuilder:
        """Update matched target rows: every non-key column to the source's value."""
        keys = set(self.table.context.schema.primary_keys)
        cols = [c for c in self.table.arrow_schema.names if c not in keys]
        values = {c: pc.field("source." + c) for c in cols}
        return self.when_matched_update(values, condition=condition)

    def when_matched_delete(self, *, condition: pc.Expression | None = None) -> MergeBuilder:
        """Delete matched target rows."""
        self.matched.append(_Clause("delete", condition, {}))
        return self

    def when_not_matched_insert(
        self, values: Mapping[str, Assignment], *, condition: pc.Expression | None = None
    ) -> MergeBuilder:
        """Insert a row for each source row that matched nothing: ``values`` by column
        (expressions over ``source.<column>``); columns left out are NULL."""
        self.not_matched.append(_Clause("insert", condition, dict(values)))
        return self

    def when_not_matched_insert_all(
        self, *, condition: pc.Expression | None = None
    ) -> MergeBuilder:
        """Insert each source row that matched nothing, as it is."""
        cols = self.table.arrow_schema.names
        values = {c: pc.field("source." + c) for c in cols}
        return self.when_not_matched_insert(values, condition=condition)

    # ------------------------------------------------------------------ execute
    def execute(self) -> RowChanges:
        """Run the merge as one commit."""
        table = self.table
        _check(table, "merge")
        if not self.matched and not self.not_matched:
            raise ConfigurationError("a merge needs at least one when_... clause")
        ctx = table.context
        snapshot = ctx.store.latest_snapshot()
        source = _prefixed(self.source, "source.").append_column(
            _SOURCE_ROW, pa.array(np.arange(self.source.num_rows, dtype=np.int64))
        )
        keys = pc.field(self.on[0]).isin(self.source.column(self.on[0]).drop_null())
        for c in self.on[1:]:
            keys = keys & pc.field(c).isin(self.source.column(c).drop_null())
        if ctx.schema.primary_keys:
            target = table.read(filter=keys, snapshot_id=snapshot.id) if snapshot else None
            rows = target if target is not None else table.arrow_schema.empty_table()
            joined = self._join(rows, source)
            deletes, updates, inserts = self._outcome(joined)
            deletes, updates = (
                deletes.drop_columns([_TARGET_ROW]),
                updates.drop_columns([_TARGET_ROW]),
            )
            snapshot_id = _commit_keyed(table, deletes, updates, inserts)
            return RowChanges(deletes.num_rows, updates.num_rows, inserts.num_rows, snapshot_id)
        files: list[_FileRows] = []
        if snapshot is not None:
            rf = row_filter(keys, table.arrow_schema)
            files = _append_files(table, snapshot, rf, _any_rows)
        alive = [f.rows.filter(pa.array(~f.dead)) for f in files]
        rows = pa.concat_tables(alive) if alive else table.arrow_schema.empty_table()
        joined = self._join(rows, source)
        deletes, updates, inserts = self._outcome(joined)
        gone = np.zeros(rows.num_rows, dtype=bool)
        gone[deletes.column(_TARGET_ROW).to_numpy()] = True
        gone[updates.column(_TARGET_ROW).to_numpy()] = True
        start = 0
        for f in files:  # the target rows, file by file, in the order concatenated
            live = np.flatnonzero(~f.dead)
            f.removed[live] = gone[start : start + len(live)]
            start += len(live)
        appended = pa.concat_tables(
            [updates.drop_columns([_TARGET_ROW]), inserts], promote_options="default"
        )
        snapshot_id = _commit_files(table, snapshot, files, appended) if snapshot else None
        if snapshot is None and appended.num_rows:
            published = table.commit(_written(table, appended))
            snapshot_id = None if published is None else published.id
        return RowChanges(deletes.num_rows, updates.num_rows, inserts.num_rows, snapshot_id)

    def _join(self, rows: pa.Table, source: pa.Table) -> pa.Table:
        """The full outer join of target ``rows`` (``target.`` columns, row numbers) and the
        source on ``on``."""
        target = _prefixed(rows, "target.").append_column(
            _TARGET_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64))
        )
        joined = target.join(
            source,
            keys=["target." + c for c in self.on],
            right_keys=["source." + c for c in self.on],
            join_type="full outer",
            coalesce_keys=False,
        )
        both = pc.and_(pc.is_valid(joined[_TARGET_ROW]), pc.is_valid(joined[_SOURCE_ROW]))
        matched = joined.filter(both)
        counts = pc.value_counts(matched[_TARGET_ROW])
        if len(counts) and pc.max(counts.field("counts")).as_py() > 1:
            raise DataValidationError(
                "the merge matched one target row with several source rows (on "
                f"{self.on}); make the source's {self.on} unique"
            )
        return joined

    def _outcome(self, joined: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The target rows deleted and updated (with ``_TARGET_ROW``) and the rows inserted."""
        schema = self.table.arrow_schema
        valid_t = pc.is_valid(joined[_TARGET_ROW]).to_numpy(zero_copy_only=False)
        valid_s = pc.is_valid(joined[_SOURCE_ROW]).to_numpy(zero_copy_only=False)
        deletes, updates = [], []
        free = valid_t & valid_s
        for clause in self.matched:
            take = free & _holds(joined, clause.condition)
            free &= ~take
            picked = joined.filter(pa.array(take))
            if clause.kind == "delete":
                deletes.append(_keep_row(_assigned(picked, schema, {}, "target."), picked))
            else:
                rows = _assigned(picked, schema, clause.assignments or {}, "target.")
                updates.append(_keep_row(rows, picked))
        free = valid_s & ~valid_t
        inserts = []
        for clause in self.not_matched:
            take = free & _holds(joined, clause.condition)
            free &= ~take
            picked = joined.filter(pa.array(take))
            inserts.append(_inserted(picked, schema, clause.assignments or {}))
        empty = _keep_row(schema.empty_table(), pa.table({_TARGET_ROW: pa.array([], pa.int64())}))
        return (
            pa.concat_tables(deletes) if deletes else empty,
            pa.concat_tables(updates) if updates else empty,
            pa.concat_tables(inserts) if inserts else schema.empty_table(),
        )


def _holds(rows: pa.Table, condition: pc.Expression | None) -> np.ndarray:
    """Where a clause's ``condition`` is TRUE (everywhere without one)."""
    if condition is None:
        return np.ones(rows.num_rows, dtype=bool)
    return _truth(rows, condition)


def _keep_row(rows: pa.Table, picked: pa.Table) -> pa.Table:
    return rows.append_column(_TARGET_ROW, picked.column(_TARGET_ROW).cast(pa.int64()))


def _inserted(picked: pa.Table, schema: pa.Schema, values: Mapping[str, Assignment]) -> pa.Table:
    """Rows of ``schema`` from ``values`` over ``picked`` source rows (others NULL)."""
    nulls = pa.table({"target." + f.name: pa.nulls(picked.num_rows, f.type) for f in schema})
    base = picked.drop_columns([c for c in picked.column_names if c.startswith("target.")])
    for name in nulls.column_names:
        base = base.append_column(name, nulls.column(name))
    return _assigned(base, schema, values, "target.")


def _written(table: Target, rows: pa.Table) -> list[CommitMessage]:
    writer = table.new_write()
    try:
        writer.write(rows)
        return list(writer.prepare_commit())
    except BaseException:
        writer.abort()
        raise
