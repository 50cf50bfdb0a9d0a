"""Row-level changes by condition — ``delete``, ``update`` and ``merge`` — as Paimon's ``DELETE``,
``UPDATE`` and ``MERGE INTO`` (its Spark commands) commit them: one snapshot each.

**Primary-key tables** (Paimon's "primary-key upsert"): the rows the change touches, read merged
at the latest snapshot from every committed record (:func:`committed_rows`: a deletion-vector
table's level 0 too, which its batch reads skip until compacted; read again on the then latest
snapshot if expiry removed that one meanwhile, :func:`read_latest`), are written back through
the table's writer as records of one row kind — ``-D`` for a deleted row, ``+U`` for an
updated one (the whole row, assignments applied), ``+I`` for a merge's inserted row — in one
``APPEND`` commit, and merge like any record (the later commit wins a key, as for every
write). As Paimon: a delete needs an engine that can remove a key (``deduplicate``;
``partial-update`` with ``partial-update.remove-record-on-delete`` or
``.remove-record-on-sequence-group``; ``aggregation`` with
``aggregation.remove-record-on-delete``); an update or merge needs ``deduplicate`` or
``partial-update``; a primary-key column is never assigned. ``ignore-delete`` would drop a
delete's records: refused rather than deleting nothing.

**Append tables**: the files holding a touched row are found (statistics first, then the rows
— a condition's columns, a merge's keys — and only a touched file is read whole), one file at
a time per core (:mod:`lakeops.table.row_files`). With ``deletion-vectors.enabled`` the touched
rows go into the file's deletion vector (Paimon's append ``DELETE`` with vectors); otherwise
the file is rewritten without them (copy-on-write, dropping any vector it had), as soon as it
is decided. Updated and inserted rows are appended as new files. One
``OVERWRITE`` snapshot (Paimon commits an append that deletes files or vectors so); it is a
:class:`~lakeops.errors.CommitConflictError`, nothing committed, if another commit replaced
those files or gave them vectors meanwhile. If expiry removed the snapshot a change read
(another job compacted its files meanwhile), the change deletes what it wrote and is prepared
again on the then latest snapshot (:func:`read_latest`). Row-tracking tables are refused
(their rewrites would have to keep every row's id).

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
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, Unpack

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.commit.committer import Committer
from lakeops.errors import (
    CommitStateUnknownError,
    ConfigurationError,
    DataValidationError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.format.kv import RowKind
from lakeops.format.snapshot import Snapshot
from lakeops.options.rows_merge import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
)
from lakeops.read.guard import at_latest
from lakeops.read.predicate import Filter, RowFilter, row_filter
from lakeops.read.row_tracking import row_tracking
from lakeops.store.context import TableContext
from lakeops.table.row_files import (
    Changed,
    Decide,
    FileChange,
    FileRows,
    Prepared,
    prepare_change,
)
from lakeops.table.scan import Scan, ScanArgs
from lakeops.write.frames import WriteInput, arrow_parts

__all__ = ["MergeBuilder", "RowChanges", "checked_update", "delete_rows", "update_rows"]

T = TypeVar("T")

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
    def scan(self, **scan: Unpack[ScanArgs]) -> Scan: ...
    def new_write(
        self,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
    ) -> Any: ...
    def commit(self, messages: Sequence[CommitMessage]) -> Snapshot | None: ...
    def _committer(self) -> Committer: ...
    def _plan(
        self, snapshot: Snapshot | None, rf: RowFilter | None, *, every_level: bool = False
    ) -> Sequence[Any]: ...
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


def _evaluated(rows: pa.Table, expression: pc.Expression) -> pa.ChunkedArray:
    """``expression`` evaluated over every row of ``rows``.

    ``pyarrow.dataset`` is imported here, on first use: importing it imports pandas where
    pandas is installed (about 50 MiB and 0.1 s a process that reads never needs)."""
    import pyarrow.dataset as ds

    return ds.dataset(rows).to_table(columns={"e": expression}).column(0)


def _truth(rows: pa.Table, expression: pc.Expression) -> np.ndarray:
    """Where ``expression`` is TRUE over ``rows`` (NULL counts as not true)."""
    if rows.num_rows == 0:
        return np.zeros(0, dtype=bool)
    out = _evaluated(rows, expression)
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
                got = _evaluated(rows, value) if n else None
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
def _removed_by(rf: RowFilter, rows: FileRows) -> np.ndarray:
    """The live rows of a file where ``rf``'s condition is TRUE (reading its columns only)."""
    hit: np.ndarray = _truth(rows.table(rf.columns or None), rf.expression) & ~rows.dead
    return hit


