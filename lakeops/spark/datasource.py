"""The ``lakeops`` Python Data Source (PySpark 4 ``pyspark.sql.datasource``).

Options (all strings; Spark matches their names case-insensitively; an unknown one is an error
listing the known ones, see :mod:`lakeops.spark.options`): ``path`` — the table directory
``<warehouse>/<db>.db/<table>`` (or ``warehouse`` + ``table``); ``storage_options_secret`` — JSON
for the store (endpoint, credentials; they travel to executors inside the pickled source, and
the ``secret`` in the key makes Spark redact them from plans, logs and the UI);
``catalog_options_secret`` — JSON (commit lock); for writes ``overwrite_partitions`` — JSON list
of partition specs for a static partition overwrite; ``parallelism`` — the most buckets one
write task writes at once (default and cap: the task's ``spark.task.cpus``).

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
given as write options, validated as :meth:`lakeops.Catalog.create_table` validates them. Every
task writes level-0 files with a :class:`~lakeops.write.table_write.TableWrite` and returns its
commit messages; the driver side ``commit`` publishes **one** snapshot (``OVERWRITE`` for
overwrite); ``abort`` deletes what the tasks wrote.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
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
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from lakeops.catalog import Catalog, new_table_schema
from lakeops.changelog.reader import ROW_KIND_COLUMN as CHANGES_ROW_KIND
from lakeops.changelog.reader import ChangeMode
from lakeops.errors import (
    CommitStateUnknownError,
    ConfigurationError,
    TableAlreadyExistsError,
)
from lakeops.io.file_io import FileIO, join
from lakeops.parallel import check_parallelism
from lakeops.read.scan import Split
from lakeops.spark.options import (
    ROW_KIND_COLUMN,
    ScanSpec,
    TableOptions,
    parse_read_options,
    split_write_options,
)
from lakeops.spark.types import as_nullable, spark_arrow_schema, spark_schema, to_spark_arrow
from lakeops.spec import paths
from lakeops.spec.commit_message import CommitMessage
from lakeops.table import Table

__all__ = ["LakeopsDataSource", "ensure_table", "open_table", "task_parallelism"]

#: rows a write task gathers before validating and routing them in one go
_COALESCE_ROWS = 262_144


def task_parallelism(requested: str | None) -> int:
    """How many buckets one Spark task writes at once: the task's CPUs (``spark.task.cpus``;
    1 outside a task), lowered to ``requested`` (the ``parallelism`` write option) when that is
    smaller — never more, so a task does not oversubscribe the slots its executor gave it."""
    from pyspark import TaskContext

    context = TaskContext.get()
    slots = max(int(context.cpus()), 1) if context is not None else 1
    if requested is None:
        return slots
    return min(check_parallelism(int(requested)) or slots, slots)


def _location(options: dict[str, str]) -> tuple[FileIO, dict[str, Any], dict[str, str]]:
    """The table directory's FileIO, with the storage and catalog options it was built from."""
    storage = json.loads(
        options.get("storage_options_secret") or options.get("storage_options") or "{}"
    )
    catalog_options = json.loads(
        options.get("catalog_options_secret") or options.get("catalog_options") or "{}"
    )
    path = options.get("path")
    if not path:
        warehouse, identifier = options.get("warehouse"), options.get("table")
        if not warehouse or not identifier or "." not in identifier:
            raise ConfigurationError(
                "lakeops data source needs .load('<warehouse>/<db>.db/"
                "<table>') or options warehouse=… and table=db.table"
            )
        db, name = identifier.split(".", 1)
        path = f"{warehouse.rstrip('/')}/{db}.db/{name}"
    return FileIO(path, storage, catalog_options), storage, catalog_options


def open_table(options: dict[str, str]) -> Table:
    """The table the data-source options name."""
    fio, _, _ = _location(options)
    db_dir, name = fio.root.rsplit("/", 1)
    return Table(f"{db_dir.rsplit('/', 1)[-1].removesuffix('.db')}.{name}", fio, fio.root)


def ensure_table(options: dict[str, str], schema: StructType) -> Table:
    """The table a write goes to, created from the DataFrame's ``schema`` when the path holds
    none (with the ``primary-key``, ``partition`` and table options among ``options``,
    validated by :meth:`lakeops.Catalog.create_table`). For an existing table those options
    must match what the table has: they define a table, they do not change one."""
    spec = split_write_options(options, schema.fieldNames())
    fio, storage, catalog_options = _location(options)
    if not fio.list_names(join(fio.root, paths.SCHEMA_DIR)):
        db_dir, name = fio.root.rsplit("/", 1)
        warehouse, db_name = db_dir.rsplit("/", 1) if "/" in db_dir else ("", db_dir)
        if not db_name.endswith(".db") or not warehouse:
            raise ConfigurationError(
                f"no table at {fio.root}, and the path is not <warehouse>/<database>.db/<table>, "
                "so a write cannot create one there"
            )
        if not spec.primary_keys:
            raise ConfigurationError(
                f"no table at {fio.root}: to create it from the DataFrame, give its key, e.g. "
                ".option('primary-key', 'id') (and optionally 'partition', 'bucket' and other "
                "Paimon table options)"
            )
        catalog = Catalog(warehouse, storage_options=storage, options=catalog_options)
        arrow_schema = as_nullable(spark_arrow_schema(schema))
        # validated before the database directory is made: a refused write leaves nothing
        new_table_schema(arrow_schema, spec.primary_keys, spec.partition_keys, spec.options)
        catalog.create_database(db_name.removesuffix(".db"), ignore_if_exists=True)
        # another writer may create it first: then check it is the table this write means
        with contextlib.suppress(TableAlreadyExistsError):
            catalog.create_table(
                f"{db_name.removesuffix('.db')}.{name}",
                schema=arrow_schema,
                primary_keys=spec.primary_keys,
                partition_keys=spec.partition_keys,
                options=spec.options,
            )
    table = open_table(options)
    _check_matches(table, spec)
    return table


