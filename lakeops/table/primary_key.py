"""The :class:`Table` facade: write, read, commit and inspect one Paimon primary-key table."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

from lakeops.changelog.reader import ChangeMode, read_changes
from lakeops.compact.health import TableHealth, table_health
from lakeops.compact.planner import (
    CompactionProgress,
    plan_compaction,
)
from lakeops.compact.selection import check_where, select_partitions
from lakeops.compact.sort import SortStrategy, resolve_sort
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO
from lakeops.kv.formats import check_writable
from lakeops.options.registry import check_data_files
from lakeops.options.rows_files import (
    DATA_EVOLUTION_ENABLED,
    DELETION_VECTORS_ENABLED,
    ROW_TRACKING_ENABLED,
)
from lakeops.options.rows_layout import POSTPONE_BATCH_WRITE_FIXED_BUCKET, bucket_count_set
from lakeops.options.table import TableOptions
from lakeops.parallel import IO_THREADS, check_parallelism
from lakeops.read.lookup import lookup
from lakeops.read.merge_read import SplitReader
from lakeops.read.postpone import moved_buckets, plan_move, read_moved
from lakeops.read.predicate import Filter, RowFilter
from lakeops.read.scan import Split, only_level, partition_matches, plan_splits
from lakeops.read.stream import read_batches
from lakeops.store.consumers import check_consumer_id, read_as_consumer
from lakeops.table.base import BaseTable, CompactionPlanner
from lakeops.table.scan import SplitRead
from lakeops.write.table_write import TableWrite

__all__ = ["Table"]

log = logging.getLogger(__name__)


def _append_table_refusal(identifier: str, schema: TableSchema) -> str:
    """Why a table without a primary key is refused, naming its kind."""
    opts = schema.options
    kind = "an append table"
    if bucket_count_set(opts):
        kind = "a bucketed append table"
    extras = [
        label
        for row, label in (
            (DELETION_VECTORS_ENABLED, "deletion vectors"),
            (ROW_TRACKING_ENABLED, "row tracking"),
            (DATA_EVOLUTION_ENABLED, "data evolution"),
        )
        if (row.text(opts) or "false").lower() == "true"
    ]
    if extras:
        kind += " with " + " and ".join(extras)
    return (
        f"table {identifier!r} has no primary key: it is {kind}, which Table (and the Spark "
        "data source) does not serve; nothing was read or written — open it with "
        "Catalog.get_table, which returns an AppendTable"
    )


class Table(BaseTable):
    """One primary-key table of a warehouse (get it from :class:`~lakeops.Catalog`).

    Example:
        >>> table = catalog.get_table("db.orders")                 # doctest: +SKIP
        >>> snapshot = table.write(pa.table({"id": [1], ...}))     # doctest: +SKIP
        >>> table.read(filter=[("id", "=", 1)])                    # doctest: +SKIP
    """

    def __init__(
        self, identifier: str, file_io: FileIO, root: str, *, branch: str | None = None
    ) -> None:
        super().__init__(identifier, file_io, root, branch=branch)
        if not self.schema.primary_keys:
            raise UnsupportedFeatureError(_append_table_refusal(identifier, self.schema))
        self.context.options  # noqa: B018 - a malformed table-wide option fails at open

    # -------------------------------------------------------------------- write
    def new_write(
        self,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
    ) -> TableWrite:
        """A two-phase writer: ``write`` batches, then ``prepare_commit`` → :meth:`commit`.

        ``overwrite`` (``True``, or the partition specs given to ``commit(..., overwrite=…)``)
        prepares messages for an overwrite: the writer ignores the table's current files and
        (dynamic buckets) its key index, as Paimon's overwrite does, so its rows must only go
        to the partitions being overwritten. Given the specs, a cross-partition table's writer
        refuses (:class:`~lakeops.errors.DataValidationError`) rows whose keys live in
        partitions the overwrite keeps: the table would hold them twice."""
        self._require_writable("write")
        check_writable(self.schema)
        self.file_io.check_commit_ready()  # an unreachable commit lock fails before any file
        replaced = None
        if overwrite is not False and overwrite is not True:
            replaced = partition_matches(self.schema, list(overwrite), self.options)
        return TableWrite(
            self.context,
            ignore_previous=overwrite is not False,
            parallelism=parallelism,
            replaced=replaced,
        )

    def split_reader(self) -> SplitReader:
        """Reads merged rows of this table's splits."""
        return SplitReader(self.context)

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
        """As :meth:`BaseTable.commit`, then, unless ``write-only`` (a dedicated compaction
        job does it):

        * on a postpone-bucket table with ``postpone.batch-write-fixed-bucket`` (Paimon's
          default), the postponed rows of the partitions written are moved into real buckets
          (:meth:`move_postponed`, a ``COMPACT`` snapshot), so the written rows are visible as
          after Paimon's batch write into fixed buckets — each partition keeps its bucket
          count, a new one takes ``postpone.default-bucket-num`` or the estimate, and rows
          other writers postponed earlier in those partitions go first, in their order;
        * on a deletion-vector table the new level-0 files are compacted up
          (:meth:`flush_level0`, a ``COMPACT`` snapshot), as Paimon's writers compact level 0
          at every commit of such a table: its readers skip level 0 (a full compaction with
          ``commit.force-compact``).

        The written data stays committed if either fails (logged); a later compaction does
        it."""
        snapshot = super().commit(
            messages,
            commit_user=commit_user,
            commit_identifier=commit_identifier,
            overwrite=overwrite,
            watermark=watermark,
            last_safe_snapshot=last_safe_snapshot,
        )
        return self._settle(snapshot, messages)

    def _settle(
        self, snapshot: Snapshot | None, messages: Sequence[CommitMessage]
    ) -> Snapshot | None:
        """What follows a commit of ``messages`` that published ``snapshot`` (see
        :meth:`commit`); returns the last snapshot."""
        if (
            snapshot is None
            or self.context.compaction.write_only  # a dedicated job compacts
            or not any(m.new_files for m in messages)
        ):
            return snapshot
        try:
            if self._moves_batch_writes():
                written = {m.partition for m in messages if m.bucket == POSTPONE_BUCKET}
                snapshot = self._move_postponed(written.__contains__, None) or snapshot
            if not self.options.deletion_vectors:
                return snapshot
            if self.context.compaction.force_compact_on_commit:  # commit.force-compact
                return self.compact(full=True) or snapshot
            return self.flush_level0() or snapshot
        except Exception as error:
            log.warning("%s: compaction after the commit failed: %s", self, error)
            return snapshot

    def _moves_batch_writes(self) -> bool:
        """Whether a commit's postponed rows go on into real buckets at once (a postpone
        table with ``postpone.batch-write-fixed-bucket``)."""
        return self.options.bucket == POSTPONE_BUCKET and bool(
            POSTPONE_BATCH_WRITE_FIXED_BUCKET.get(self.schema.options)
        )

    # --------------------------------------------------------------- compaction
    def flush_level0(
        self,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        parallelism: int | None = None,
        progress: Callable[[CompactionProgress], None] | None = None,
    ) -> Snapshot | None:
        """Lift every level-0 file to a higher level (ForceUpLevel0), so lookups and batch
        reads of lookup tables (first-row, ``changelog-producer=lookup``, deletion vectors)
        see the newest data. One ``COMPACT`` snapshot, or None if level 0 was empty.
        ``progress``: as for :meth:`compact`."""
        level0 = partial(plan_compaction, force_level0=True)
        return self._run_compaction(level0, False, partitions, parallelism, progress)

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
        """As :meth:`BaseTable.compact <lakeops.table.base.BaseTable.compact>` (``where``
        selects partitions; ``order_by`` is refused: a primary-key table's files are sorted by
        its key); a postpone table (``bucket = -2``) first moves its postponed rows (of the
        selected partitions) into real buckets in one ``COMPACT`` snapshot
        (:mod:`lakeops.read.postpone`), then compacts its real buckets in another.
        Returns the last snapshot committed."""
        moved = None
        if self.context.options.bucket == POSTPONE_BUCKET:
            # refused before anything moves
            resolve_sort(self.context, order_by=order_by, strategy=strategy, full=full)
            condition = check_where(self.schema, where)
            if condition is None:
                moved = self.move_postponed(partitions=partitions, parallelism=parallelism)
            else:
                check_parallelism(parallelism)
                latest = self.store.latest_snapshot()
                keep = select_partitions(
                    self.context, latest, partitions=partitions, condition=condition
                )
                moved = self._move_postponed(keep, parallelism)
        done = super().compact(
            full=full,
            partitions=partitions,
            where=where,
            order_by=order_by,
            strategy=strategy,
            parallelism=parallelism,
            progress=progress,
        )
        return done if done is not None else moved

    def move_postponed(
        self,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        parallelism: int | None = None,
    ) -> Snapshot | None:
        """Move the postponed rows of a ``bucket = -2`` table (or of ``partitions``) into real
        buckets as Paimon's postpone compaction does (:mod:`lakeops.read.postpone`): one
        ``COMPACT`` snapshot deletes every postponed file and adds level-0 files to the real
        buckets, each recording its partition's bucket count. None when nothing was
        postponed. On any failure nothing is committed and the new files are deleted."""
        check_parallelism(parallelism)
        if self.context.options.bucket != POSTPONE_BUCKET:
            raise ConfigurationError(
                f"table {self.identifier!r} has bucket = {self.context.options.bucket}, not "
                "postpone buckets (-2): it has no postponed rows to move"
            )
        keep = partition_matches(self.schema, partitions, self.context.options)
        return self._move_postponed(keep if partitions is not None else None, parallelism)

    def _move_postponed(
        self, keep: Callable[[bytes], bool] | None, parallelism: int | None
    ) -> Snapshot | None:
        """:meth:`move_postponed` of the partitions ``keep`` accepts (None: all)."""
        self._require_writable("compact")
        check_writable(self.schema, "compact this table")
        self.file_io.check_commit_ready()
        ctx = self.context
        live = self.store.live_entries(self.store.latest_snapshot(), parallelism=IO_THREADS)
        check_data_files((e.file.file_name for e in live), "compact")
        plan = plan_move(ctx, live, keep)
        if not plan.partitions:
            return None
        writer = TableWrite(ctx, parallelism=parallelism)
        try:
            for move in plan.partitions:
                records = ctx.engine.prepare(read_moved(ctx, move))
                buckets = moved_buckets(ctx, records, move.total_buckets)
                writer.write_moved(records, buckets, plan.counts)
            written = writer.prepare_commit()
        except BaseException:
            writer.abort()
            raise
        messages = [
            CommitMessage(
                m.partition,
                m.bucket,
                m.total_buckets,
                compact_after=m.new_files,
                # changelog-producer = input: the moved records, as Paimon's BucketFiles
                compact_changelog_files=m.changelog_files + m.compact_changelog_files,
                base_snapshot_id=m.base_snapshot_id,
            )
            for m in written
        ]
        messages += [
            CommitMessage(
                move.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=move.files
            )
            for move in plan.partitions
        ]
        return self.commit_compaction(messages, written=writer.written_paths())

    def _compaction_planner(self) -> CompactionPlanner:
        """The compaction of every bucket's sorted runs (:mod:`lakeops.compact.planner`)."""
        return plan_compaction

    # --------------------------------------------------------------------- tags
    def health(self, *, recent_snapshots: int = 100) -> TableHealth:
        """Per bucket: sorted runs, files and bytes by level, amplification; see
        :mod:`lakeops.compact.health`."""
        return table_health(self.store, self.schema, recent_snapshots)

    def lookup(self, keys: pa.Table, *, columns: Sequence[str] | None = None) -> pa.Table:
        """Current rows of the given primary keys (a table of the key columns, plus the
        partition columns). Lookup tables are looked up in levels ≥ 1 only, like Paimon's
        lookups; other tables in every level. Only files whose key range holds a key are read.
        At the latest snapshot, looked up again at the then latest one where another job's
        expiry removed it meanwhile (:mod:`lakeops.read.lookup`).
        """
        TableOptions.require_exact_key_values(
            self.schema, "look up keys of", f"table {self.identifier!r}"
        )
        wanted = self._columns(columns)
        return lookup(
            self.context,
            keys,
            wanted,
            levels_from=1 if self.context.compaction.needs_lookup else 0,
        )

    # --------------------------------------------------------------------- read
    def _plan(
        self, snapshot: Snapshot | None, rf: RowFilter | None, *, every_level: bool = False
    ) -> list[Split]:
        """The splits of ``snapshot``, pruned by ``rf`` (:mod:`lakeops.read.scan`);
        ``every_level``: level 0 too where batch reads skip it (deletion vectors, first-row)."""
        return plan_splits(self.context, snapshot, rf, every_level=every_level)

    def _read_optimized(self, splits: Sequence[Split]) -> list[Split]:
        """``splits`` with only their top-level files (level ``num-levels - 1``), as Paimon's
        read-optimized read: keys do not overlap there, so nothing below is merged in."""
        return only_level(splits, self.context.compaction.num_levels - 1)

    def _read_splits(self, read: SplitRead) -> pa.Table:
        """The merged rows of ``splits``, whole; the filter runs once on the whole result,
        not on every batch."""
        splits, wanted, rf, parallelism = read.splits, read.wanted, read.rf, read.parallelism
        schema, batches = read_batches(
            self.context,
            splits,
            wanted,
            rf,
            parallelism=parallelism,
            apply_filter=False,
            whole_sections=True,
        )
        result = pa.Table.from_batches(list(batches), schema=schema)
        return result.filter(rf.expression).select(wanted) if rf is not None else result

    def _stream_splits(self, read: SplitRead) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        """The merged rows of ``splits``, streamed (:mod:`lakeops.read.stream`)."""
        splits, wanted, rf, parallelism = read.splits, read.wanted, read.rf, read.parallelism
        batch_rows = read.batch_rows
        return read_batches(
            self.context, splits, wanted, rf, batch_rows=batch_rows, parallelism=parallelism
        )

    def read_changes(
        self,
        from_snapshot: int = 0,
        to_snapshot: int | None = None,
        *,
        mode: ChangeMode = "auto",
        columns: Sequence[str] | None = None,
        consumer_id: str | None = None,
    ) -> pa.Table:
        """What changed after ``from_snapshot`` up to ``to_snapshot`` (latest by default), as
        rows with a ``_row_kind`` column (``+I``/``-U``/``+U``/``-D``) first.

        ``mode``: ``auto`` (changelog files when the table has a ``changelog-producer``, else the
        data each commit added — Paimon's incremental read), ``changelog``, ``delta``, or
        ``diff`` (net changes between the two merged states). See
        :mod:`lakeops.changelog.reader`.

        ``consumer_id``: read as that Paimon consumer (Paimon's ``consumer-id``): if
        ``consumer/consumer-<id>`` exists the read starts at its ``nextSnapshot`` (ignoring
        ``from_snapshot``, which only places a new consumer), and once the changes up to
        snapshot ``N`` are read the consumer records ``nextSnapshot = N + 1`` — so the next
        read with the same id continues exactly after this one, and expiry keeps what it has
        not read. See :mod:`lakeops.store.consumers`.
        """
        if consumer_id is not None:
            return read_as_consumer(
                self.store,
                check_consumer_id(consumer_id),
                from_snapshot,
                to_snapshot,
                lambda start, end: self.read_changes(start, end, mode=mode, columns=columns),
            )
        wanted = self._columns(columns)
        return read_changes(
            self.context,
            from_snapshot,
            to_snapshot,
            mode,
            wanted,
        )