# ---------------------------------------------------------------- delete / update
def committed_rows(table: Target, condition: pc.Expression, snapshot: Snapshot) -> pa.Table:
    """The merged rows of a primary-key table at ``snapshot`` that ``condition`` holds for,
    as a row-level change reads them: from every committed record, level 0 included where
    batch reads skip it (a deletion-vector table's records no compaction has reached yet — a
    ``write-only`` writer's, or one whose compaction lost a race). A batch read does not see
    those records until they are compacted; a change that read as it does would miss a row
    such a record added (it would come back after the next compaction) or update a key from
    the value that record replaced (losing it)."""
    scan = table.scan(filter=condition, snapshot_id=snapshot.id)
    return replace(scan, every_level=True).read()


def read_latest(table: Target, read: Callable[[Snapshot | None], T]) -> T:
    """``read(the latest snapshot)``, read again on the then latest one where expiry removed it
    meanwhile (:func:`lakeops.read.guard.at_latest`). Nothing is committed in ``read``: a
    primary-key change writes after it has read, an append-table change prepares its files
    (:func:`lakeops.table.row_files.prepare_change`, which deletes them when it fails) and
    commits once, after."""
    return at_latest(table.context.store, read)


def _latest_rows(table: Target, condition: pc.Expression) -> pa.Table | None:
    """:func:`committed_rows` at the latest snapshot (None: the table has none), through
    :func:`read_latest`."""
    return read_latest(table, lambda s: None if s is None else committed_rows(table, condition, s))


def delete_rows(table: Target, condition: Filter) -> RowChanges:
    """Delete the rows ``condition`` holds for (see the module docstring)."""
    _check(table, "delete")
    rf = _condition(table, condition)
    ctx = table.context
    if ctx.schema.primary_keys:
        found = _latest_rows(table, rf.expression)
        if found is None:
            return RowChanges()
        empty = found.schema.empty_table()
        return RowChanges(found.num_rows, 0, 0, _commit_keyed(table, found, empty, empty))

    def decide(rows: FileRows) -> FileChange | None:
        hit = _removed_by(rf, rows)
        return FileChange(hit) if hit.any() else None

    changed = _changed_files(table, rf, decide)
    return RowChanges(changed.removed, 0, 0, changed.snapshot_id)


def checked_update(
    table: Target, condition: Filter, assignments: Mapping[str, Assignment]
) -> RowFilter:
    """Refuse an update Paimon refuses, or whose assignments name no column, a primary-key
    column or a value that does not fit, before anything is read; its condition."""
    _check(table, "update")
    if not assignments:
        raise ConfigurationError("an update needs at least one column to set")
    _check_keys_kept(table, assignments)
    rf = _condition(table, condition)
    schema = table.arrow_schema
    _assigned(schema.empty_table(), schema, assignments)  # names and types, before reading
    return rf


def update_rows(
    table: Target, condition: Filter, assignments: Mapping[str, Assignment]
) -> RowChanges:
    """Set ``assignments`` on the rows ``condition`` holds for (see the module docstring)."""
    rf = checked_update(table, condition, assignments)
    ctx = table.context
    schema = table.arrow_schema
    if ctx.schema.primary_keys:
        found = _latest_rows(table, rf.expression)
        if found is None:
            return RowChanges()
        updates = _assigned(found, schema, assignments)
        empty = schema.empty_table()
        return RowChanges(0, found.num_rows, 0, _commit_keyed(table, empty, updates, empty))

    def decide(rows: FileRows) -> FileChange | None:
        hit = _removed_by(rf, rows)
        if not hit.any():
            return None
        return FileChange(hit, _assigned(rows.table().filter(pa.array(hit)), schema, assignments))

    changed = _changed_files(table, rf, decide)
    return RowChanges(0, changed.appended, 0, changed.snapshot_id)


