"""The ``lakeops`` Python Data Source (PySpark 4 ``pyspark.sql.datasource``).

Options (all strings): ``path`` — the table directory ``<warehouse>/<db>.db/<table>`` (or
``warehouse`` + ``table``); ``storage_options_secret`` — JSON for the store (endpoint,
credentials; they travel to executors inside the pickled source, and the ``secret`` in the key
makes Spark redact them from plans, logs and the UI); ``catalog_options_secret`` — JSON (commit
lock); for writes ``overwrite_partitions`` — JSON list of partition specs for a static
partition overwrite; ``parallelism`` — the most buckets one write task writes at once (default
and cap: the task's ``spark.task.cpus``).

Reads: one input partition per (partition, bucket) split; pushed filters prune partitions and
files (Spark still applies them exactly). Writes (``append`` / ``overwrite``): every task writes
level-0 files with a :class:`~lakeops.write.table_write.TableWrite` and returns its commit
messages; the driver side ``commit`` publishes **one** snapshot (``OVERWRITE`` for overwrite);
``abort`` deletes what the tasks wrote.
"""

from __future__ import annotations

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
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from lakeops.errors import CommitStateUnknownError, ConfigurationError
from lakeops.io.file_io import FileIO
from lakeops.parallel import check_parallelism
from lakeops.read.scan import Split
from lakeops.spec.commit_message import CommitMessage
from lakeops.table import Table

__all__ = ["LakeopsDataSource", "open_table", "task_parallelism"]

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


def open_table(options: dict[str, str]) -> Table:
    """The table the data-source options name."""
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
    fio = FileIO(path, storage, catalog_options)
    db_dir, name = fio.root.rsplit("/", 1)
    return Table(f"{db_dir.rsplit('/', 1)[-1].removesuffix('.db')}.{name}", fio, fio.root)


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


class LakeopsReader(DataSourceReader):
    """Reads merged rows, one input partition per split."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.columns = [f.name for f in schema.fields]
        self.conditions: list[tuple[str, str, Any]] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Use simple comparisons for pruning; hand every filter back so Spark applies it
        exactly on the merged rows."""
        for f in filters:
            column = f.attribute[0] if len(f.attribute) == 1 else None  # type: ignore[attr-defined]
            if column is not None and type(f) in _OPS:
                self.conditions.append((column, _OPS[type(f)], f.value))  # type: ignore[attr-defined]
            elif column is not None and isinstance(f, In):
                self.conditions.append((column, "in", list(f.value)))
            yield f

    def partitions(self) -> Sequence[InputPartition]:
        table = open_table(self.options)
        return [SplitPartition(s) for s in table.splits(filter=self.conditions or None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SplitPartition)
        table = open_table(self.options)
        reader = table.split_reader()
        result = reader.read(partition.split, self.columns)
        target = pa.schema([table.arrow_schema.field(c) for c in self.columns])
        yield from result.cast(target).to_batches()


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
        from lakeops.spark.streaming import source_schema  # the stream's _row_kind (row-kind)

        options = dict(self.options)
        return from_arrow_schema(source_schema(options, open_table(options)))

    def reader(self, schema: StructType) -> DataSourceReader:
        return LakeopsReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> LakeopsWriter:
        return LakeopsWriter(dict(self.options), overwrite)

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
