"""The :class:`Table` facade: write, read, commit and inspect one Paimon primary-key table."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import pyarrow as pa

from lakeops.changelog.reader import ChangeMode, read_changes
from lakeops.commit.check import CheckReport, check_table
from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER, Committer
from lakeops.commit.expire import ExpireResult, Retention, expire_snapshots
from lakeops.commit.orphan import OrphanResult, check_threshold, remove_orphan_files
from lakeops.commit.rollback import rollback_to
from lakeops.commit.stats import CommitStats, commit_stats
from lakeops.commit.tags import Tag, create_tag, delete_tag, list_tags
from lakeops.commit.time_travel import AsOf, resolve_snapshot
from lakeops.compact.health import TableHealth, table_health
from lakeops.compact.planner import CompactionProgress, plan_compaction
from lakeops.context import TableContext
from lakeops.errors import (
    CommitStateUnknownError,
    ConfigurationError,
    SnapshotNotFoundError,
    StaleWriteError,
    UnsupportedFeatureError,
)
from lakeops.io.file_io import FileIO
from lakeops.kv.formats import check_writable
from lakeops.metadata import metadata_table
from lakeops.option_parsing import parse_duration
from lakeops.options import TableOptions
from lakeops.parallel import check_parallelism
from lakeops.read import handoff
from lakeops.read.lookup import lookup
from lakeops.read.merge_read import SplitReader
from lakeops.read.predicate import Filter, row_filter
from lakeops.read.scan import Split, partition_matches, plan_splits
from lakeops.read.stream import read_batches
from lakeops.schema_commit import alter_schema
from lakeops.spec.commit_message import CommitMessage
from lakeops.spec.schema import TableSchema
from lakeops.spec.schema_change import SchemaChange
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore
from lakeops.write.table_write import TableWrite, WriteInput

__all__ = ["Table"]

log = logging.getLogger(__name__)

#: write input that can be read again (a stale write is re-run on it)
_REPLAYABLE = (pa.Table, pa.RecordBatch)


class _When(NamedTuple):
    """Which snapshot a read is of (see :func:`lakeops.commit.time_travel.resolve_snapshot`)."""

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
        f"table {identifier!r} has no primary key: it is {kind}, and lakeops serves only "
        "primary-key tables; nothing was read or written — use Paimon (Spark, Flink) or "
        "pypaimon for this table"
    )


class Table:
    """One primary-key table of a warehouse (get it from :class:`~lakeops.Catalog`).

    Example:
        >>> table = catalog.get_table("db.orders")                 # doctest: +SKIP
        >>> snapshot = table.write(pa.table({"id": [1], ...}))     # doctest: +SKIP
        >>> table.read(filter=[("id", "=", 1)])                    # doctest: +SKIP
    """

    def __init__(self, identifier: str, file_io: FileIO, root: str) -> None:
        self.identifier = identifier
        self.file_io = file_io
        self.root = root
        self.store = TableStore(file_io, root)
        #: the table at its current schema, every option family parsed once
        self.context = TableContext.latest(self.store)
        if not self.schema.primary_keys:
            raise UnsupportedFeatureError(_append_table_refusal(identifier, self.schema))
        self.context.options  # noqa: B018 - a malformed table-wide option fails at open

    @property
    def schema(self) -> TableSchema:
        """The table's current schema."""
        return self.context.schema

    @property
    def options(self) -> TableOptions:
        """The table-wide options of the current schema, parsed."""
        return self.context.options

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, {self.file_io!r})"

    def _require_writable(self, action: str) -> None:
        """Refuse to ``action`` when the table's options (possibly set by another engine) are
        ones lakeops cannot honour exactly, or unknown to it (see
        :mod:`lakeops.option_registry`); nothing has been written at that point."""
        TableOptions.require_writable(self.schema, action, f"table {self.identifier!r}")

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
            >>> from lakeops.spec import schema_change as sc            # doctest: +SKIP
            >>> table.alter([sc.RenameColumn("v", "value"),             # doctest: +SKIP
            ...              sc.AddColumn("note", DataType.parse("STRING"))])
        """
        batch = [changes] if isinstance(changes, SchemaChange) else list(changes)
        self.context = self.context.with_schema(alter_schema(self.store, batch))
        self.context.options  # noqa: B018 - parsed now, as at open
        return self.schema

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
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
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
        checkpoint (or micro-batch) let a restarted job tell what it already committed
        (see :mod:`lakeops.spark.streaming`). Batch commits use ``Long.MAX_VALUE``.
        """
        self._require_writable("commit to")
        committer = Committer(self.context, commit_user)

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

    def commit_compaction(
        self, messages: Sequence[CommitMessage], *, written: Sequence[str]
    ) -> Snapshot:
        """Commit a compaction job's messages as one ``COMPACT`` snapshot; on any failure
        (a conflict included) nothing is committed and ``written`` files are deleted."""
        try:
            self._require_writable("commit a compaction of")
            snapshot = Committer(self.context).commit(messages)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            for path in written:
                self.file_io.delete(path)
            raise
        assert snapshot is not None
        return snapshot

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
        run again on the new snapshot when ``data`` is an Arrow table or record batch (up to
        ``commit.max-retries`` times); other input raises it.
        """
        # in-memory input can be written again when another commit made the plan stale
        attempts = self.options.commit_max_retries if isinstance(data, _REPLAYABLE) else 0
        for attempt in range(attempts + 1):
            writer = self.new_write(parallelism=parallelism)
            try:
                writer.write(data)
                return self.commit(writer.prepare_commit())
            except CommitStateUnknownError:
                raise  # the snapshot may reference these files: keep them
            except StaleWriteError as stale:
                writer.abort()
                if attempt == attempts:
                    raise
                log.info("%s: write re-planned on the new snapshot: %s", self.identifier, stale)
            except BaseException:
                writer.abort()
                raise
        raise AssertionError("unreachable")

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
        check_parallelism(parallelism)
        self._require_writable("compact")
        check_writable(self.schema, "compact this table")
        self.file_io.check_commit_ready()
        plan = plan_compaction(
            self.context,
            full=full,
            force_level0=force_level0,
            partitions=partitions,
            parallelism=parallelism,
            progress=progress,
        )
        if not plan.messages:
            return None
        return self.commit_compaction(plan.messages, written=plan.written)

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
        calling thread. See :mod:`lakeops.commit.expire`."""
        check_parallelism(parallelism)
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
        size (and, for Parquet and ORC, row count). See :mod:`lakeops.commit.check`."""
        return check_table(self.store)

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
        table (see :mod:`lakeops.commit.rollback`)."""
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

    # --------------------------------------------------------------------- tags
    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, time_retained: str | None = None
    ) -> Tag:
        """Tag snapshot ``snapshot_id`` (default: the latest) as ``name``, in Paimon's format
        (``tag/tag-<name>``), so Paimon, pypaimon and lakeops can read it
        (``read(tag=name)``, Spark ``scan.tag-name``) and expiry and orphan cleanup keep
        every file it references. ``time_retained`` (e.g. ``"7 d"``; default the table's
        ``tag.default-time-retained``) is recorded in the tag as Paimon does. A name that
        exists for the same snapshot returns that tag; for another snapshot it is a
        :class:`~lakeops.errors.TagAlreadyExistsError`. See :mod:`lakeops.commit.tags`."""
        retained = time_retained or self.schema.options.get("tag.default-time-retained")
        return create_tag(
            self.store,
            name,
            snapshot_id,
            time_retained=dt.timedelta(milliseconds=parse_duration(retained, "time_retained"))
            if retained
            else None,
        )

    def delete_tag(self, name: str) -> Tag:
        """Delete tag ``name`` and return what it was; files only it kept alive are left for
        ``remove_orphan_files``."""
        return delete_tag(self.store, name)

    def tags(self) -> list[Tag]:
        """The table's tags, by snapshot id then name."""
        return list_tags(self.store)

    def commit_stats(self, snapshot_id: int | None = None) -> CommitStats:
        """Files and bytes a snapshot (default: the latest) added and removed."""
        snapshot = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snapshot is None:
            raise ConfigurationError(f"table {self.root} has no snapshot yet")
        return commit_stats(self.store, snapshot)

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
    def snapshots(self) -> list[Snapshot]:
        """Every snapshot still on storage, oldest first."""
        return [self.store.snapshot(i) for i in self.store.snapshot_ids()]

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, or None if the table was never written."""
        return self.store.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """One snapshot by id."""
        return self.store.snapshot(snapshot_id)

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
        return plan_splits(self.context, snapshot, rf)

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
                milliseconds); see :mod:`lakeops.commit.time_travel`.
            parallelism: sections merged at once (default: the cores available).
        """
        wanted = self._columns(columns)
        rf = row_filter(filter, self.arrow_schema)
        snapshot = resolve_snapshot(self.store, snapshot_id=snapshot_id, tag=tag, as_of=as_of)
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

    def to_pandas(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
    ) -> Any:
        """:meth:`read` as a pandas DataFrame (``pip install 'lakeops[pandas]'``)."""
        handoff.require("pandas", "pandas")
        table = self.read(
            columns=columns, filter=filter, snapshot_id=snapshot_id, tag=tag, as_of=as_of
        )
        return handoff.to_pandas(table)

    def to_polars(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
    ) -> Any:
        """:meth:`read` as a Polars DataFrame, sharing the Arrow buffers where the types allow
        (``pip install 'lakeops[polars]'``)."""
        handoff.require("polars", "polars")
        table = self.read(
            columns=columns, filter=filter, snapshot_id=snapshot_id, tag=tag, as_of=as_of
        )
        return handoff.to_polars(table)

    def to_duckdb(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        as_of: AsOf | None = None,
        connection: Any = None,
        streaming: bool = False,
    ) -> Any:
        """A DuckDB relation over the merged rows, scanned in place by DuckDB (no copy), on
        ``connection`` (default: DuckDB's default connection).

        By default over :meth:`read`'s table (the relation can run many queries); with
        ``streaming=True`` over :meth:`to_arrow_batch_reader` (bounded memory, one query).
        (``pip install 'lakeops[duckdb]'``)"""
        handoff.require("duckdb", "duckdb")
        args: dict[str, Any] = {"columns": columns, "filter": filter, "snapshot_id": snapshot_id}
        args |= {"tag": tag, "as_of": as_of}
        data = self.to_arrow_batch_reader(**args) if streaming else self.read(**args)
        return handoff.to_duckdb(data, connection)

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
        splits = plan_splits(self.context, snapshot, rf)
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
        ``tags`` or ``audit_log``, with Paimon's columns and values (``db.t$files`` in
        Paimon; :meth:`Catalog.metadata_table` takes that spelling). ``snapshot_id`` chooses
        the snapshot of ``files``, ``manifests``, ``partitions``, ``buckets`` and
        ``audit_log`` (default the latest). See :mod:`lakeops.metadata.system_tables`."""
        return metadata_table(self.store, name, snapshot_id=snapshot_id)
