"""The :class:`Table` facade: write, read, commit and inspect one Paimon primary-key table."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import pyarrow as pa

from lakeops.changelog.reader import ChangeMode, read_changes
from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER
from lakeops.commit.retry import CommitRetry
from lakeops.compact.health import TableHealth, table_health
from lakeops.compact.planner import CompactionProgress, plan_compaction
from lakeops.errors import (
    CommitStateUnknownError,
    StaleWriteError,
    UnsupportedFeatureError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO
from lakeops.kv.formats import check_writable
from lakeops.options.rows_files import (
    DATA_EVOLUTION_ENABLED,
    DELETION_VECTORS_ENABLED,
    ROW_TRACKING_ENABLED,
)
from lakeops.options.rows_layout import bucket_count_set
from lakeops.read.guard import guard_batches, guard_read, planned_on
from lakeops.read.lookup import lookup
from lakeops.read.merge_read import SplitReader
from lakeops.read.predicate import Filter, row_filter
from lakeops.read.scan import Split, partition_matches, plan_splits
from lakeops.read.stream import read_batches
from lakeops.store.time_travel import AsOf, resolve_snapshot
from lakeops.table.base import BaseTable
from lakeops.write.table_write import TableWrite, WriteInput

__all__ = ["Table"]

log = logging.getLogger(__name__)

#: write input that can be read again (a stale write is re-run on it)
_REPLAYABLE = (pa.Table, pa.RecordBatch)


class _When(NamedTuple):
    """Which snapshot a read is of (see :func:`lakeops.store.time_travel.resolve_snapshot`)."""

    snapshot_id: int | None
    tag: str | None
    as_of: AsOf | None


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

    def __init__(self, identifier: str, file_io: FileIO, root: str) -> None:
        super().__init__(identifier, file_io, root)
        if not self.schema.primary_keys:
            raise UnsupportedFeatureError(_append_table_refusal(identifier, self.schema))
        self.context.options  # noqa: B018 - a malformed table-wide option fails at open

    # -------------------------------------------------------------------- write
    def new_write(self, *, overwrite: bool = False, parallelism: int | None = None) -> TableWrite:
        """A two-phase writer: ``write`` batches, then ``prepare_commit`` → :meth:`commit`.

        ``overwrite=True`` prepares messages for ``commit(..., overwrite=…)``: the writer
        ignores the table's current files and (dynamic buckets) its key index, as Paimon's
        overwrite does, so its rows must only go to the partitions being overwritten."""
        self._require_writable("write")
        check_writable(self.schema)
        self.file_io.check_commit_ready()  # an unreachable commit lock fails before any file
        return TableWrite(self.context, ignore_previous=overwrite, parallelism=parallelism)

    def commit(
        self,
        messages: Sequence[CommitMessage],
        *,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
    ) -> Snapshot | None:
        """Publish the messages of one or many writers: new data as one ``APPEND`` snapshot,
        then their in-writer compactions as one ``COMPACT`` snapshot. Returns the last snapshot
        (None if there was nothing to commit).

        ``overwrite=True`` makes it Paimon's ``OVERWRITE``: the table's live files are replaced
        by the new ones; a list of partition specs (``[{"dt": "2024-01-01"}]``) replaces only
        those partitions (static partition overwrite).

        Appends never fail because of compaction: if another job replaced the files a writer's
        compaction read, that compaction is dropped (its new files deleted) and the appended
        data stays committed.

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
        """
        self._require_writable("commit to")
        committer = self._committer(commit_user, commit_identifier)
        if commit_identifier is None:
            commit_identifier = BATCH_COMMIT_IDENTIFIER

        def drop(conflict: Exception) -> None:
            log.warning("%s: in-writer compaction dropped: %s", self.identifier, conflict)
            self.delete_uncommitted(messages, compaction_only=True)

        return committer.commit(
            messages,
            commit_identifier,
            on_compact_conflict=drop,
            overwrite=self._overwrite_predicate(overwrite),
        )

    def _overwrite_predicate(
        self,
        overwrite: bool | Sequence[Mapping[str, Any]],
    ) -> Callable[[bytes], bool] | None:
        if overwrite is False:
            return None
        if overwrite is True:
            return lambda _: True
        return partition_matches(self.schema, list(overwrite), self.options)

    def split_reader(self) -> SplitReader:
        """Reads merged rows of this table's splits."""
        return SplitReader(self.context)

    def write(self, data: WriteInput, *, parallelism: int | None = None) -> Snapshot | None:
        """Write ``data`` as one commit and return its snapshot (None if no rows).

        ``parallelism``: how many buckets are flushed and compacted at once (default: the cores
        available, capped by the buckets in play); the result is the same at every value.

        Every row is validated before its bucket is flushed; on any error before the data is
        published every file this call wrote is deleted and the table is left exactly as it was.
        Once the data's snapshot is published it is never undone: a failing in-writer compaction
        after it is dropped (logged) and the snapshot returned. When publishing fails in a way
        that leaves open whether it landed, :class:`CommitStateUnknownError` is raised and every
        file is kept.

        Concurrent writers: new files are re-sequenced at commit above what other commits
        added to the same buckets, so the later commit wins. A dynamic-bucket or
        cross-partition write that another commit made stale (:class:`StaleWriteError`) is
        run again on the new snapshot when ``data`` is an Arrow table or record batch, after
        the same pauses and within the same bounds as a commit's retries (``commit.timeout``,
        ``commit.max-retries``, ``commit.min-retry-wait``, ``commit.max-retry-wait``); other
        input raises it.
        """
        # in-memory input can be written again when another commit made the plan stale
        retry = CommitRetry(self.context.commit_retry)
        while True:
            writer = self.new_write(parallelism=parallelism)
            try:
                writer.write(data)
                return self.commit(writer.prepare_commit())
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

    # --------------------------------------------------------------- compaction
    def compact(
        self,
        *,
        full: bool = False,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        parallelism: int | None = None,
        progress: Callable[[CompactionProgress], None] | None = None,
    ) -> Snapshot | None:
        """Compact every bucket (or those of ``partitions``, e.g. ``[{"dt": "2024-01-01"}]``)
        with the table's strategy, or fully (everything to the max level) with ``full=True``.

        Commits one ``COMPACT`` snapshot; None if nothing needed compacting. If a concurrent
        job replaced any input file, nothing is committed, the new files are deleted, and
        :class:`~lakeops.errors.CommitConflictError` is raised — retry on the new snapshot.
        ``parallelism``: how many buckets are compacted at once (default: the cores available,
        capped by the buckets to compact); the result is the same at every value.
        ``progress``: called in the calling thread before the first bucket and after each
        bucket with a :class:`~lakeops.compact.planner.CompactionProgress` (buckets, input
        files and bytes done of the total), e.g. to drive a progress bar.
        """
        return self._run_compaction(
            full=full,
            force_level0=False,
            partitions=partitions,
            parallelism=parallelism,
            progress=progress,
        )

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
        return self._run_compaction(
            full=False,
            force_level0=True,
            partitions=partitions,
            parallelism=parallelism,
            progress=progress,
        )

    def _run_compaction(
        self,
        *,
        full: bool,
        force_level0: bool,
        partitions: Sequence[Mapping[str, Any]] | None,
        parallelism: int | None = None,
        progress: Callable[[CompactionProgress], None] | None = None,
    ) -> Snapshot | None:
        return self._compact_with(
            parallelism,
            lambda: plan_compaction(
                self.context,
                full=full,
                force_level0=force_level0,
                partitions=partitions,
                parallelism=parallelism,
                progress=progress,
            ),
        )

    # --------------------------------------------------------------------- tags
    def health(self, *, recent_snapshots: int = 100) -> TableHealth:
        """Per bucket: sorted runs, files and bytes by level, amplification; see
        :mod:`lakeops.compact.health`."""
        return table_health(self.store, self.schema, recent_snapshots)

    def lookup(self, keys: pa.Table, *, columns: Sequence[str] | None = None) -> pa.Table:
        """Current rows of the given primary keys (a table of the key columns, plus the
        partition columns). Lookup tables are looked up in levels ≥ 1 only, like Paimon's
        lookups; other tables in every level. Only files whose key range holds a key are read.
        """
        wanted = self._columns(columns)
        return lookup(
            self.context,
            keys,
            wanted,
            levels_from=1 if self.context.compaction.needs_lookup else 0,
        )

    # --------------------------------------------------------------------- read
    def splits(
        self,
        *,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
    ) -> list[Split]:
        """The (partition, bucket) splits a read of the snapshot would merge."""
        rf = row_filter(filter, self.arrow_schema)
        snapshot = resolve_snapshot(self.store, snapshot_id=snapshot_id, tag=tag, as_of=as_of)
        return guard_read(
            self.store, planned_on(snapshot), lambda: plan_splits(self.context, snapshot, rf)
        )

    def to_batches(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
        batch_rows: int | None = None,
        parallelism: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The merged rows of :meth:`read`, streamed as record batches with bounded memory.

        Arguments as :meth:`read`, and ``batch_rows`` (rows read at once per file, and at most
        per batch; default 131072) and ``parallelism`` (sections merged at once, in order;
        default the cores available). About ``parallelism * 4 * batch_rows`` rows are held at
        any time, whatever the table's size (:mod:`lakeops.read.stream`)."""
        when = _When(snapshot_id, tag, as_of)
        return self._stream(columns, filter, when, batch_rows, parallelism)[1]

    def to_arrow_batch_reader(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
        batch_rows: int | None = None,
        parallelism: int | None = None,
    ) -> pa.RecordBatchReader:
        """:meth:`to_batches` as a ``pyarrow.RecordBatchReader`` (for engines that take
        Arrow streams: DuckDB, Polars, DataFusion, ``pyarrow.dataset.write_dataset`` …)."""
        when = _When(snapshot_id, tag, as_of)
        schema, batches = self._stream(columns, filter, when, batch_rows, parallelism)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def read(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
        parallelism: int | None = None,
    ) -> pa.Table:
        """The merged rows of the table (latest snapshot unless ``snapshot_id``, ``tag`` or
        ``as_of``), whole: the batches of :meth:`to_batches` as one table.

        Args:
            columns: the columns to return (all by default); only these, the key, the
                sequence fields and what the filter reads are read from storage.
            filter: a ``pyarrow.compute.Expression`` (``pc.field("id") > 5``) or conditions in
                ``pyarrow.parquet`` form (``[("dt", "=", "x")]``); used to skip partitions,
                buckets, files and row groups, then applied exactly to the merged rows.
            snapshot_id: time travel to an older snapshot.
            tag: time travel to a tag's snapshot (see :meth:`create_tag`).
            as_of: time travel by time, as Paimon's ``scan.timestamp-millis``: the newest
                snapshot committed at or before it (a datetime, naive = local time, or epoch
                milliseconds); see :mod:`lakeops.store.time_travel`.
            parallelism: sections merged at once (default: the cores available).
        """
        wanted = self._columns(columns)
        rf = row_filter(filter, self.arrow_schema)
        snapshot = resolve_snapshot(self.store, snapshot_id=snapshot_id, tag=tag, as_of=as_of)

        def run() -> pa.Table:
            splits = plan_splits(self.context, snapshot, rf)
            # the filter runs once on the whole result, not on every batch
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

        # a file missing because expiry removed the snapshot under the read is no corruption
        return guard_read(self.store, planned_on(snapshot), run)

    def _stream(
        self,
        columns: Sequence[str] | None,
        filter: Filter | None,
        when: _When,
        batch_rows: int | None,
        parallelism: int | None,
    ) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        wanted = self._columns(columns)
        rf = row_filter(filter, self.arrow_schema)
        snapshot = resolve_snapshot(
            self.store, snapshot_id=when.snapshot_id, tag=when.tag, as_of=when.as_of
        )
        planned = planned_on(snapshot)
        splits = guard_read(self.store, planned, lambda: plan_splits(self.context, snapshot, rf))
        schema, batches = read_batches(
            self.context, splits, wanted, rf, batch_rows=batch_rows, parallelism=parallelism
        )
        return schema, guard_batches(self.store, planned, batches)

    def read_changes(
        self,
        from_snapshot: int = 0,
        to_snapshot: int | None = None,
        *,
        mode: ChangeMode = "auto",
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """What changed after ``from_snapshot`` up to ``to_snapshot`` (latest by default), as
        rows with a ``_row_kind`` column (``+I``/``-U``/``+U``/``-D``) first.

        ``mode``: ``auto`` (changelog files when the table has a ``changelog-producer``, else the
        data each commit added — Paimon's incremental read), ``changelog``, ``delta``, or
        ``diff`` (net changes between the two merged states). See
        :mod:`lakeops.changelog.reader`.
        """
        wanted = self._columns(columns)
        return read_changes(
            self.context,
            from_snapshot,
            to_snapshot,
            mode,
            wanted,
        )
