"""What every kind of table shares: schema, options, writes, commits, compaction, reads (one
:class:`~lakeops.table.scan.Scan`), snapshots, tags and maintenance (expiry, orphan files,
rollback, check, commit statistics).

:class:`BaseTable` is the common base of :class:`lakeops.table.primary_key.Table` (primary-key
tables) and :class:`lakeops.table.append.AppendTable` (tables without a primary key). None of what
it holds depends on how a table's data files are merged: they only read and write snapshots,
manifests and files by name. What differs by kind is a hook each subclass implements: how a
writer writes (``new_write``), how a compaction is planned, what a conflicting compaction in
a commit does, and how a :class:`~lakeops.table.scan.Scan` plans and reads splits.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, Self, Unpack

import pyarrow as pa

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER, Committer
from lakeops.commit.retry import CommitRetry
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.commit.stats import CommitStats, commit_stats
from lakeops.compact.planner import CompactionProgress
from lakeops.compact.selection import check_where, select_partitions
from lakeops.compact.sort import SortStrategy, overwrite_entries, plan_sort, resolve_sort
from lakeops.errors import (
    CommitStateUnknownError,
    ConfigurationError,
    MissingDataFileError,
    MissingMetadataError,
    SnapshotNotFoundError,
    StaleWriteError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import SchemaChange, SetOption
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO
from lakeops.kv.formats import check_writable
from lakeops.maintenance.auto_tags import auto_tags_after_commit
from lakeops.maintenance.branches import (
    Branch,
    check_branch_name,
    create_branch,
    delete_branch,
    fast_forward,
    list_branches,
)
from lakeops.maintenance.check import CheckReport, check_table
from lakeops.maintenance.drop_partitions import DropPartitionsResult, drop_partitions
from lakeops.maintenance.expire import ExpireResult, Retention, expire_snapshots
from lakeops.maintenance.file_index import RewriteFileIndexResult, rewrite_file_index
from lakeops.maintenance.iceberg import check_iceberg_schema, iceberg_after_commit
from lakeops.maintenance.orphan import OrphanResult, check_threshold, remove_orphan_files
from lakeops.maintenance.partition_expire import PartitionExpireResult, expire_partitions
from lakeops.maintenance.repair import RepairReport, repair_table
from lakeops.maintenance.rescale import (
    RescalePlan,
    RescaleResult,
    partition_filter,
    plan_rescale,
)
from lakeops.maintenance.rollback import rollback_to
from lakeops.maintenance.tags import (
    create_tag,
    delete_tag,
    expire_tags,
    rename_tag,
    replace_tag,
)
from lakeops.options import TableOptions
from lakeops.options.parsing import parse_duration
from lakeops.options.rows_retention import TAG_DEFAULT_TIME_RETAINED
from lakeops.parallel import check_parallelism
from lakeops.read.guard import lost_race
from lakeops.read.predicate import Filter, row_filter
from lakeops.read.scan import Split, partition_matches
from lakeops.store import TableStore
from lakeops.store.consumers import clear_consumers, reset_consumer
from lakeops.store.context import TableContext
from lakeops.store.tags import Tag, list_tags
from lakeops.store.time_travel import AsOf, resolve_snapshot
from lakeops.table.row_level import MergeBuilder, RowChanges, delete_rows, update_rows
from lakeops.table.scan import READ_MODES, ReadMode, Scan, ScanArgs, ScanSource
from lakeops.table.schema_commit import alter_schema
from lakeops.table.system_tables import metadata_table
from lakeops.write.frames import WriteInput, in_memory

__all__ = ["BaseTable", "CompactionPlanner", "TableWriter"]


class CompactionPlanner(Protocol):
    """Picks a table's compactions and writes their new files, committing nothing: the result
    has ``messages`` (to commit) and ``written`` (the paths to delete if that fails)."""

    def __call__(
        self,
        ctx: TableContext,
        /,
        *,
        full: bool,
        partitions: Sequence[Mapping[str, Any]] | None,
        parallelism: int | None,
        progress: Callable[[CompactionProgress], None] | None = None,
        keep: Callable[[bytes], bool] | None = None,
    ) -> Any: ...


class TableWriter(Protocol):
    """What ``new_write`` returns, whatever the table's kind: rows in, commit messages out."""

    def write(self, data: WriteInput) -> None: ...

    def prepare_commit(self) -> list[CommitMessage]: ...

    def abort(self) -> None: ...


log = logging.getLogger(__name__)

#: write input that can be read again (a stale write is re-run on it)
_REPLAYABLE = (pa.Table, pa.RecordBatch)


