"""The :class:`AppendTable` facade: write, read, compact and maintain one Paimon append table
(a table without a primary key)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.changelog.reader import ROW_KIND_COLUMN
from lakeops.compact.append import plan as plan_compaction
from lakeops.errors import (
    CommitStateUnknownError,
    ConfigurationError,
    UnsupportedFeatureError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.io.file_io import FileIO
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.formats import check_writable
from lakeops.options.rows_layout import bucket_count_set
from lakeops.parallel import imap_ordered
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.guard import guard_read
from lakeops.read.predicate import RowFilter
from lakeops.read.row_tracking import (
    SYSTEM_FIELDS,
    GroupReader,
    data_evolution,
    row_id_groups,
    row_tracking,
)
from lakeops.read.scan import Split, plan_append_splits, snapshot_deletion_files
from lakeops.store.consumers import check_consumer_id, read_as_consumer
from lakeops.table.base import BaseTable, CompactionPlanner
from lakeops.table.scan import SplitRead
from lakeops.table.system_tables import binlog_of_audit_log, system_table_schema
from lakeops.write.append_write import AppendWrite
from lakeops.write.update_columns import write_column_updates

__all__ = ["AppendSplitReader", "AppendTable"]

log = logging.getLogger(__name__)

_BATCH_ROWS = 131_072


def _kind(schema: TableSchema) -> str:
    """The kind of append table, as errors name it."""
    bucketed = bucket_count_set(schema.options)
    kind = "a bucketed append table" if bucketed else "an append table"
    if data_evolution(schema):
        return kind + " with data evolution"
    return kind + " with row tracking" if row_tracking(schema) else kind


class AppendSplitReader:
    """Reads whole splits of one append table (every row of its files, in order)."""

    def __init__(self, table: AppendTable) -> None:
        self.table = table

    def read(self, split: Split, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows of ``split`` (``columns``: all by default)."""
        wanted = self.table._columns(columns)
        return self.table._read_splits(SplitRead([split], wanted, parallelism=1))


