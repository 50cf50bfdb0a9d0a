"""Row-level changes of a primary-key table on Spark's executors (``lakeops.spark.delete``,
``update`` and ``merge``), with the semantics of :mod:`lakeops.table.row_level`: the records a
change makes — ``-D``, ``+U``, ``+I`` — are written by Spark tasks through the ``lakeops`` data
source and committed by the driver as one snapshot.

Units of work. The driver plans the change against the latest snapshot (its id travels with
the job, so every task reads the same snapshot):

* **delete / update**: the splits the condition's statistics leave, one unit per (partition,
  bucket) — per partition for a dynamic-bucket table, whose writer keeps a partition's key
  index — dealt one unit per Spark task. A task reads its splits merged, keeps the rows the
  condition holds for, and writes them back as ``-D`` or as ``+U`` rows with the assignments
  applied (a primary key is never assigned, so every row stays in its bucket);
* **merge**: the source DataFrame, routed as a write routes rows — by (partition, bucket) with
  Paimon's hash for fixed buckets, by partition for dynamic buckets, by the ``on`` columns for
  postpone buckets — so each bucket has one writer and each key's source rows meet in one task.
  A task reads the target rows of its source keys and applies the clauses
  (:meth:`lakeops.table.row_level.MergeBuilder.keyed_changes`).

Commit and failure. Tasks return their files' commit messages to the data source's commit
(one ``APPEND`` snapshot, under a commit user of the job's own, by which the driver finds it and
counts what it wrote); a failed job's files are deleted by the data source's abort, as for any
Spark write. A job that failed, committed nothing, and whose planned snapshot is gone — another
job compacted the files its tasks read and an expiry removed them — is planned and run again on
the latest snapshot (up to three more times), as the in-process changes read again. Tables
whose writes need one writer for the whole table — cross-partition updates (a global key
index) — and append tables change on the driver, as :mod:`lakeops.table.row_level` does there.
"""

from __future__ import annotations

import base64
import itertools
import logging
import pickle
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.commit.exactly_once import latest_snapshot_of_user
from lakeops.errors import ConfigurationError
from lakeops.format.kv import KIND, RowKind
from lakeops.format.manifest import FileKind
from lakeops.format.snapshot import Snapshot
from lakeops.kv.reader import KeyValueReader
from lakeops.read.guard import EXPIRED_RETRIES, still_held
from lakeops.read.merge_read import SplitReader
from lakeops.read.predicate import Filter, row_filter
from lakeops.table import AnyTable
from lakeops.table.row_level import (
    Assignment,
    MergeBuilder,
    RowChanges,
    _assigned,
    _check,
    _condition,
    checked_update,
)

__all__ = [
    "ROW_LEVEL_OPTION",
    "SparkMergeBuilder",
    "delete",
    "on_executors",
    "update",
    "write_changes",
]

#: the data-source write option carrying a row-level job to the tasks
ROW_LEVEL_OPTION = "row_level"
_UNIT = "unit"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Job:
    """What every task of a row-level change needs: the change, the snapshot it reads, and
    its condition, assignments or merge clauses."""

    op: str  # "delete", "update", "merge"
    snapshot_id: int | None  # None: the table had no snapshot (a merge inserts only)
    condition: pc.Expression | None = None
    assignments: Mapping[str, Assignment] | None = None
    on: tuple[str, ...] = ()
    matched: tuple[Any, ...] = ()
    not_matched: tuple[Any, ...] = ()


def _encode(job: _Job) -> str:
    return base64.b64encode(pickle.dumps(job)).decode()


def _decode(text: str) -> _Job:
    job = pickle.loads(base64.b64decode(text))  # written by this job's driver
    assert isinstance(job, _Job)
    return job


def on_executors(table: AnyTable, on: Sequence[str] | None = None) -> bool:
    """Whether a row-level change of ``table`` runs on the executors: a primary-key table
    whose writers can be split by bucket or partition (not a cross-partition-update table,
    whose global key index needs one writer); a merge only ``on`` every primary-key column
    (so the source rows of a key, and the records written for it, meet in one task)."""
    schema = table.schema
    if not schema.primary_keys or schema.cross_partition_update:
        return False
    return on is None or set(schema.primary_keys) <= set(on)