def _changed_files(table: Target, rf: RowFilter, decide: Decide) -> Changed:
    """``decide`` applied to the append table's files at the latest snapshot and committed
    (:mod:`lakeops.table.row_files`), prepared again where expiry removed that snapshot while
    the change read it (:func:`read_latest`); nothing when the table has no snapshot."""
    prepared = read_latest(
        table, lambda s: None if s is None else prepare_change(table, s, rf, decide)
    )
    return Changed(0, 0, None) if prepared is None else prepared.commit()


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
        if ctx.schema.primary_keys:
            deletes, updates, inserts = read_latest(table, self.keyed_changes)
            snapshot_id = _commit_keyed(table, deletes, updates, inserts)
            return RowChanges(deletes.num_rows, updates.num_rows, inserts.num_rows, snapshot_id)
        source, value_sets, keys = self._keyed_source()
        if ctx.store.latest_snapshot() is None:  # nothing to match: the table's first rows
            inserts = self._inserted_rows(source)
            published = table.commit(_written(table, inserts)) if inserts.num_rows else None
            snapshot_id = None if published is None else published.id
            return RowChanges(0, 0, inserts.num_rows, snapshot_id)
        rf = row_filter(keys, table.arrow_schema)
        # prepared again on the latest snapshot where expiry removed the one it read
        prepared, inserted = read_latest(
            table, lambda s: self._prepare_append(s, source, rf, value_sets)
        )
        changed = prepared.commit()
        # a matched row is deleted or updated (its new row appended), never both
        deleted = changed.removed - changed.appended
        return RowChanges(deleted, changed.appended, inserted, changed.snapshot_id)

    def _keyed_source(self) -> tuple[pa.Table, dict[str, pa.Array], pc.Expression]:
        """The source as the join takes it (``source.`` columns and each row's number), the
        source values of each ``on`` column, and the filter of target rows they may match."""
        source = _prefixed(self.source, "source.").append_column(
            _SOURCE_ROW, pa.array(np.arange(self.source.num_rows, dtype=np.int64))
        )
        # each key's source values as one array (``isin`` of a chunked array would convert it
        # value by value in Python)
        value_sets = {c: self.source.column(c).drop_null().combine_chunks() for c in self.on}
        keys = pc.field(self.on[0]).isin(value_sets[self.on[0]])
        for c in self.on[1:]:
            keys = keys & pc.field(c).isin(value_sets[c])
        return source, value_sets, keys

    def keyed_changes(self, snapshot: Snapshot | None) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The records a merge into a primary-key table writes, reading the target rows of the
        source's keys at ``snapshot``: the rows it deletes, the rows it updates (assignments
        applied) and the rows it inserts, each as the table's columns."""
        source, _, keys = self._keyed_source()
        table = self.table
        target = committed_rows(table, keys, snapshot) if snapshot else None
        rows = target if target is not None else table.arrow_schema.empty_table()
        deletes, updates, inserts = self._outcome(self._join(rows, source))
        return deletes.drop_columns([_TARGET_ROW]), updates.drop_columns([_TARGET_ROW]), inserts

    def _prepare_append(
        self,
        snapshot: Snapshot | None,
        source: pa.Table,
        rf: RowFilter | None,
        value_sets: Mapping[str, pa.Array],
    ) -> tuple[Prepared, int]:
        """The merge into an append table at ``snapshot``, prepared (not committed), and the
        rows it inserts; file by file on the cores (of the files the key filter's statistics
        keep; :func:`lakeops.table.row_files.prepare_change`): a file's
        ``on`` columns find the target rows a source row matches; a file holding one is then
        read whole, its matched rows take their clauses, and it is rewritten (or vectored)
        without the rows deleted or updated. Once every file is decided, the source rows that
        matched none take the not-matched clauses. ``value_sets``: each ``on`` column's
        non-null source values."""
        table = self.table
        keys = source.select([*("source." + c for c in self.on), _SOURCE_ROW])
        matched: list[np.ndarray] = []  # the source rows each file matched (list.append: atomic)

        def decide(rows: FileRows) -> FileChange | None:
            positions, source_rows = self._file_matches(rows, value_sets, keys)
            if not len(positions):
                return None
            matched.append(source_rows)
            whole = rows.table()
            hit = np.zeros(whole.num_rows, dtype=bool)
            hit[positions] = True  # positions ascend: a filter keeps their order, chunk-wise
            target = _prefixed(whole.filter(pa.array(hit)), "target.")
            joined = target.append_column(_TARGET_ROW, pa.array(positions))
            picked = source.take(pa.array(source_rows))
            for name in picked.column_names:
                joined = joined.append_column(name, picked.column(name))
            deletes, updates = self._matched_rows(joined)
            removed = np.zeros(whole.num_rows, dtype=bool)
            removed[deletes.column(_TARGET_ROW).to_numpy()] = True
            removed[updates.column(_TARGET_ROW).to_numpy()] = True
            return FileChange(removed, updates.drop_columns([_TARGET_ROW]))

        inserts: list[pa.Table] = []

        def inserted() -> pa.Table:
            taken = np.zeros(source.num_rows, dtype=bool)
            for rows in matched:
                taken[rows] = True
            inserts.append(self._inserted_rows(source.filter(pa.array(~taken))))
            return inserts[0]

        if snapshot is None:  # (snapshots are never all removed once there is one)
            raise SnapshotNotFoundError(f"table {table.identifier!r} has no snapshot any more")
        prepared = prepare_change(table, snapshot, rf, decide, inserted=inserted)
        return prepared, inserts[0].num_rows

    def _file_matches(
        self, rows: FileRows, value_sets: Mapping[str, pa.Array], keys: pa.Table
    ) -> tuple[np.ndarray, np.ndarray]:
        """The live rows of one file that source rows match on ``on`` (reading those columns
        only), ascending, and the source row (``_SOURCE_ROW`` of ``keys``) of each. A target
        row matched twice is an error."""
        target = rows.table(self.on)
        live = ~rows.dead
        for c in self.on:  # a cheap superset first: rows whose every key is some source key
            column = target.column(c)
            if column.type == value_sets[c].type:
                hit = pc.fill_null(pc.is_in(column, value_set=value_sets[c]), False)
                live &= hit.to_numpy(zero_copy_only=False)
        candidates = _prefixed(target.filter(pa.array(live)), "target.").append_column(
            _TARGET_ROW, pa.array(np.flatnonzero(live))
        )
        joined = keys.join(  # hashes the file's candidates, the right side
            candidates,
            keys=["source." + c for c in self.on],
            right_keys=["target." + c for c in self.on],
            join_type="inner",
            coalesce_keys=False,
        )
        self._check_single(joined)
        positions = joined.column(_TARGET_ROW).to_numpy()
        order = np.argsort(positions, kind="stable")
        return positions[order], joined.column(_SOURCE_ROW).to_numpy()[order]

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
        self._check_single(joined.filter(both))
        return joined

    def _check_single(self, matched: pa.Table) -> None:
        """Refuse a target row (``_TARGET_ROW``) of ``matched`` pairs matched twice."""
        counts = pc.value_counts(matched[_TARGET_ROW])
        if len(counts) and pc.max(counts.field("counts")).as_py() > 1:
            raise DataValidationError(
                "the merge matched one target row with several source rows (on "
                f"{self.on}); make the source's {self.on} unique"
            )

    def _outcome(self, joined: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The target rows deleted and updated (with ``_TARGET_ROW``) and the rows inserted."""
        valid_t = pc.is_valid(joined[_TARGET_ROW]).to_numpy(zero_copy_only=False)
        valid_s = pc.is_valid(joined[_SOURCE_ROW]).to_numpy(zero_copy_only=False)
        deletes, updates = self._matched_rows(joined.filter(pa.array(valid_t & valid_s)))
        inserts = self._inserted_rows(joined.filter(pa.array(valid_s & ~valid_t)))
        return deletes, updates, inserts

    def _matched_rows(self, matched: pa.Table) -> tuple[pa.Table, pa.Table]:
        """The target rows of ``matched`` pairs (``target.`` and ``source.`` columns, each row
        a match) that the matched clauses delete and update (the new rows), each with its
        ``_TARGET_ROW``: a pair takes the first clause whose condition holds, or none."""
        schema = self.table.arrow_schema
        deletes, updates = [], []
        free = np.ones(matched.num_rows, dtype=bool)
        for clause in self.matched:
            take = free & _holds(matched, clause.condition)
            free &= ~take
            picked = matched.filter(pa.array(take))
            if clause.kind == "delete":
                deletes.append(_keep_row(_assigned(picked, schema, {}, "target."), picked))
            else:
                rows = _assigned(picked, schema, clause.assignments or {}, "target.")
                updates.append(_keep_row(rows, picked))
        empty = _keep_row(schema.empty_table(), pa.table({_TARGET_ROW: pa.array([], pa.int64())}))
        return (
            pa.concat_tables(deletes) if deletes else empty,
            pa.concat_tables(updates) if updates else empty,
        )

    def _inserted_rows(self, unmatched: pa.Table) -> pa.Table:
        """The rows the not-matched clauses insert for ``unmatched`` source rows (``source.``
        columns; ``target.`` ones are NULL where absent): a row takes the first clause whose
        condition holds, or none."""
        schema = self.table.arrow_schema
        n = unmatched.num_rows
        for f in schema:  # a not-matched row's target columns are NULL (the outer join's)
            if "target." + f.name not in unmatched.column_names:
                unmatched = unmatched.append_column("target." + f.name, pa.nulls(n, f.type))
        free = np.ones(n, dtype=bool)
        inserts = []
        for clause in self.not_matched:
            take = free & _holds(unmatched, clause.condition)
            free &= ~take
            picked = unmatched.filter(pa.array(take))
            inserts.append(_inserted(picked, schema, clause.assignments or {}))
        return pa.concat_tables(inserts) if inserts else schema.empty_table()


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