class AppendTable(BaseTable):
    """One append table (no primary key) of a warehouse; get it from
    :class:`~lakeops.Catalog`. Every row written is a row of the table: nothing is merged.

    Example:
        >>> events = catalog.create_table("db.events", schema=schema,     # doctest: +SKIP
        ...     partition_keys=["dt"])
        >>> events.write(pa.table({...}))                                  # doctest: +SKIP
        >>> events.read(filter=pc.field("level") == "ERROR")               # doctest: +SKIP
    """

    #: a compaction in a commit that conflicts fails the commit (an append table's writers
    #: compact nothing: a commit's compaction is a compaction job's)
    _drops_conflicting_compaction = False

    def __init__(
        self, identifier: str, file_io: FileIO, root: str, *, branch: str | None = None
    ) -> None:
        super().__init__(identifier, file_io, root, branch=branch)
        if self.schema.primary_keys:
            raise ConfigurationError(f"table {identifier!r} has a primary key: open it as Table")
        # a malformed table-wide or append option fails at open
        self.context.options  # noqa: B018
        self.context.append  # noqa: B018

    def delete_uncommitted(
        self, messages: Sequence[CommitMessage], *, compaction_only: bool = False
    ) -> None:
        """As :meth:`lakeops.table.base.BaseTable.delete_uncommitted`."""
        super().delete_uncommitted(messages, compaction_only=compaction_only)

    # ------------------------------------------------------------ metadata tables
    def metadata_table(self, name: str, *, snapshot_id: int | None = None) -> pa.Table:
        """As :meth:`lakeops.table.base.BaseTable.metadata_table`; ``audit_log`` is the
        snapshot's rows, each ``+I`` (an append table holds no retractions), ``binlog`` the
        same with each value as an array of one, and ``ro`` the snapshot's rows (Paimon's
        read-optimized table of an append table is the table itself)."""
        kind = name.lower() if isinstance(name, str) else name
        if kind not in ("audit_log", "binlog", "ro"):
            return super().metadata_table(name, snapshot_id=snapshot_id)
        rows = self.read(snapshot_id=snapshot_id)
        if kind == "ro":
            return rows
        schema = system_table_schema("audit_log", self.schema)
        kinds = pc.fill_null(pa.nulls(rows.num_rows, pa.string()), "+I")
        audit = pa.Table.from_arrays([kinds, *rows.columns], schema=schema)
        return audit if kind == "audit_log" else binlog_of_audit_log(audit, self.schema)

    # -------------------------------------------------------------------- write
    def new_write(
        self,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
    ) -> AppendWrite:
        """A two-phase writer: ``write`` batches, then ``prepare_commit`` → :meth:`commit`.
        ``overwrite`` (``True`` or partition specs) prepares messages for
        ``commit(..., overwrite=…)``."""
        self._require_writable("write")
        check_writable(self.schema)
        self.file_io.check_commit_ready()
        return AppendWrite(
            self.context, ignore_previous=overwrite is not False, parallelism=parallelism
        )

    def update_columns(
        self, data: pa.Table | pa.RecordBatch, *, columns: Sequence[str] | None = None
    ) -> Snapshot | None:
        """Set ``columns`` (default: every column of ``data`` but ``_ROW_ID``) of the rows
        ``data``'s ``_ROW_ID`` names to its values, as one ``APPEND`` commit of files that hold
        only those columns (pypaimon's ``update_columns``; a data-evolution table only; see
        :mod:`lakeops.write.update_columns`). Returns the snapshot (None: no rows).

        Row ids that are not rows of the latest snapshot, unknown or partition columns and
        values the columns cannot hold are refused before anything is written; if another
        commit replaced the updated rows before this one publishes (an overwrite), nothing
        is committed (:class:`~lakeops.errors.CommitConflictError`) and the files go.

        Example:
            >>> table.update_columns(pa.table({"_ROW_ID": [0, 5], "score": [1.0, 2.5]}))
            ...                                                          # doctest: +SKIP
        """
        self._require_writable("update columns of")
        if not data_evolution(self.schema):
            raise UnsupportedFeatureError(
                f"update_columns of table {self.identifier!r} needs 'data-evolution.enabled' "
                "= 'true' (and 'row-tracking.enabled'): files of some columns are merged by "
                "row id only in such tables; nothing was written"
            )
        check_writable(self.schema)
        self.file_io.check_commit_ready()
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        snapshot = self.store.latest_snapshot()
        if table.num_rows == 0 or snapshot is None:
            if table.num_rows:
                raise ConfigurationError(
                    f"table {self.identifier!r} has no rows to update; nothing was written"
                )
            return None
        update = write_column_updates(self.context, self._reader(), snapshot, table, columns)
        try:
            return self.commit(update.messages)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            for path in update.written:
                self.file_io.delete(path)
            raise

    def _compaction_planner(self) -> CompactionPlanner:
        """Paimon's small-file compaction of append tables (:mod:`lakeops.compact.append`)."""
        return plan_compaction

    def split_reader(self) -> AppendSplitReader:
        """Reads the rows of this table's splits (:meth:`splits`), one split at a time (as
        engines that distribute a read do: the Spark data source)."""
        return AppendSplitReader(self)

    # --------------------------------------------------------------------- read
    def _reader(self) -> AppendFileReader:
        return AppendFileReader(self.file_io, self.schema, self.store.schema, self.root)

    def _system_columns(self) -> list[str]:
        """The system columns a read may select: ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` where
        the table tracks rows (:mod:`lakeops.read.row_tracking`)."""
        return [f.name for f in SYSTEM_FIELDS] if row_tracking(self.schema) else []

    def _row_schema(self) -> pa.Schema:
        """The columns reads may select and filter on: the table's, then its system columns."""
        schema = self.arrow_schema
        for f in SYSTEM_FIELDS:
            if f.name in self._system_columns():
                schema = schema.append(f)
        return schema

    def _columns(self, columns: Sequence[str] | None) -> list[str]:
        """As :meth:`lakeops.table.base.BaseTable._columns`; a row-tracking table's system
        columns may be named too (never returned unless named)."""
        if columns is None:
            return super()._columns(None)
        system = self._system_columns()
        super()._columns([c for c in columns if c not in system])
        return list(columns)

    def _read_columns(self, wanted: list[str], rf: RowFilter | None) -> list[str]:
        """``wanted`` plus what the filter reads."""
        if rf is None:
            return wanted
        names = [*self.schema.field_names, *self._system_columns()]
        extra = [c for c in names if c in rf.columns and c not in wanted]
        return [*wanted, *extra]

    def _system_columns_in(self, cols: Sequence[str]) -> bool:
        return any(c in self._system_columns() for c in cols)

    def _tracked(self) -> bool:
        """Whether reads go through :class:`~lakeops.read.row_tracking.GroupReader`."""
        return row_tracking(self.schema) or data_evolution(self.schema)

    def _units(self, split: Split) -> list[tuple[DataFileMeta, tuple[DataFileMeta, ...]]]:
        """What is read as one, each after the file whose deletion file applies to it (for
        :meth:`~lakeops.read.scan.Split.deletion_of`): a data-evolution table's row-id groups
        (which hold no deletion vectors: planning refuses them), else each file alone."""
        if data_evolution(self.schema):
            return [(group[0], group) for group in row_id_groups(split.files)]
        return [(f, (f,)) for f in split.files]

    def _plan(
        self,
        snapshot: Snapshot | None,
        rf: RowFilter | None,
        *,
        every_level: bool = False,  # noqa: ARG002 (the hook's signature)
    ) -> list[Split]:
        """The splits of ``snapshot``, pruned by ``rf`` (by partition, bucket and the files'
        value statistics: :mod:`lakeops.read.scan`); ``every_level`` changes nothing (an
        append table's batch reads skip no file)."""
        return plan_append_splits(self.context, snapshot, rf)

    def _read_optimized(self, splits: Sequence[Split]) -> Sequence[Split]:
        """``splits`` unchanged: an append table's read-optimized read is the table itself."""
        return splits

    def _work(
        self, splits: Sequence[Split]
    ) -> list[tuple[str, tuple[DataFileMeta, ...], DeletionFile | None]]:
        """What a read of ``splits`` reads, in order: each unit (:meth:`_units`) with its
        bucket's directory and its deletion file."""
        return [
            (self.context.bucket_path(s.partition_bytes, s.bucket), unit, s.deletion_of(i))
            for s in splits
            for i, unit in self._units(s)
        ]

    def _read_splits(self, read: SplitRead) -> pa.Table:
        splits, wanted, rf, parallelism = read.splits, read.wanted, read.rf, read.parallelism
        reader = self._reader()
        groups = GroupReader(reader)
        dvs = DeletionVectorReader(self.file_io)
        cols = self._read_columns(wanted, rf)
        tracked = self._tracked()

        def read_unit(
            directory: str, unit: tuple[DataFileMeta, ...], dv: DeletionFile | None
        ) -> pa.Table:
            # a unit with a deletion file is one whole file (data-evolution tables with
            # vectors are refused at planning), so positions are the file's
            if tracked:
                return dvs.apply(groups.read(directory, unit, cols), dv, unit[0])
            return dvs.apply(reader.read(directory, unit[0], cols), dv, unit[0])

        work = self._work(splits)
        parts = list(imap_ordered(lambda item: read_unit(*item), work, parallelism))
        schema = groups.output_schema(cols)
        result = pa.concat_tables(parts) if parts else schema.empty_table()
        if rf is not None:
            result = result.filter(rf.expression)
        return result.select(wanted)

    def _stream_splits(self, read: SplitRead) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """The rows of ``splits``, streamed file by file (see :meth:`lakeops.Scan.to_batches`)."""
        splits, wanted, rf, parallelism = read.splits, read.wanted, read.rf, read.parallelism
        batch_rows = read.batch_rows
        reader = self._reader()
        groups = GroupReader(reader)
        dvs = DeletionVectorReader(self.file_io)
        cols = self._read_columns(wanted, rf)
        rows = batch_rows or _BATCH_ROWS
        if rows <= 0:
            raise ConfigurationError(f"batch_rows must be positive, got {batch_rows}")
        out_schema = groups.output_schema(wanted)
        # a whole file streams in batches; a row-id group (its files aligned by position), a
        # file of some columns or the system columns (numbered by position) are read whole,
        # then sliced
        system = self._system_columns_in(cols)

        def tables(directory: str, unit: tuple[DataFileMeta, ...]) -> Iterator[pa.Table]:
            if len(unit) == 1 and unit[0].write_cols is None and not system:
                yield from reader.iter_batches(directory, unit[0], cols, rows)
                return
            whole = groups.read(directory, unit, cols)
            for start in range(0, whole.num_rows, rows):
                yield whole.slice(start, rows)

        work = self._work(splits)

        def unit_tables(
            directory: str, unit: tuple[DataFileMeta, ...], dv: DeletionFile | None
        ) -> Iterator[pa.Table]:
            return dvs.iter_apply(tables(directory, unit), dv, unit[0])

        def read_ahead() -> Iterator[pa.Table]:
            # an explicit parallelism reads that many files ahead, each whole, in order
            for read in imap_ordered(lambda item: list(unit_tables(*item)), work, parallelism):
                yield from read

        def batches() -> Iterator[pa.RecordBatch]:
            pieces: Iterator[pa.Table]
            if parallelism is None or parallelism == 1:
                pieces = (t for item in work for t in unit_tables(*item))
            else:
                pieces = read_ahead()
            for table in pieces:
                if rf is not None:
                    table = table.filter(rf.expression)
                for batch in table.select(wanted).to_batches():
                    if batch.num_rows:
                        yield batch

        return out_schema, batches()

    def _refuse_deleted_rows(self, snapshot: Snapshot) -> None:
        """Refuse a snapshot that changed deletion vectors (Paimon's ``DELETE`` of an append
        table with ``deletion-vectors.enabled``): it removed rows, which an append table's
        changes (``+I`` only) cannot express."""
        if not snapshot.index_manifest:
            return
        previous = (
            self.store.snapshot(snapshot.id - 1)
            if self.store.snapshot_exists(snapshot.id - 1)
            else None
        )
        if previous is not None and previous.index_manifest == snapshot.index_manifest:
            return
        before = snapshot_deletion_files(self.context, previous)
        if snapshot_deletion_files(self.context, snapshot) != before:
            raise UnsupportedFeatureError(
                f"snapshot {snapshot.id} of {self.identifier!r} changed deletion vectors: it "
                "deleted rows, which read_changes of an append table (appended rows only) "
                f"cannot express — read the range after it, or read(snapshot_id={snapshot.id})"
            )

    def read_changes(
        self,
        from_snapshot: int = 0,
        to_snapshot: int | None = None,
        *,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        consumer_id: str | None = None,
    ) -> pa.Table:
        """The rows appended after ``from_snapshot`` up to ``to_snapshot`` (latest by default):
        the new files of every ``APPEND`` snapshot in between, with a ``_row_kind`` column
        (always ``+I``) first. ``COMPACT`` snapshots add no rows. An ``OVERWRITE`` in the range
        removed rows, which an append table's changes cannot express: refused. ``mode``: only
        ``auto`` and ``delta`` (the same thing here). ``consumer_id``: read as that Paimon
        consumer, as :meth:`lakeops.Table.read_changes` (resume at its ``nextSnapshot``, then
        record ``N + 1`` for the last snapshot ``N`` read)."""
        if consumer_id is not None:
            return read_as_consumer(
                self.store,
                check_consumer_id(consumer_id),
                from_snapshot,
                to_snapshot,
                lambda start, end: self.read_changes(start, end, mode=mode, columns=columns),
            )
        if mode not in ("auto", "delta"):
            raise UnsupportedFeatureError(
                f"read_changes mode {mode!r} is for primary-key tables; an append table's "
                "changes are its appended rows (mode 'auto' or 'delta')"
            )
        if data_evolution(self.schema):
            raise UnsupportedFeatureError(
                f"read_changes of {self.identifier!r} is refused: it is {_kind(self.schema)}, "
                "whose commits may update columns of existing rows, which appended-row changes "
                "cannot express; nothing was read — read(snapshot_id=...) each snapshot instead"
            )
        wanted = self._columns(columns)
        latest = self.store.latest_snapshot_id() or 0
        end = latest if to_snapshot is None else to_snapshot
        entries: list[ManifestEntry] = []
        planned: list[Snapshot] = []
        for sid in range(from_snapshot + 1, end + 1):
            snapshot = self.store.snapshot(sid)
            planned.append(snapshot)
            self._refuse_deleted_rows(snapshot)
            if snapshot.commit_kind == CommitKind.OVERWRITE:
                raise UnsupportedFeatureError(
                    f"snapshot {sid} of {self.identifier!r} is an OVERWRITE, which removed rows; "
                    "read_changes of an append table returns appended rows only — read the "
                    f"range after it, or read(snapshot_id={sid})"
                )
            if snapshot.commit_kind != CommitKind.APPEND:
                continue
            entries += [e for e in self.store.delta_entries(snapshot) if e.kind == FileKind.ADD]
        splits = plan_append_splits(self.context, None, None, entries)
        rows = guard_read(self.store, planned, lambda: self._read_splits(SplitRead(splits, wanted)))
        kinds = pa.array(["+I"] * rows.num_rows, pa.string())
        return rows.add_column(0, pa.field(ROW_KIND_COLUMN, pa.string(), False), kinds)
