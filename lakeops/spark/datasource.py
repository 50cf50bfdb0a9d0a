"""The ``lakeops`` Python Data Source (PySpark 4 ``pyspark.sql.datasource``).

Options (all strings; Spark matches their names case-insensitively; an unknown one is an error
listing the known ones, see :mod:`lakeops.spark.options`): ``path`` — the table directory
``<warehouse>/<db>.db/<table>`` (or ``warehouse`` + ``table``); ``storage_options_secret`` — JSON
for the store (endpoint, credentials; they travel to executors inside the pickled source, and
the ``secret`` in the key makes Spark redact them from plans, logs and the UI);
``catalog_options_secret`` — JSON (commit lock); for writes ``overwrite_partitions`` — JSON list
of partition specs for a static partition overwrite; ``parallelism`` — the most buckets one
write task writes at once (default and cap: the task's ``spark.task.cpus``).

The table is a primary-key table or an append table (no primary key): reads, writes, time
travel and ``incremental-between`` serve both (an append table's reads return every row of its
files, its changes are its appended rows, each ``+I``).

Reads: one input partition per (partition, bucket) split of the latest snapshot, or of the
snapshot ``scan.snapshot-id``, ``scan.tag-name``, ``scan.timestamp-millis``, ``versionAsOf`` or
``timestampAsOf`` names (:mod:`lakeops.spark.options`); pushed filters prune partitions and files
(Spark still applies them exactly). ``incremental-between`` ("start,end") reads the changes
between two snapshots instead (one input partition), ``rowkind`` first. Column types as
:mod:`lakeops.spark.types` maps them (timestamps of every precision to Spark's microseconds,
exactly or refused).

Writes (``append`` / ``overwrite``; Spark refuses a save without ``.mode(...)`` for Python data
sources before the source is reached): the first write to a path without a table creates it
from the DataFrame's schema with the ``primary-key``, ``partition`` and Paimon table options
given as write options (without ``primary-key``: an append table, as Paimon's Spark writer
creates one), validated as :meth:`lakeops.Catalog.create_table` validates them. Every
task writes level-0 files with a :class:`~lakeops.write.table_write.TableWrite` (an
:class:`~lakeops.write.append_write.AppendWrite` for an append table) and returns its
commit messages; the driver side ``commit`` publishes **one** snapshot (``OVERWRITE`` for
overwrite); ``abort`` deletes what the tasks wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from lakeops.changelog.reader import ROW_KIND_COLUMN as CHANGES_ROW_KIND
from lakeops.changelog.reader import ChangeMode
from lakeops.errors import (
    ConfigurationError,
)
from lakeops.format.snapshot import Snapshot
from lakeops.read.guard import guard_read, planned_on
from lakeops.read.scan import Split, partition_matches
from lakeops.spark.options import (
    ROW_KIND_COLUMN,
    ScanSpec,
    parse_read_options,
    registered_location,
    source_options,
)
from lakeops.spark.tables import AnyTable, ensure_table, open_table, read_split, task_parallelism
from lakeops.spark.types import check_projection, spark_arrow_schema, spark_schema, to_spark_arrow
from lakeops.spark.writer import LakeopsWriter
from lakeops.table.append import AppendTable

__all__ = ["LakeopsDataSource", "ensure_table", "open_table", "task_parallelism"]

_OPS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """One (partition, bucket) split of ``snapshot`` (None: an empty table)."""

    split: Split
    snapshot: Snapshot | None = None


@dataclass(frozen=True)
class ChangesPartition(InputPartition):
    """The changes after snapshot ``start`` up to ``end``, read in one task."""

    start: int
    end: int
    mode: ChangeMode


def _snapshot_of(table: AnyTable, ref: int | str) -> int:
    """The snapshot id ``ref`` names: itself, or the snapshot of the tag of that name."""
    if isinstance(ref, int):
        return ref
    tags = {t.name: t.snapshot.id for t in table.tags()}
    if ref not in tags:
        raise ConfigurationError(
            f"option 'incremental-between' names tag {ref!r}, which table {table.identifier} "
            f"does not have (its tags: {sorted(tags)})"
        )
    return tags[ref]


class LakeopsReader(DataSourceReader):
    """Reads merged rows, one input partition per split (or the changes between snapshots)."""

    def __init__(self, options: dict[str, str], schema: StructType, scan: ScanSpec) -> None:
        self.options = options
        self.schema = schema
        self.scan = scan
        self.columns = [f.name for f in schema.fields if not self._is_row_kind(f.name)]
        self.conditions: list[tuple[str, str, Any]] = []

    def _is_row_kind(self, name: str) -> bool:
        return self.scan.incremental is not None and name == ROW_KIND_COLUMN

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Use simple comparisons for pruning; hand every filter back so Spark applies it
        exactly on the merged rows."""
        for f in filters:
            column = f.attribute[0] if len(f.attribute) == 1 else None  # type: ignore[attr-defined]
            if column is not None and not self._is_row_kind(column):
                if type(f) in _OPS:
                    self.conditions.append((column, _OPS[type(f)], f.value))  # type: ignore[attr-defined]
                elif isinstance(f, In):
                    self.conditions.append((column, "in", list(f.value)))
            yield f

    def partitions(self) -> Sequence[InputPartition]:
        table = open_table(self.options)
        if self.scan.incremental is not None:
            start, end = (_snapshot_of(table, ref) for ref in self.scan.incremental)
            if start >= end:
                raise ConfigurationError(
                    f"option 'incremental-between' {self.scan.incremental} names snapshots "
                    f"{start} and {end}: the start must be older than the end"
                )
            if isinstance(table, AppendTable) and self.scan.mode not in ("auto", "delta"):
                raise ConfigurationError(
                    f"incremental-between-scan-mode {self.scan.mode!r} is for primary-key "
                    f"tables; {table.identifier} is an append table, whose changes are its "
                    "appended rows (mode 'auto' or 'delta')"
                )
            return [ChangesPartition(start, end, self.scan.mode)]
        scan = self.scan
        snapshot_id, tag = scan.snapshot_id, scan.tag
        if scan.version is not None:  # Paimon's VERSION AS OF: a tag of that name first
            if scan.version.isdigit() and all(t.name != scan.version for t in table.tags()):
                snapshot_id = int(scan.version)
            else:
                tag = scan.version
        planned = table.scan(
            filter=self.conditions or None,
            snapshot_id=snapshot_id,
            tag=tag,
            as_of=scan.as_of_millis,
        )
        splits = planned.splits()
        wanted = self.options.get("partitions")
        if wanted is not None:
            keep = partition_matches(table.schema, json.loads(wanted), table.options)
            splits = [s for s in splits if keep(s.partition_bytes)]
        return [SplitPartition(s, planned.snapshot) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = open_table(self.options)
        target = spark_arrow_schema(self.schema)
        if isinstance(partition, ChangesPartition):
            changes = table.read_changes(
                partition.start, partition.end, mode=partition.mode, columns=self.columns
            )
            changes = changes.rename_columns(
                [ROW_KIND_COLUMN if n == CHANGES_ROW_KIND else n for n in changes.column_names]
            )
            yield from to_spark_arrow(changes, target).to_batches()
            return
        assert isinstance(partition, SplitPartition)
        # a file gone because expiry removed the planned snapshot: SnapshotExpiredError (the
        # table is healthy, read again), not corruption
        result = guard_read(
            table.store,
            planned_on(partition.snapshot),
            lambda: read_split(table, partition.split, self.columns),
        )
        yield from to_spark_arrow(result, target).to_batches()


class LakeopsDataSource(DataSource):
    """``spark.read.format("lakeops")`` / ``df.write.format("lakeops")``."""

    @classmethod
    def name(cls) -> str:
        return "lakeops"

    def schema(self) -> StructType:
        """The table's columns as Spark types; ``rowkind`` first for incremental reads and for
        streams read with ``row-kind=true``."""
        options = source_options(self.options)
        scan = parse_read_options(options)
        row_kind = ROW_KIND_COLUMN if scan.incremental is not None or scan.row_kind else None
        return spark_schema(open_table(options).arrow_schema, row_kind)

    def reader(self, schema: StructType) -> DataSourceReader:
        """The reader of ``schema``'s columns: the table's (the default), or those a
        user-given schema names (``.schema("id long, v double")``: only those columns are
        read; each must be a column of the table, of the type Spark reads it as). A table
        registered by name (:func:`lakeops.spark.register_tables`) finds its location in
        ``schema``."""
        options = source_options(self.options)
        if not {"path", "warehouse", "table"} & set(options):
            options = {**registered_location(schema), **options}
        scan = parse_read_options(options)
        if scan.stream_only:
            raise ConfigurationError(
                f"option(s) {list(scan.stream_only)} are for spark.readStream; a batch read "
                "returns the merged rows (or, with incremental-between, the changes with their "
                "rowkind)"
            )
        if scan.incremental is None:
            check_projection(schema, spark_schema(open_table(options).arrow_schema))
        return LakeopsReader(options, schema, scan)

    def writer(self, schema: StructType, overwrite: bool) -> LakeopsWriter:
        """Validate the write options and create the table if the path holds none (on the
        driver, before any task runs)."""
        options = source_options(self.options)
        ensure_table(options, schema)
        return LakeopsWriter(options, overwrite)

    # Spark calls streamWriter(schema=..., overwrite=...) by name; the schema is the table's
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: ARG002
        """``df.writeStream.format("lakeops")``: exactly-once micro-batch commits
        (:mod:`lakeops.spark.streaming`)."""
        from lakeops.spark.streaming import LakeopsStreamWriter

        return LakeopsStreamWriter(source_options(self.options), overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream.format("lakeops")``: the table's changes, snapshot by snapshot
        (:mod:`lakeops.spark.streaming`)."""
        from lakeops.spark.streaming import LakeopsStreamReader

        return LakeopsStreamReader(source_options(self.options), schema)