def _unit_of(table: AnyTable, partition: bytes, bucket: int) -> str:
    """The unit of work a split belongs to: its (partition, bucket), or its partition alone
    for a dynamic-bucket table."""
    if table.options.bucket == -1:
        return partition.hex()
    return f"{partition.hex()}:{bucket}"


# ------------------------------------------------------------------------- executors
def write_changes(
    table: AnyTable, text: str, batches: Iterator[pa.RecordBatch], writer: Any
) -> None:
    """Executor side: write the records of the task's share of the row-level job ``text``
    (its units, or its source rows for a merge) with ``writer``."""
    job = _decode(text)
    for rows, kind in _changes(table, job, batches):
        if rows.num_rows:
            writer.write_changes(rows, kind)


def _changes(
    table: AnyTable, job: _Job, batches: Iterator[pa.RecordBatch]
) -> list[tuple[pa.Table, int]]:
    snapshot = None if job.snapshot_id is None else table.store.snapshot(job.snapshot_id)
    parts = [b for b in batches if b.num_rows]
    if job.op == "merge":
        schema = parts[0].schema if parts else None
        if schema is None:
            return []
        builder = MergeBuilder(table, pa.Table.from_batches(parts, schema=schema), job.on)
        builder.matched, builder.not_matched = list(job.matched), list(job.not_matched)
        deletes, updates, inserts = builder.keyed_changes(snapshot)
        return [
            (deletes, RowKind.DELETE),
            (updates, RowKind.UPDATE_AFTER),
            (inserts, RowKind.INSERT),
        ]
    # the splits the driver planned for the task's units: no manifest is read again here
    units = pa.Table.from_batches(parts).column(_UNIT).to_pylist() if parts else []
    splits = [split for unit in units for split in pickle.loads(unit)]
    if snapshot is None or not splits:
        return []
    rf = row_filter(job.condition, table.arrow_schema)
    reader = SplitReader(table.context)
    names = table.arrow_schema.names
    picked = [reader.read(split, names) for split in splits]
    rows = pa.concat_tables(picked) if picked else table.arrow_schema.empty_table()
    if rf is not None:
        rows = rows.filter(rf.expression)
    if job.op == "delete":
        return [(rows, RowKind.DELETE)]
    return [(_assigned(rows, table.arrow_schema, job.assignments or {}), RowKind.UPDATE_AFTER)]


# ---------------------------------------------------------------------------- driver
def _changed(
    table: AnyTable,
    options: Mapping[str, str],
    plan: Callable[[Snapshot | None], tuple[Any, _Job] | None],
) -> RowChanges:
    """Run the change ``plan`` makes of the latest snapshot (the DataFrame its tasks take and
    its job; None: nothing to change). Where its Spark job fails, committed nothing, and the
    snapshot it planned on is no longer held — another job compacted its files and an expiry
    removed them while its tasks read them — it is planned and run again on the then latest
    snapshot, at most :data:`~lakeops.read.guard.EXPIRED_RETRIES` more times."""
    for retry in itertools.count():
        snapshot = table.store.latest_snapshot()
        planned = plan(snapshot)
        if planned is None:
            return RowChanges()
        frame, job = planned
        user = f"lakeops-{job.op}-{uuid.uuid4()}"
        try:
            return _run(frame, options, job, table, user)
        except Exception:
            if (
                snapshot is None
                or retry == EXPIRED_RETRIES
                or still_held(table.store, snapshot)
                or latest_snapshot_of_user(table.store, user) is not None
            ):
                raise
            log.warning(
                "%s: snapshot %d, which this %s's tasks read, was expired meanwhile (another "
                "job compacted its files); nothing was committed: running it again on the "
                "latest snapshot",
                table.identifier,
                snapshot.id,
                job.op,
            )
    raise AssertionError("unreachable")