class BaseTable(ScanSource):
    """One table of a warehouse, whatever its kind (see the module docstring)."""

    #: whether :meth:`commit` drops a compaction its messages carry when it conflicts with
    #: another job (deleting its new files), keeping the appended data committed; otherwise
    #: the conflict is raised
    _drops_conflicting_compaction: ClassVar[bool] = True

    def __init__(
        self, identifier: str, file_io: FileIO, root: str, *, branch: str | None = None
    ) -> None:
        self.identifier = identifier
        self.file_io = file_io
        self.root = root
        #: the branch this object reads and writes (None: the main branch; see :meth:`branch`)
        self.branch_name = branch
        self.store = TableStore(file_io, root, branch)
        #: the table at its current schema, every option family parsed once
        self.context = TableContext.latest(self.store)

    @property
    def schema(self) -> TableSchema:
        """The table's current schema."""
        return self.context.schema

    @property
    def options(self) -> TableOptions:
        """The table-wide options of the current schema, parsed."""
        return self.context.options

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, {self.file_io!r})"

    def _committer(
        self,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        watermark: int | None = None,
    ) -> Committer:
        """The committer of this table's commits, with Paimon's commit callbacks (automatic
        tags, Iceberg metadata). Exactly-once only where the caller names the commit (both a
        ``commit_user`` and a ``commit_identifier``): a user reused for several batch commits
        under the default identifier must not lose the later ones."""
        return Committer(
            self.context,
            commit_user,
            exactly_once=commit_user is not None and commit_identifier is not None,
            after_commit=(auto_tags_after_commit, iceberg_after_commit),
            watermark=watermark,
        )

    def _require_writable(self, action: str) -> None:
        """Refuse to ``action`` when the table's options (possibly set by another engine) are
        ones lakeops cannot honour exactly, or unknown to it (see
        :mod:`lakeops.options.registry`); nothing has been written at that point."""
        TableOptions.require_writable(self.schema, action, f"table {self.identifier!r}")
        check_iceberg_schema(self.schema, f"cannot {action} table {self.identifier!r}")

    # -------------------------------------------------------------------- write
    def new_write(
        self,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
    ) -> TableWriter:
        """A two-phase writer of this kind of table (see the subclasses); ``overwrite``: as
        the ``commit`` it prepares for."""
        raise NotImplementedError

    def write(
        self,
        data: WriteInput,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
        watermark: int | None = None,
    ) -> Snapshot | None:
        """Write ``data`` as one commit and return its snapshot (None if no rows and no
        overwrite). ``overwrite``: as :meth:`commit` (``True``: the table's rows are replaced;
        ``[{"dt": "2024-01-01"}]``: those partitions'); ``watermark``: as :meth:`commit`.

        ``parallelism``: how many buckets are flushed and compacted at once (default: the cores
        available, capped by the buckets in play); the result is the same at every value.

        Every row is validated before its bucket is flushed; on any error before the data is
        published every file this call wrote is deleted and the table is left exactly as it was.
        Once the data's snapshot is published it is never undone: a failing in-writer compaction
        after it is dropped (logged) and the snapshot returned. When publishing fails in a way
        that leaves open whether it landed, :class:`CommitStateUnknownError` is raised and every
        file is kept.

        Concurrent writers (primary-key tables): new files are re-sequenced at commit above
        what other commits added to the same buckets, so the later commit wins. A
        dynamic-bucket or cross-partition write that another commit made stale
        (:class:`StaleWriteError`) is run again on the new snapshot when ``data`` is an Arrow
        table or record batch, after the same pauses and within the same bounds as a commit's
        retries (``commit.timeout``, ``commit.max-retries``, ``commit.min-retry-wait``,
        ``commit.max-retry-wait``); other input raises it.
        """
        # in-memory input can be written again when another commit made the plan stale
        data = in_memory(data)
        retry = CommitRetry(self.context.commit_retry)
        while True:
            writer = self.new_write(overwrite=overwrite, parallelism=parallelism)
            try:
                writer.write(data)
                messages = writer.prepare_commit()
                if not messages and overwrite is False:
                    return None
                return self.commit(messages, overwrite=overwrite, watermark=watermark)
            except CommitStateUnknownError:
                raise  # the snapshot may reference these files: keep them
            except StaleWriteError as stale:
                writer.abort()
                if not isinstance(data, _REPLAYABLE):
                    raise
                # a stale plan means another commit was published: the table moved
                if not retry.wait_turn(progressed=True):
                    raise StaleWriteError(f"{stale}; {retry.verdict}") from stale
                log.info("%s: write re-planned on the new snapshot: %s", self.identifier, stale)
            except BaseException:
                writer.abort()
                raise

    def commit(
        self,
        messages: Sequence[CommitMessage],
        *,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        watermark: int | None = None,
        last_safe_snapshot: int | None = None,
    ) -> Snapshot | None:
        """Publish the messages of one or many writers: new data as one ``APPEND`` snapshot,
        then their compactions as one ``COMPACT`` snapshot. Returns the last snapshot (None if
        there was nothing to commit).

        ``overwrite=True`` makes it Paimon's ``OVERWRITE``: the table's live files are replaced
        by the new ones; a list of partition specs (``[{"dt": "2024-01-01"}]``) replaces only
        those partitions (static partition overwrite).

        Primary-key tables: appends never fail because of compaction: if another job replaced
        the files a writer's compaction read, that compaction is dropped (its new files
        deleted) and the appended data stays committed. Append tables: such a conflict is a
        :class:`~lakeops.errors.CommitConflictError`.

        ``commit_user`` and ``commit_identifier`` are stored in the snapshots, as Paimon's
        streaming writers use them: one stable user per job and an increasing identifier per
        checkpoint (or micro-batch); batch commits use ``Long.MAX_VALUE`` (the identifier when
        none is given). With both a ``commit_user`` and a ``commit_identifier`` given, the
        commit is exactly-once (:mod:`lakeops.commit.exactly_once`): when the newest snapshot
        of that user has an identifier at or above ``commit_identifier``, nothing is
        published, the files the messages add that the earlier commit does not name are
        deleted, and that snapshot is returned. So a retry (of a task, a micro-batch, or this
        call) with the same user and identifier lands once; a user that commits more than
        once needs a higher identifier each time. Without an identifier every call commits.

        ``watermark`` (epoch milliseconds, as a Flink job's) is stored in the snapshots, the
        larger of it and the latest snapshot's, as Paimon's commit does; with
        ``tag.automatic-creation = watermark`` automatic tags follow the watermarks
        (:mod:`lakeops.maintenance.auto_tags`).

        ``last_safe_snapshot`` (with an overwrite, Paimon's
        ``commit.strict-mode.last-safe-snapshot``): the snapshot the overwritten rows were read
        at; the commit is refused (:class:`~lakeops.errors.CommitConflictError`) when a later
        snapshot changed rows of the partitions it replaces (a compaction is no conflict), as a
        rescale's rewrite needs.
        """
        self._require_writable("commit to")
        committer = self._committer(commit_user, commit_identifier, watermark)

        def drop(conflict: Exception) -> None:
            log.warning("%s: in-writer compaction dropped: %s", self.identifier, conflict)
            self.delete_uncommitted(messages, compaction_only=True)

        return committer.commit(
            messages,
            BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier,
            on_compact_conflict=drop if self._drops_conflicting_compaction else None,
            overwrite=self._overwrite_predicate(overwrite),
            last_safe_snapshot=last_safe_snapshot,
        )

    def _overwrite_predicate(
        self, overwrite: bool | Sequence[Mapping[str, Any]]
    ) -> Callable[[bytes], bool] | None:
        """Which serialized partitions an overwrite replaces (None: no overwrite)."""
        if overwrite is False:
            return None
        if overwrite is True:
            return lambda _: True
        return partition_matches(self.schema, list(overwrite), self.options)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The table's columns as an Arrow schema."""
        return self.schema.arrow_schema()

    def alter(self, changes: SchemaChange | Sequence[SchemaChange]) -> TableSchema:
        """Apply Paimon schema changes (add / rename / drop column, widen a type, nullability,
        comments, set / remove option) as one new schema, and use it from now on.

        Changes Paimon refuses (primary- or partition-key columns, narrowing casts, options
        that cannot change once the table has data) and options lakeops cannot honour raise
        before anything is written. Files written before stay as they are: reads map them to
        the new schema by field id. Writers opened before the change refuse to commit.

        Example:
            >>> from lakeops.format import schema_change as sc            # doctest: +SKIP
            >>> table.alter([sc.RenameColumn("v", "value"),             # doctest: +SKIP
            ...              sc.AddColumn("note", DataType.parse("STRING"))])
        """
        batch = [changes] if isinstance(changes, SchemaChange) else list(changes)
        self.context = self.context.with_schema(alter_schema(self.store, batch))
        self.context.options  # noqa: B018 - parsed now, as at open
        return self.schema

    def delete_uncommitted(
        self, messages: Sequence[CommitMessage], *, compaction_only: bool = False
    ) -> None:
        """Delete the files never-committed messages carry (what an aborted job wrote): new
        data, changelog and compaction outputs — or, with ``compaction_only``, only what their
        compactions wrote. Upgraded files (same name before and after) are kept."""
        locations = self.context.locations
        for m in messages:
            keep = {f.file_name for f in m.compact_before}
            produced = [*m.compact_after, *m.compact_changelog_files]
            if compaction_only:
                keep |= {f.file_name for f in m.new_files}
            else:
                produced += [*m.new_files, *m.changelog_files]
            for f in produced:
                if f.file_name not in keep:
                    self.file_io.delete(
                        locations.entry_path(m.partition, m.bucket, f.file_name, f.external_path)
                    )

    # --------------------------------------------------------------- compaction
    def compact(
        self,
        *,
        full: bool = False,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        where: Filter | None = None,
        order_by: Sequence[str] | None = None,
        strategy: SortStrategy = "order",
        parallelism: int | None = None,
        progress: Callable[[CompactionProgress], None] | None = None,
    ) -> Snapshot | None:
        """Compact every bucket (or those of ``partitions``, e.g. ``[{"dt": "2024-01-01"}]``)
        as Paimon does for the table's kind: a primary-key table's sorted runs with its
        strategy (``full=True``: everything to the max level); an append table's small files
        (:mod:`lakeops.compact.append`; ``full=True``: a full compaction).

        Commits one ``COMPACT`` snapshot; None if nothing needed compacting. If a concurrent
        job replaced any input file, nothing is committed, the new files are deleted, and
        :class:`~lakeops.errors.CommitConflictError` is raised — retry on the new snapshot; so
        too when an input is found deleted because another job replaced it and an expiry
        removed every snapshot naming it (:func:`lakeops.read.guard.replaced_meanwhile`).

        ``where``: a filter over the partition columns only (either form :meth:`read` takes,
        e.g. ``pc.field("dt") >= "2024-01-01"``) selecting the partitions to compact, both
        table kinds; with ``partitions`` too, a partition must satisfy both. A filter naming
        another column is a :class:`~lakeops.errors.ConfigurationError` before anything runs
        (:mod:`lakeops.compact.selection`).

        ``order_by`` (unaware-bucket append tables only, as Paimon's ``sort_compact``): every
        row of each selected partition is read (deleted rows stay deleted), sorted by these
        columns with ``strategy`` (``"order"``: lexicographic; ``"zorder"``: Z-order curve;
        ``"hilbert"``: Hilbert curve, two columns or more) and rewritten as rolling files at
        ``target-file-size``, all committed as ONE ``OVERWRITE`` snapshot of those partitions
        (a concurrent change to them fails it with ``CommitConflictError``). An append
        table's ``full=True`` compaction does the same with its ``clustering.columns`` and
        ``clustering.strategy`` when set. Other tables, rows with ids (row tracking) and
        nested columns are refused before anything is written (see
        :mod:`lakeops.compact.sort`).

        ``parallelism``: how many buckets (compaction tasks) are compacted at once (default:
        the cores available, capped by the work to do) — a sort compaction sorts one
        partition at a time and reads, keys and writes it on that many threads; the result is
        the same at every value. ``progress``: called in the calling thread before the first
        bucket and after each with a :class:`~lakeops.compact.planner.CompactionProgress`
        (buckets, input files and bytes done of the total; an append table's "buckets" count
        its compaction tasks: one window of a fixed bucket, or one bin of a partition; a sort
        compaction's count partitions), e.g. to drive a progress bar.
        """
        return self._run_compaction(
            self._compaction_planner(),
            full,
            partitions,
            parallelism,
            progress,
            where=where,
            order_by=order_by,
            strategy=strategy,
        )

    def _compaction_planner(self) -> CompactionPlanner:
        """How this kind of table picks and writes a compaction (see the subclasses)."""
        raise NotImplementedError

    def _run_compaction(
        self,
        plan: CompactionPlanner,
        full: bool,
        partitions: Sequence[Mapping[str, Any]] | None,
        parallelism: int | None,
        progress: Callable[[CompactionProgress], None] | None,
        *,
        where: Filter | None = None,
        order_by: Sequence[str] | None = None,
        strategy: str = "order",
    ) -> Snapshot | None:
        """A compaction's shared steps: check the arguments (``where``, ``order_by`` and
        ``strategy`` as :meth:`compact` takes them), that the table may be written and that
        its store can commit; then either a sort compaction (``order_by``, or a full
        compaction of a clustered append table: :mod:`lakeops.compact.sort`) committed as
        one ``OVERWRITE`` snapshot, or ``plan`` writing the new files of the partitions
        selected and one ``COMPACT`` snapshot of them, as :meth:`commit_compaction` commits
        it. None: nothing to compact."""
        with self._lost_race_is_a_conflict():
            check_parallelism(parallelism)
            ctx = self.context
            sort = resolve_sort(ctx, order_by=order_by, strategy=strategy, full=full)
            condition = check_where(self.schema, where)
            self._require_writable("compact")
            check_writable(self.schema, "compact this table")
            self.file_io.check_commit_ready()
            keep = None
            if condition is not None:
                latest = self.store.latest_snapshot()
                keep = select_partitions(ctx, latest, partitions=partitions, condition=condition)
            if sort is not None:
                ordered = plan_sort(
                    ctx,
                    sort,
                    partitions=partitions,
                    keep=keep,
                    parallelism=parallelism,
                    progress=progress,
                )
                if not ordered.replaced:
                    return None

                def change(snapshot: Snapshot | None) -> PlannedChange:
                    entries, index_changes = overwrite_entries(ctx, ordered, snapshot)
                    return PlannedChange(entries, index_changes=index_changes)

                try:
                    return self._committer().commit_rewrite(change)
                except CommitStateUnknownError:
                    raise  # the snapshot may reference these files: keep them
                except BaseException:
                    ordered.discard(ctx)
                    raise
            # (a planner without partition selection, flush_level0's, is never given ``keep``)
            planned = (
                plan(
                    ctx,
                    full=full,
                    partitions=partitions,
                    parallelism=parallelism,
                    progress=progress,
                )
                if keep is None
                else plan(
                    ctx,
                    full=full,
                    partitions=partitions,
                    parallelism=parallelism,
                    progress=progress,
                    keep=keep,
                )
            )
            if not planned.messages:
                return None
            return self.commit_compaction(planned.messages, written=planned.written)

    @contextlib.contextmanager
    def _lost_race_is_a_conflict(self, what: str = "compaction") -> Iterator[None]:
        """Run a compaction (or another rewrite, ``what``); an input it finds deleted because
        another job replaced it and an expiry removed every snapshot naming it
        (:func:`~lakeops.read.guard.replaced_meanwhile`) is a lost race, raised as
        :class:`~lakeops.errors.CommitConflictError` — the rewrite has committed nothing and
        deleted what it wrote — not as corruption."""
        before = self.store.latest_snapshot()
        try:
            yield
        except (MissingDataFileError, MissingMetadataError) as exc:
            conflict = lost_race(self.store, before, exc, what)
            if conflict is None:
                raise
            raise conflict from exc

    def commit_compaction(
        self, messages: Sequence[CommitMessage], *, written: Sequence[str]
    ) -> Snapshot:
        """Commit a compaction job's messages as one ``COMPACT`` snapshot; on any failure
        (a conflict included) nothing is committed and ``written`` files are deleted."""
        try:
            self._require_writable("commit a compaction of")
            snapshot = self._committer().commit(messages)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            for path in written:
                self.file_io.delete(path)
            raise
        assert snapshot is not None
        return snapshot

    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained: str | None = None,
        limit: int | None = None,
        parallelism: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExpireResult:
        """Expire old snapshots by the table's ``snapshot.*`` / ``changelog.*`` retention (the
        arguments override ``snapshot.num-retained.min`` / ``.max``,
        ``snapshot.time-retained`` such as ``"30 min"``, ``snapshot.expire.limit``). Deletes
        only files no retained snapshot references; safe while writers run. ``parallelism``:
        files deleted at once in the last step (default 16: the work waits on storage).
        ``progress(done, total)``: files deleted so far of those found to delete so far, in the
        calling thread. See :mod:`lakeops.maintenance.expire`."""
        check_parallelism(parallelism)
        self._require_main("expire snapshots of")  # the main branch's expiry keeps branches
        self._require_writable("expire snapshots of")
        retention = Retention.from_options(
            self.schema,
            retain_min=retain_min,
            retain_max=retain_max,
            limit=limit,
            time_retained_ms=parse_duration(time_retained, "time_retained")
            if time_retained is not None
            else None,
        )
        return expire_snapshots(self.context, retention, parallelism=parallelism, progress=progress)

    def expire_partitions(
        self, *, dry_run: bool = False, now: dt.datetime | None = None
    ) -> PartitionExpireResult:
        """Drop the partitions ``partition.expiration-time`` expires, as Paimon does: by
        ``partition.expiration-strategy`` (``values-time``: the time in the partition's values,
        by ``partition.timestamp-pattern`` / ``-formatter``; ``update-time``: its newest
        file's creation time), as one ``OVERWRITE`` commit that adds no file. No file is
        deleted (snapshot expiry and orphan cleanup do that later). A call always checks
        (``partition.expiration-check-interval`` paces Paimon's streaming sink; lakeops'
        writes do not expire partitions). ``dry_run`` lists what would go and commits nothing;
        ``now``: the local wall time to judge by (default: now). See
        :mod:`lakeops.maintenance.partition_expire`."""
        if not dry_run:
            self._require_writable("expire partitions of")
        return expire_partitions(self.context, self._committer(), now=now, dry_run=dry_run)

    def delete(self, filter: Filter) -> RowChanges:
        """Delete the rows ``filter`` holds for (a filter as :meth:`read` takes it; a row where
        it is NULL stays), as Paimon's ``DELETE``, in one commit: a primary-key table gets
        ``-D`` records of those rows (its merge engine must remove keys on delete, as Paimon
        requires); an append table's files lose them through deletion vectors
        (``deletion-vectors.enabled``) or are rewritten without them. Returns the counts and
        the snapshot (None: nothing matched). See :mod:`lakeops.table.row_level`."""
        return delete_rows(self, filter)

    def update(self, filter: Filter, set: Mapping[str, Any]) -> RowChanges:
        """Set columns of the rows ``filter`` holds for, as Paimon's ``UPDATE``, in one commit:
        ``set`` maps columns to values or ``pyarrow.compute`` expressions over the row
        (``{"price": pc.field("price") * 1.1, "note": "repriced"}``); primary-key columns are
        never set. A primary-key table (deduplicate or partial-update) gets ``+U`` records of
        the updated rows; an append table's old rows are removed as by :meth:`delete` and the
        updated rows appended. See :mod:`lakeops.table.row_level`."""
        return update_rows(self, filter, set)

    def merge(self, source: WriteInput, on: Sequence[str]) -> MergeBuilder:
        """A ``MERGE INTO`` of ``source`` (Arrow data or a data frame) matched on ``on``
        columns: chain ``when_matched_update`` / ``when_matched_update_all`` /
        ``when_matched_delete`` / ``when_not_matched_insert`` / ``when_not_matched_insert_all``
        (each with an optional ``condition``; expressions name ``target.<column>`` and
        ``source.<column>``), then ``execute()`` — one commit. See
        :mod:`lakeops.table.row_level`."""
        return MergeBuilder(self, source, on)

    def drop_partitions(
        self,
        partitions: Sequence[Mapping[str, Any]],
        *,
        if_exists: bool = False,
        dry_run: bool = False,
    ) -> DropPartitionsResult:
        """Drop ``partitions`` (specs such as ``[{"dt": "2024-01-01"}]``; a spec naming some
        partition columns matches every partition equal on them) as one ``OVERWRITE`` commit
        that adds no file, as Paimon's ``dropPartitions`` (Spark's ``ALTER TABLE ... DROP
        PARTITION``). No file is deleted: snapshot expiry and orphan cleanup do that later. A
        spec matching no partition with data is a
        :class:`~lakeops.errors.PartitionNotFoundError` (nothing committed) unless
        ``if_exists``; ``dry_run`` lists what would go. See
        :mod:`lakeops.maintenance.drop_partitions`."""
        if not dry_run:
            self._require_writable("drop partitions of")
        return drop_partitions(
            self.context, self._committer(), partitions, if_exists=if_exists, dry_run=dry_run
        )

    def rewrite_file_index(
        self, *, partitions: Sequence[Mapping[str, str]] | None = None
    ) -> RewriteFileIndexResult:
        """Rebuild the file indexes of the live data files of ``partitions`` (each a
        ``{column: value}`` spec; all partitions without) as the table's ``file-index.*``
        options now ask, data untouched, as one ``COMPACT`` commit (Paimon's
        ``rewrite_file_index`` procedure). See :mod:`lakeops.maintenance.file_index`."""
        self._require_writable("rewrite the file indexes of")
        with self._lost_race_is_a_conflict("file index rewrite"):
            return rewrite_file_index(self.context, self._committer(), partitions)

    def rescale_buckets(
        self,
        *,
        bucket: int | None = None,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        parallelism: int | None = None,
    ) -> RescaleResult:
        """Rewrite partitions of a fixed-bucket table into its bucket count, as Paimon's
        "Rescale Bucket" (``ALTER TABLE ... SET ('bucket' = 'N')`` then ``INSERT OVERWRITE``)
        and its ``rescale`` procedure do (see :mod:`lakeops.maintenance.rescale`).

        ``bucket``: first change the table's ``bucket`` to it (an ``alter``; refused to or from
        -1, as in Paimon) — every partition then holds the old count. ``partitions``: the
        partitions to rewrite (``[{"dt": "2024-01-01"}]``); default: every partition whose
        files hold another count than the table's. Their rows are read at one snapshot (a
        primary-key table's merged rows: each key once, with its merged value, so the merge
        engine's result is kept), written with the table's count and published as ONE
        ``OVERWRITE`` commit of those partitions, refused (:class:`CommitConflictError`,
        nothing published) when another job changed their rows meanwhile. A failure before the
        publish leaves the table's data as it was (the alter, when ``bucket`` was given,
        stays: reads are exact, and writes to the old-count partitions are refused until a
        rescale succeeds). Returns what was rewritten (no snapshot when nothing needed it).

        Example:
            >>> table.rescale_buckets(bucket=8)                               # doctest: +SKIP
            >>> table.rescale_buckets(partitions=[{"dt": "2024-01-01"}])      # doctest: +SKIP
        """
        plan, previous, name = self._plan_rescale(bucket, partitions)
        if plan.empty or plan.snapshot is None:
            return RescaleResult((), previous, self.options.bucket, 0, None)
        chosen = set(plan.partitions)
        writer = self.new_write(overwrite=True, parallelism=parallelism)
        try:
            rows = 0
            for batch in self.to_batches(
                snapshot_id=plan.snapshot.id,
                filter=partition_filter(self.schema, plan.partitions),
                parallelism=parallelism,
            ):
                rows += batch.num_rows
                writer.write(batch)
            messages = writer.prepare_commit()
            snapshot = self._committer().commit(
                messages,
                overwrite=chosen.__contains__,
                last_safe_snapshot=plan.snapshot.id,
            )
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            writer.abort()
            raise
        # what a commit of the table does next: a deletion-vector table lifts the new level-0
        # files, which its batch reads (Paimon's too) skip
        self._settle(snapshot, messages)
        log.info(
            "%s: rescaled %d partitions to %d buckets (%d rows)",
            self.identifier,
            len(chosen),
            self.options.bucket,
            rows,
        )
        return RescaleResult(
            tuple(name(p) for p in plan.partitions), previous, self.options.bucket, rows, snapshot
        )

    def _settle(
        self,
        snapshot: Snapshot | None,
        messages: Sequence[CommitMessage],  # noqa: ARG002
    ) -> Snapshot | None:
        """What follows a commit of ``messages`` that published ``snapshot``: nothing here; a
        primary-key table compacts what its batch reads skip. Returns the last snapshot."""
        return snapshot

    def _plan_rescale(
        self, bucket: int | None, partitions: Sequence[Mapping[str, Any]] | None
    ) -> tuple[RescalePlan, dict[str, int], Callable[[bytes], str]]:
        """What :meth:`rescale_buckets` rewrites (the ``bucket`` alter done first), each
        partition's bucket count before, by directory name, and that name of a partition."""
        self._require_writable("rescale buckets of")
        plan = plan_rescale(self.context, partitions)  # refuses a non-fixed table up front
        if bucket is not None and bucket != self.options.bucket:
            self.alter(SetOption("bucket", str(bucket)))
            plan = plan_rescale(self.context, partitions)
        names = self.context.locations.partitions
        describe = names.dir_of if names is not None and self.schema.partition_keys else None

        def name(p: bytes) -> str:
            return describe(p) if describe is not None else ""

        return plan, {name(p): n for p, n in plan.counts.items()}, name

    def remove_orphan_files(
        self,
        *,
        older_than: dt.timedelta = dt.timedelta(days=1),
        dry_run: bool = False,
        force: bool = False,
        parallelism: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> OrphanResult:
        """Delete files no snapshot references that are older than ``older_than`` (default one
        day, as Paimon) — what crashed writers left. Younger files are never touched. A
        threshold below one hour (or negative) is refused unless ``force=True``: the files of
        a commit in progress look like orphans until it publishes. ``dry_run`` lists what
        would go and deletes nothing. ``parallelism``: files deleted at once (default 16).
        ``progress(done, total)``: files deleted of those to delete, in the calling thread."""
        self._require_main("remove orphan files of")
        check_parallelism(parallelism)
        older_than_ms = int(older_than.total_seconds() * 1000)
        check_threshold(older_than_ms, dry_run=dry_run, force=force)
        if not dry_run:
            self._require_writable("remove orphan files of")
        return remove_orphan_files(
            self.store,
            older_than_ms,
            dry_run,
            force=force,
            parallelism=parallelism,
            progress=progress,
        )

    def check(self) -> CheckReport:
        """Verify the table against its own metadata and change nothing: every snapshot,
        kept changelog, tag and branch snapshot, and the manifests they name, must decode;
        every data, changelog and index file they reference must exist with the recorded
        size (and, for Parquet and ORC, row count). See :mod:`lakeops.maintenance.check`."""
        return check_table(self.store)

    def repair(self, *, dry_run: bool = False) -> RepairReport:
        """Repair a wedged table (what :meth:`check` reports as a re-used snapshot id or a
        hint naming the wrong snapshot): every stray snapshot — an id below a missing one, no
        part of the table's history — is moved into ``_lakeops_repair/`` and reported with
        the commit it describes (its rows were never in the table: write them again), and
        ``LATEST``/``EARLIEST`` are pointed at the newest run of snapshots. Idempotent;
        ``dry_run`` changes nothing. See :mod:`lakeops.maintenance.repair`."""
        self._require_main("repair")
        return repair_table(self.store, dry_run=dry_run)

    def rollback_to(
        self,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        as_of: AsOf | None = None,
    ) -> Snapshot | None:
        """Make the table hold exactly what snapshot ``snapshot_id`` held — or the snapshot of
        ``tag`` (restored from the tag when the snapshot itself expired), or the table as of a
        time (``as_of``: a datetime, naive = local time, or epoch milliseconds) — as a new
        ``OVERWRITE`` snapshot (returned; None when the latest already holds it). Newer
        snapshots are kept until expiry and no file is deleted, so readers on them and
        concurrent writers are safe: a writer committing later builds on the rolled-back
        table (see :mod:`lakeops.maintenance.rollback`)."""
        if snapshot_id is None and tag is None and as_of is None:
            raise ConfigurationError("rollback_to needs a snapshot_id, a tag or an as_of time")
        self._require_writable("roll back")
        if snapshot_id is not None and tag is None and as_of is None:
            return rollback_to(self.context, snapshot_id)
        target = resolve_snapshot(self.store, snapshot_id=snapshot_id, tag=tag, as_of=as_of)
        if target is None:
            raise SnapshotNotFoundError(
                f"table {self.identifier!r} had no snapshot at {as_of!r}: nothing to roll back "
                "to (to empty the table, overwrite it with no rows)"
            )
        return rollback_to(self.context, target)

    def create_tag(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        as_of: AsOf | None = None,
        time_retained: str | None = None,
    ) -> Tag:
        """Tag snapshot ``snapshot_id`` (default: the latest) as ``name``, in Paimon's format
        (``tag/tag-<name>``), so Paimon, pypaimon and lakeops can read it
        (``read(tag=name)``, Spark ``scan.tag-name``) and expiry and orphan cleanup keep
        every file it references. ``as_of`` (a datetime, naive = local time, or epoch
        milliseconds; not with ``snapshot_id``) tags the earliest snapshot committed at or
        after that time, as Paimon's ``create_tag_from_timestamp`` (a tagged snapshot counts
        too; none is a :class:`~lakeops.errors.SnapshotNotFoundError`). ``time_retained``
        (e.g. ``"7 d"``; default the table's ``tag.default-time-retained``) is recorded in the
        tag as Paimon does. A name that exists for the same snapshot returns that tag; for
        another snapshot it is a :class:`~lakeops.errors.TagAlreadyExistsError`. See
        :mod:`lakeops.store.tags`."""
        return create_tag(
            self.store,
            name,
            snapshot_id,
            as_of=as_of,
            time_retained=self._tag_retention(time_retained),
        )

    def delete_tag(self, name: str) -> Tag:
        """Delete tag ``name`` and return what it was; files only it kept alive are left for
        ``remove_orphan_files``."""
        return delete_tag(self.store, name)

    def reset_consumer(self, consumer_id: str, *, next_snapshot: int | None = None) -> None:
        """Set Paimon consumer ``consumer_id`` (``consumer/consumer-<id>``) to read snapshot
        ``next_snapshot`` next, or delete it (None), as Paimon's ``reset_consumer``: a read of
        changes with that ``consumer_id`` then starts there, and expiry keeps that snapshot and
        every later one while the consumer lives. ``next_snapshot`` must be a snapshot on
        storage, one whose changelog is kept, or the one after the latest; otherwise a
        :class:`~lakeops.errors.SnapshotNotFoundError` and nothing changes. Deleting a
        consumer that does not exist does nothing. See :mod:`lakeops.store.consumers`."""
        reset_consumer(self.store, consumer_id, next_snapshot)

    def clear_consumers(
        self, *, including: str | None = None, excluding: str | None = None
    ) -> list[str]:
        """Delete the Paimon consumers whose id matches the regular expression ``including``
        (default: every consumer) and not ``excluding``, each matched against the whole id, as
        Paimon's ``clear_consumers``; returns the deleted ids, sorted. A pattern that is not a
        regular expression is a :class:`~lakeops.errors.ConfigurationError` before anything is
        deleted. ``metadata_table("consumers")`` lists them."""
        return clear_consumers(self.store, including=including, excluding=excluding)

    def tags(self) -> list[Tag]:
        """The table's tags, by snapshot id then name."""
        return list_tags(self.store)

    def rename_tag(self, old: str, new: str) -> Tag:
        """Rename tag ``old`` to ``new`` and return it, as Paimon's ``rename_tag``: the new tag
        file holds the same content (snapshot, create time, retention). A missing ``old`` is a
        :class:`~lakeops.errors.TagNotFoundError`, an existing ``new`` a
        :class:`~lakeops.errors.TagAlreadyExistsError`, and nothing changes. The new file is
        written first: a process killed midway leaves both names (``delete_tag(old)`` then
        finishes the rename), never neither."""
        return rename_tag(self.store, old, new)

    def replace_tag(
        self, name: str, snapshot_id: int | None = None, *, time_retained: str | None = None
    ) -> Tag:
        """Point the existing tag ``name`` at snapshot ``snapshot_id`` (default: the latest)
        and return it, as Paimon's ``replace_tag``; a missing tag is a
        :class:`~lakeops.errors.TagNotFoundError`. The tag file is overwritten atomically, with
        a fresh create time when it has a retention (``time_retained`` as for
        :meth:`create_tag`). Files only the old snapshot kept alive are left for
        ``remove_orphan_files``."""
        return replace_tag(
            self.store, name, snapshot_id, time_retained=self._tag_retention(time_retained)
        )

    def expire_tags(self, *, older_than: AsOf | None = None) -> list[str]:
        """Delete the expired tags and return their names, as Paimon's ``expire_tags``: a tag
        with a retention once its create time plus ``time_retained`` is past; with
        ``older_than`` (a datetime, naive = local time, or epoch milliseconds) also every tag
        created before it — a tag without a retention counts as created when its file was last
        written, as in Paimon. Files only they kept alive are left for ``remove_orphan_files``
        (see :func:`lakeops.maintenance.tags.expire_tags`)."""
        return expire_tags(self.store, older_than=older_than)

    def _tag_retention(self, time_retained: str | None) -> dt.timedelta | None:
        """``time_retained`` (default the table's ``tag.default-time-retained``) parsed."""
        retained = time_retained or TAG_DEFAULT_TIME_RETAINED.text(self.schema.options)
        if not retained:
            return None
        return dt.timedelta(milliseconds=parse_duration(retained, "time_retained"))

    # ------------------------------------------------------------------ branches
    def branch(self, name: str) -> Self:
        """Branch ``name`` of this table, to read and write as the table itself (its own
        snapshots, schemas and tags under ``branch/branch-<name>/``; data files shared), as
        Paimon's ``table$branch_<name>``. See :mod:`lakeops.maintenance.branches`."""
        check_branch_name(name)
        if self.branch_name is not None:
            raise ConfigurationError("open a branch from the main branch's table")
        if name not in {b.name for b in list_branches(self.store)}:
            raise ConfigurationError(
                f"table {self.identifier!r} has no branch {name!r} (branches: "
                f"{[b.name for b in list_branches(self.store)] or 'none'}); create it first"
            )
        return type(self)(f"{self.identifier}$branch_{name}", self.file_io, self.root, branch=name)

    def create_branch(
        self,
        name: str,
        *,
        from_tag: str | None = None,
        from_snapshot: int | None = None,
        ignore_if_exists: bool = False,
    ) -> Branch:
        """Create branch ``name``, as Paimon's ``create_branch``: from tag ``from_tag`` or
        snapshot ``from_snapshot`` (the branch starts with that snapshot), or empty (the
        latest schema only); an existing name is a ConfigurationError unless
        ``ignore_if_exists``. Write to it with :meth:`branch`, publish it with
        :meth:`fast_forward`. See :mod:`lakeops.maintenance.branches`."""
        self._require_main("create a branch of")
        return create_branch(
            self.store,
            name,
            from_tag=from_tag,
            from_snapshot=from_snapshot,
            ignore_if_exists=ignore_if_exists,
        )

    def delete_branch(self, name: str) -> None:
        """Delete branch ``name``: its directory goes; data files only it referenced are
        left to :meth:`remove_orphan_files`."""
        self._require_main("delete a branch of")
        delete_branch(self.store, name)

    def branches(self) -> list[Branch]:
        """The table's branches, by name (Paimon's ``$branches``)."""
        return list_branches(self.store)

    def fast_forward(self, name: str) -> Snapshot:
        """Make the main branch what branch ``name`` is (Paimon's ``fast_forward``; the
        write-audit-publish step): its snapshots, schemas and tags replace the main branch's
        from its first snapshot on; returns the new latest snapshot. No writer may commit to
        the main branch meanwhile (as in Paimon); a fast-forward cut short is completed by
        running it again. No data file is deleted."""
        self._require_main("fast-forward")
        self._require_writable("fast-forward")
        latest = fast_forward(self.store, name)
        self.context = TableContext.latest(self.store)
        return self.store.snapshot(latest)

    def _require_main(self, action: str) -> None:
        if self.branch_name is not None:
            raise ConfigurationError(
                f"cannot {action} branch {self.branch_name!r}: do it on the main branch's table"
            )

    def commit_stats(self, snapshot_id: int | None = None) -> CommitStats:
        """Files and bytes a snapshot (default: the latest) added and removed."""
        snapshot = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snapshot is None:
            raise ConfigurationError(f"table {self.root} has no snapshot yet")
        return commit_stats(self.store, snapshot)

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot still on storage, oldest first."""
        return [self.store.snapshot(i) for i in self.store.snapshot_ids()]

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, or None if the table was never written."""
        return self.store.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """One snapshot by id."""
        return self.store.snapshot(snapshot_id)

    # --------------------------------------------------------------------- read
    def scan(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
        mode: ReadMode = "merged",
    ) -> Scan:
        """One read of the table, checked now (see :mod:`lakeops.table.scan`): read it with
        :meth:`Scan.read`, :meth:`Scan.to_batches`, :meth:`Scan.to_pandas` … as often as
        needed; every read sees the same snapshot.

        Args:
            columns: the columns to return (all by default); only these and what the filter
                reads are read from storage. A row-tracking append table's system columns
                (``_ROW_ID``, ``_SEQUENCE_NUMBER``) may be named too.
            filter: a ``pyarrow.compute.Expression`` (``pc.field("id") > 5``) or conditions in
                ``pyarrow.parquet`` form (``[("dt", "=", "x")]``); used to skip partitions,
                buckets, files and row groups, then applied exactly to the rows.
            snapshot_id: time travel to an older snapshot.
            tag: time travel to a tag's snapshot (see :meth:`create_tag`).
            as_of: time travel by time, as Paimon's ``scan.timestamp-millis``: the newest
                snapshot committed at or before it (a datetime, naive = local time, or epoch
                milliseconds); see :mod:`lakeops.store.time_travel`.
            mode: ``"merged"`` (default), every row of the snapshot; ``"read-optimized"``,
                Paimon's read-optimized read (the ``$ro`` table): a primary-key table's rows
                in its fully compacted files only (the top level, with their deletion
                vectors), read without merging levels: fast, but without what was written
                since the last full compaction. An append table reads the same either way.

        At most one of ``snapshot_id``, ``tag`` and ``as_of``; none: the latest snapshot.
        """
        if mode not in READ_MODES:
            raise ConfigurationError(
                f"unknown read mode {mode!r}: use one of {', '.join(map(repr, READ_MODES))}"
            )
        wanted = self._columns(columns)
        rf = row_filter(filter, self._row_schema())
        snapshot = resolve_snapshot(self.store, snapshot_id=snapshot_id, tag=tag, as_of=as_of)
        return Scan(self, tuple(wanted), rf, snapshot, mode=mode)

    def splits(
        self,
        *,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
    ) -> list[Split]:
        """The (partition, bucket) splits a read of the snapshot reads (a primary-key table
        merges each), pruned by ``filter``; :meth:`split_reader` reads them one at a time."""
        return self.scan(filter=filter, snapshot_id=snapshot_id, tag=tag, as_of=as_of).splits()

    def read(self, *, parallelism: int | None = None, **scan: Unpack[ScanArgs]) -> pa.Table:
        """The table's rows, whole: ``scan(**scan).read(parallelism=…)`` (see :meth:`scan`
        and :meth:`Scan.read`)."""
        return self.scan(**scan).read(parallelism=parallelism)

    def to_batches(
        self,
        *,
        batch_rows: int | None = None,
        parallelism: int | None = None,
        **scan: Unpack[ScanArgs],
    ) -> Iterator[pa.RecordBatch]:
        """The rows of :meth:`read`, streamed with bounded memory:
        ``scan(**scan).to_batches(…)`` (see :meth:`Scan.to_batches`)."""
        return self.scan(**scan).to_batches(batch_rows=batch_rows, parallelism=parallelism)

    def to_arrow_batch_reader(
        self,
        *,
        batch_rows: int | None = None,
        parallelism: int | None = None,
        **scan: Unpack[ScanArgs],
    ) -> pa.RecordBatchReader:
        """:meth:`to_batches` as a ``pyarrow.RecordBatchReader`` (see
        :meth:`Scan.to_arrow_batch_reader`)."""
        reader = self.scan(**scan).to_arrow_batch_reader
        return reader(batch_rows=batch_rows, parallelism=parallelism)

    def to_pandas(self, **scan: Unpack[ScanArgs]) -> Any:
        """:meth:`read` as a pandas DataFrame (``pip install 'lakeops[pandas]'``)."""
        return self.scan(**scan).to_pandas()

    def to_polars(self, **scan: Unpack[ScanArgs]) -> Any:
        """:meth:`read` as a Polars DataFrame, sharing the Arrow buffers where the types allow
        (``pip install 'lakeops[polars]'``)."""
        return self.scan(**scan).to_polars()

    def to_duckdb(
        self, *, connection: Any = None, streaming: bool = False, **scan: Unpack[ScanArgs]
    ) -> Any:
        """A DuckDB relation over the rows, scanned in place (see :meth:`Scan.to_duckdb`;
        ``streaming=True``: over :meth:`to_arrow_batch_reader`, bounded memory, one query).
        (``pip install 'lakeops[duckdb]'``)"""
        return self.scan(**scan).to_duckdb(connection=connection, streaming=streaming)

    def _row_schema(self) -> pa.Schema:
        """The columns a filter may name."""
        return self.arrow_schema

    def _columns(self, columns: Sequence[str] | None) -> list[str]:
        """The named columns (every column for ``None``); refuses a name the table lacks."""
        names = self.schema.field_names
        wanted = list(columns) if columns is not None else names
        unknown = [c for c in wanted if c not in names]
        if unknown:
            raise ConfigurationError(f"unknown column(s) {unknown}; the table has {names}")
        return wanted

    # ------------------------------------------------------------ metadata tables
    def metadata_table(self, name: str, *, snapshot_id: int | None = None) -> pa.Table:
        """Paimon's system table ``name`` of this table as an Arrow table: ``snapshots``,
        ``schemas``, ``options``, ``files``, ``manifests``, ``partitions``, ``buckets``,
        ``tags``, ``consumers``, ``audit_log``, ``binlog`` (the audit log with each value as
        an array) or ``ro`` (the rows of the top-level files: the latest full compaction),
        with Paimon's columns and values (``db.t$files`` in Paimon;
        :meth:`Catalog.metadata_table` takes that spelling). ``snapshot_id`` chooses the
        snapshot of ``files``, ``manifests``, ``partitions``, ``buckets``, ``audit_log``,
        ``binlog`` and ``ro`` (default the latest). See :mod:`lakeops.table.system_tables`."""
        return metadata_table(self.store, name, snapshot_id=snapshot_id)
