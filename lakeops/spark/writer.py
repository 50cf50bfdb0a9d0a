"""The write side of the ``lakeops`` data source: each task writes level-0 files with a
:class:`~lakeops.write.table_write.TableWrite` and returns its commit messages; the driver
commits them as one snapshot (``OVERWRITE`` for overwrite) or deletes them on abort. With the
``commit_user`` option the commit is exactly-once: a job retried after its commit landed
publishes nothing and its files are deleted (:mod:`lakeops.commit.exactly_once`). The
``watermark`` option (epoch milliseconds) is stored in the snapshot, and ``last_safe_snapshot``
guards an overwrite, as ``Table.commit`` takes them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    WriterCommitMessage,
)

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER
from lakeops.errors import (
    CommitStateUnknownError,
)
from lakeops.format.commit_message import CommitMessage
from lakeops.spark.tables import open_table, task_parallelism

__all__ = ["LakeopsCommitMessage", "LakeopsWriter"]

#: rows a write task gathers before validating and routing them in one go
_COALESCE_ROWS = 262_144


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
            job = self.options.get("row_level")
            if job is not None:  # a row-level change: the task's records (lakeops.spark.row_level)
                from lakeops.spark.row_level import write_changes

                write_changes(table, job, iterator, writer)
                return LakeopsCommitMessage(writer.prepare_commit())
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
                # a stable commit user (the option) makes a retried job's commit a no-op
                user = self.options.get("commit_user")
                watermark = self.options.get("watermark")
                safe = self.options.get("last_safe_snapshot")
                table.commit(
                    batch,
                    commit_user=user,
                    commit_identifier=BATCH_COMMIT_IDENTIFIER if user else None,
                    overwrite=overwrite,
                    watermark=None if watermark is None else int(watermark),
                    last_safe_snapshot=None if safe is None else int(safe),
                )
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