def _check_matches(table: Table, spec: TableOptions) -> None:
    """Refuse table-defining write options that differ from what the existing table has."""
    schema = table.schema
    wrong = []
    if spec.primary_keys is not None and spec.primary_keys != list(schema.primary_keys):
        wrong.append(f"primary-key {spec.primary_keys} (the table has {schema.primary_keys})")
    if spec.partition_keys is not None and spec.partition_keys != list(schema.partition_keys):
        wrong.append(f"partition {spec.partition_keys} (the table has {schema.partition_keys})")
    for key, value in spec.options.items():
        have = schema.options.get(key)
        if have != value:
            wrong.append(f"{key}={value!r} (the table has {have!r})")
    if wrong:
        raise ConfigurationError(
            f"table {table.identifier} exists and the write options define it differently: "
            + "; ".join(wrong)
            + ". Table options configure a table the write creates; change an existing one "
            "with Table.alter (or drop the options from the write)"
        )


_OPS = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """One (partition, bucket) split."""

    split: Split


@dataclass(frozen=True)
class ChangesPartition(InputPartition):
    """The changes after snapshot ``start`` up to ``end``, read in one task."""

    start: int
    end: int
    mode: ChangeMode


def _snapshot_of(table: Table, ref: int | str) -> int:
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
            return [ChangesPartition(start, end, self.scan.mode)]
        scan = self.scan
        snapshot_id, tag = scan.snapshot_id, scan.tag
        if scan.version is not None:  # Paimon's VERSION AS OF: a tag of that name first
            if scan.version.isdigit() and all(t.name != scan.version for t in table.tags()):
                snapshot_id = int(scan.version)
            else:
                tag = scan.version
        splits = table.splits(
            filter=self.conditions or None,
            snapshot_id=snapshot_id,
            tag=tag,
            as_of=scan.as_of_millis,
        )
        return [SplitPartition(s) for s in splits]

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
        result = table.split_reader().read(partition.split, self.columns)
        result = result.cast(pa.schema([table.arrow_schema.field(c) for c in self.columns]))
        yield from to_spark_arrow(result, target).to_batches()


@dataclass
class LakeopsCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    messages: list[CommitMessage]


class LakeopsWriter(DataSourceArrowWriter):
    """Each task writes level-0 files; the driver commits once."""

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        table = open_table(self.options)
        writer = table.new_write(
            overwrite=self.overwrite,
            parallelism=task_parallelism(self.options.get("parallelism")),
        )
        pending: list[pa.RecordBatch] = []
        rows = 0
        try:
            for batch in iterator:  # Spark hands small batches: validate and route in bulk
                if batch.num_rows:
                    pending.append(batch)
                    rows += batch.num_rows
                if rows >= _COALESCE_ROWS:
                    writer.write(pa.Table.from_batches(pending))
                    pending, rows = [], 0
            if pending:
                writer.write(pa.Table.from_batches(pending))
            return LakeopsCommitMessage(writer.prepare_commit())
        except BaseException:
            writer.abort()
            raise

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = open_table(self.options)
        batch = [
            m for msg in messages if isinstance(msg, LakeopsCommitMessage) for m in msg.messages
        ]
        overwrite: bool | list[dict[str, Any]] = self.overwrite
        if self.overwrite and self.options.get("overwrite_partitions"):
            overwrite = json.loads(self.options["overwrite_partitions"])
        if batch or overwrite:
            try:
                table.commit(batch, overwrite=overwrite)
            except CommitStateUnknownError:
                self._state_unknown = True  # the snapshot may reference the files: abort keeps them
                raise

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if getattr(self, "_state_unknown", False):
            return
        table = open_table(self.options)
        batch = [
            m for msg in messages if isinstance(msg, LakeopsCommitMessage) for m in msg.messages
        ]
        table.delete_uncommitted(batch)


class LakeopsDataSource(DataSource):
    """``spark.read.format("lakeops")`` / ``df.write.format("lakeops")``."""

    @classmethod
    def name(cls) -> str:
        return "lakeops"

    def schema(self) -> StructType:
        """The table's columns as Spark types; ``rowkind`` first for incremental reads and for
        streams read with ``row-kind=true``."""
        options = dict(self.options)
        scan = parse_read_options(options)
        row_kind = ROW_KIND_COLUMN if scan.incremental is not None or scan.row_kind else None
        return spark_schema(open_table(options).arrow_schema, row_kind)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = dict(self.options)
        scan = parse_read_options(options)
        if scan.stream_only:
            raise ConfigurationError(
                f"option(s) {list(scan.stream_only)} are for spark.readStream; a batch read "
                "returns the merged rows (or, with incremental-between, the changes with their "
                "rowkind)"
            )
        return LakeopsReader(options, schema, scan)

    def writer(self, schema: StructType, overwrite: bool) -> LakeopsWriter:
        """Validate the write options and create the table if the path holds none (on the
        driver, before any task runs)."""
        options = dict(self.options)
        ensure_table(options, schema)
        return LakeopsWriter(options, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """``df.writeStream.format("lakeops")``: exactly-once micro-batch commits
        (:mod:`lakeops.spark.streaming`)."""
        from lakeops.spark.streaming import LakeopsStreamWriter

        return LakeopsStreamWriter(dict(self.options), overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream.format("lakeops")``: the table's changes, snapshot by snapshot
        (:mod:`lakeops.spark.streaming`)."""
        from lakeops.spark.streaming import LakeopsStreamReader

        return LakeopsStreamReader(dict(self.options), schema)
