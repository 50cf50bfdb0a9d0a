"""The :class:`Table` facade: write, read, commit and inspect one Paimon primary-key table."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

import pyarrow as pa

from lakeops.changelog.reader import ChangeMode, read_changes
from lakeops.compact.health import TableHealth, table_health
from lakeops.compact.planner import CompactionProgress, plan_compaction
from lakeops.errors import CommitError, UnsupportedFeatureError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO
from lakeops.kv.formats import check_writable
from lakeops.read.guard import guard_batches, guard_read, planned_on
from lakeops.read.lookup import lookup
from lakeops.read.merge_read import SplitReader
from lakeops.read.predicate import Filter, row_filter
from lakeops.read.scan import Split, plan_splits
from lakeops.read.stream import read_batches
from lakeops.store.time_travel import AsOf, resolve_snapshot
from lakeops.table.base import BaseTable, CompactionPlanner
from lakeops.write.table_write import TableWrite

__all__ = ["Table"]

log = logging.getLogger(__name__)


class _When(NamedTuple):
    """Which snapshot a read is of (see :func:`lakeops.store.time_travel.resolve_snapshot`)."""

    snapshot_id: int | None
    tag: str | None
    as_of: AsOf | None


def _append_table_refusal(identifier: str, schema: TableSchema) -> str:
    """Why a table without a primary key is refused, naming its kind."""
    opts = schema.options
    kind = "an append table"
    if opts.get("bucket", "-1") not in ("-1", ""):
        kind = "a bucketed append table"
    extras = [
        label
        for key, label in (
            ("deletion-vectors.enabled", "deletion vectors"),
            ("row-tracking.enabled", "row tracking"),
            ("data-evolution.enabled", "data evolution"),
        )
        if opts.get(key, "false").lower() == "true"
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

    def _compaction_conflict(
        self, messages: Sequence[CommitMessage]
    ) -> Callable[[CommitError], None] | None:
        """A writer's compaction that conflicts is dropped (its new files deleted): the
        appended data of the same commit stays committed."""

        def drop(conflict: Exception) -> None:
            log.warning("%s: in-writer compaction dropped: %s", self.identifier, conflict)
            self.delete_uncommitted(messages, compaction_only=True)

        return drop

    def split_reader(self) -> SplitReader:
        """Reads merged rows of this table's splits."""
        return SplitReader(self.context)

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