def _run(
    spark_df: Any, options: Mapping[str, str], job: _Job, table: AnyTable, user: str
) -> RowChanges:
    """Write ``spark_df`` (units or source rows) through the data source with ``job`` under
    commit user ``user``, and count what its snapshot holds."""
    opts = {**options, ROW_LEVEL_OPTION: _encode(job), "commit_user": user}
    spark_df.write.format("lakeops").mode("append").options(**opts).save()
    snapshot = latest_snapshot_of_user(table.store, user)
    if snapshot is None:
        return RowChanges()
    added = [e for e in table.store.delta_entries(snapshot) if e.kind == FileKind.ADD]
    if job.op == "delete":
        return RowChanges(sum(e.file.row_count for e in added), 0, 0, snapshot.id)
    if job.op == "update":
        return RowChanges(0, sum(e.file.row_count for e in added), 0, snapshot.id)
    reader = KeyValueReader(table.file_io, table.schema, table.store.schema, table.store.root)
    locations = table.context.locations
    counts = {RowKind.DELETE: 0, RowKind.UPDATE_AFTER: 0, RowKind.INSERT: 0}
    for e in added:
        kinds = reader.read(locations.bucket_path(e.partition, e.bucket), e.file, []).column(KIND)
        for kind in counts:
            counts[kind] += int(pc.sum(pc.equal(kinds, int(kind))).as_py() or 0)
    return RowChanges(
        counts[RowKind.DELETE], counts[RowKind.UPDATE_AFTER], counts[RowKind.INSERT], snapshot.id
    )


def _by_units(
    spark: Any, table: AnyTable, job: _Job, condition: Filter, snapshot: Snapshot
) -> tuple[Any, _Job] | None:
    """A delete or update of ``snapshot``: one Spark task per unit of the planned splits, each
    carrying its splits (pickled: the task reads them as the driver planned them); None when
    no split may hold a row the condition holds for."""
    rf = row_filter(condition, table.arrow_schema)
    units: dict[str, list[Any]] = {}
    # every committed record, as lakeops.table.row_level.committed_rows reads them
    for split in table._plan(snapshot, rf, every_level=True):
        units.setdefault(_unit_of(table, split.partition_bytes, split.bucket), []).append(split)
    if not units:
        return None
    rows = [(bytearray(pickle.dumps(units[u])),) for u in sorted(units)]
    return spark.sparkContext.parallelize(rows, len(rows)).toDF([_UNIT]), job


def delete(
    spark: Any, options: Mapping[str, str], table: AnyTable, condition: Filter
) -> RowChanges:
    """Delete the rows ``condition`` holds for, on the executors (see the module docstring)."""
    _check(table, "delete")
    rf = _condition(table, condition)

    def plan(snapshot: Snapshot | None) -> tuple[Any, _Job] | None:
        if snapshot is None:
            return None
        job = _Job("delete", snapshot.id, condition=rf.expression)
        return _by_units(spark, table, job, rf.expression, snapshot)

    return _changed(table, options, plan)


def update(
    spark: Any,
    options: Mapping[str, str],
    table: AnyTable,
    condition: Filter,
    assignments: Mapping[str, Assignment],
) -> RowChanges:
    """Set ``assignments`` on the rows ``condition`` holds for, on the executors."""
    rf = checked_update(table, condition, assignments)

    def plan(snapshot: Snapshot | None) -> tuple[Any, _Job] | None:
        if snapshot is None:
            return None
        job = _Job("update", snapshot.id, condition=rf.expression, assignments=dict(assignments))
        return _by_units(spark, table, job, rf.expression, snapshot)

    return _changed(table, options, plan)


class SparkMergeBuilder(MergeBuilder):
    """:class:`~lakeops.table.row_level.MergeBuilder` of a Spark DataFrame ``source``: the same
    clauses, checked on the driver against the source's columns; :meth:`execute` runs the
    merge on the executors (see the module docstring)."""

    def __init__(
        self,
        source: Any,
        table: AnyTable,
        on: Sequence[str],
        options: Mapping[str, str],
        route: Callable[[Any], Any],
    ) -> None:
        from lakeops.spark.types import spark_arrow_schema

        super().__init__(table, spark_arrow_schema(source.schema).empty_table(), on)
        self.frame, self.options, self.route = source, dict(options), route
        self.spark_table = table

    def execute(self) -> RowChanges:
        """Run the merge as one commit, the source's rows changed where they land."""
        _check(self.table, "merge")
        if not self.matched and not self.not_matched:
            raise ConfigurationError("a merge needs at least one when_... clause")

        def plan(snapshot: Snapshot | None) -> tuple[Any, _Job]:
            job = _Job(
                "merge",
                None if snapshot is None else snapshot.id,
                on=tuple(self.on),
                matched=tuple(self.matched),
                not_matched=tuple(self.not_matched),
            )
            return self.route(self.frame), job

        return _changed(self.spark_table, self.options, plan)
