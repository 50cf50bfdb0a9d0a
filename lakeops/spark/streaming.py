"""Structured Streaming for the ``lakeops`` data source: an exactly-once sink and a change source.

**Sink** (``df.writeStream.format("lakeops")``): every micro-batch's tasks write level-0 files
as the batch writer does; the driver commits them as one snapshot whose *commit user* is stable
for the query and whose *commit identifier* is the micro-batch id — Paimon's streaming commit.
The committer skips batch ``N`` when the newest snapshot of the commit user (scanning back from
the latest snapshot, as Paimon's ``filterCommitted``; :mod:`lakeops.commit.exactly_once`) has an
identifier ``>= N``: the batch was already committed (Spark replays a batch whose commit it did
not record, e.g. after a crash between the table commit and Spark's commit log), and the
replay's files are deleted instead. So each micro-batch lands once, however often Spark retries
or replays it.

The commit user is the ``commit_user`` option, else derived from the ``checkpointLocation``
option (the same checkpoint, the same query: a restart continues with the same user); a query
without either is refused before anything is written. Output modes: ``append`` and ``update``
commit ``APPEND`` snapshots (a primary-key table upserts, an append table appends),
``complete`` commits ``OVERWRITE``.

**Source** (``spark.readStream.format("lakeops").option("row-kind", "true")``): emits the
table's changes with a ``rowkind`` column (``+I``/``-U``/``+U``/``-D``) first — the changelog
files where the table has a ``changelog-producer``, else the data each ``APPEND`` snapshot added
(:func:`lakeops.changelog.reader.read_changes`, mode ``auto``; option ``changes.mode`` picks
``changelog``/``delta``). An append table's stream is its appended rows, all ``+I``: the
new files of each ``APPEND`` snapshot (``COMPACT`` and ``OVERWRITE`` snapshots emit nothing,
as Paimon's streaming read of an append table skips them). The offset is
``{"snapshot": id}``: everything up to that snapshot has been emitted; Spark keeps it in its
checkpoint, so a restarted query goes on where it stopped.
Where to start (``scan.mode``, as Paimon names it):

* ``latest-full`` (default): the full merged state of the latest snapshot as ``+I`` rows, then
  every change after it;
* ``latest``: only changes committed after the query started;
* ``from-snapshot`` (implied by ``scan.snapshot-id=N``): the changes of snapshot ``N`` onward;
* ``from-snapshot-full`` (with ``scan.snapshot-id=N``): the full state of ``N``, then changes.

``consumer-id=<id>`` makes the query a Paimon consumer of the table
(``consumer/consumer-<id>``, :mod:`lakeops.store.consumers`): a query started without a
checkpoint whose consumer exists starts with the changes of the consumer's ``nextSnapshot``
(Paimon's ``consumer-id`` startup; ``scan.mode`` then only places a new consumer), and when
Spark commits the source up to a micro-batch ending at snapshot ``N`` (the source's ``commit``)
the consumer records ``nextSnapshot = N + 1``. Spark commits a batch's offsets to its source
when it plans the next batch (after the batch's sink commit is in the checkpoint), so the
consumer trails the query by at most one micro-batch — never ahead of what was written: expiry
keeps every snapshot the query may still need, and a new query (fresh checkpoint) with the same
id may read the last batch's changes again (at least once). A query that stopped is recorded
up to its last batch when it restarts from its checkpoint and plans a batch.

Spark resolves a source's schema before it knows whether the read is a stream, so the
``rowkind`` column is asked for with ``row-kind=true``; a stream without it is refused.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from lakeops.commit.exactly_once import latest_snapshot_of_user
from lakeops.errors import CommitStateUnknownError, ConfigurationError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.snapshot import CommitKind
from lakeops.read.scan import Split
from lakeops.spark.options import ROW_KIND_COLUMN
from lakeops.spark.tables import AnyTable, open_table, read_split
from lakeops.spark.writer import LakeopsCommitMessage, LakeopsWriter
from lakeops.store.consumers import check_consumer_id, read_next_snapshot, write_next_snapshot
from lakeops.table.append import AppendTable

__all__ = [
    "COMMIT_GATE_ENV",
    "LakeopsStreamReader",
    "LakeopsStreamWriter",
    "last_committed_identifier",
    "stream_commit_user",
]

log = logging.getLogger(__name__)

#: test hook: a directory with two FIFOs, ``reached`` and ``release``; when set, the sink's
#: commit writes ``"<point> <batch id> <pid>"`` to ``reached`` before (``commit``) and after
#: (``committed``) publishing, then waits for a line on ``release`` (so a test can kill it there)
COMMIT_GATE_ENV = "LAKEOPS_TEST_STREAM_COMMIT_GATE"

_SCAN_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full")
_CHANGE_MODES = ("auto", "changelog", "delta")


# ------------------------------------------------------------------------------------------ sink
def stream_commit_user(options: dict[str, str]) -> str:
    """The commit user of a streaming query: the ``commit_user`` option, else one derived from
    the ``checkpointLocation`` option (stable across restarts of the same query)."""
    user = options.get("commit_user")
    if user:
        return user
    checkpoint = options.get("checkpointLocation") or options.get("checkpointlocation")
    if not checkpoint:
        raise ConfigurationError(
            "a lakeops streaming sink needs .option('checkpointLocation', …) (or "
            ".option('commit_user', …)): the commit user must stay the same across restarts of "
            "the query so that a replayed micro-batch is not committed twice"
        )
    if "://" not in checkpoint:
        checkpoint = os.path.abspath(checkpoint)
    digest = hashlib.sha256(checkpoint.rstrip("/").encode()).hexdigest()[:32]
    return f"lakeops-stream-{digest}"


def last_committed_identifier(table: AnyTable, commit_user: str) -> int | None:
    """The commit identifier of ``commit_user``'s newest retained snapshot (None if it has
    none left); see :func:`lakeops.commit.exactly_once.latest_snapshot_of_user`."""
    newest = latest_snapshot_of_user(table.store, commit_user)
    return None if newest is None else newest.commit_identifier


def _gate(point: str, batch_id: int) -> None:
    gate = os.environ.get(COMMIT_GATE_ENV)
    if not gate:
        return
    with open(os.path.join(gate, "reached"), "w") as reached:
        reached.write(f"{point} {batch_id} {os.getpid()}\n")
    with open(os.path.join(gate, "release")) as release:
        release.readline()


def _messages(messages: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for msg in messages if isinstance(msg, LakeopsCommitMessage) for m in msg.messages]


class LakeopsStreamWriter(DataSourceStreamArrowWriter):
    """Writes each micro-batch's files on the executors; commits each batch id once."""

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite
        self.commit_user = stream_commit_user(options)  # refused here, before any file

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return LakeopsWriter(self.options, self.overwrite).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the batch under the query's commit user with the batch id as identifier; a
        batch already committed (the committer's check, :mod:`lakeops.commit.exactly_once`)
        publishes nothing and its replay's files are deleted."""
        table = open_table(self.options)
        batch = _messages(messages)
        _gate("commit", batchId)
        if batch or self.overwrite:
            try:
                table.commit(
                    batch,
                    commit_user=self.commit_user,
                    commit_identifier=batchId,
                    overwrite=self.overwrite,
                )
            except CommitStateUnknownError:
                self._state_unknown = True  # the snapshot may reference the files
                raise
        _gate("committed", batchId)

    # Spark's DataSourceStreamWriter.abort(messages, batchId): the batch is not needed here
    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: ARG002
        if getattr(self, "_state_unknown", False):
            return
        open_table(self.options).delete_uncommitted(_messages(messages))


# ---------------------------------------------------------------------------------------- source
@dataclass(frozen=True)
class FullPartition(InputPartition):
    """One split of the snapshot whose full state starts the stream."""

    split: Split


@dataclass(frozen=True)
class ChangesPartition(InputPartition):
    """The changes one snapshot made."""

    snapshot_id: int


class LakeopsStreamReader(DataSourceStreamReader):
    """Emits the table's changes snapshot by snapshot (see the module docstring)."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.options = options
        self.columns = [f.name for f in schema.fields]
        if ROW_KIND_COLUMN not in self.columns:
            raise ConfigurationError(
                "a lakeops stream emits changes with their row kind: add "
                f".option('row-kind', 'true') to spark.readStream (a {ROW_KIND_COLUMN!r} column "
                "comes first)"
            )
        self.mode = options.get("scan.mode") or (
            "from-snapshot" if options.get("scan.snapshot-id") else "latest-full"
        )
        if self.mode not in _SCAN_MODES:
            raise ConfigurationError(f"scan.mode {self.mode!r} must be one of {_SCAN_MODES}")
        start = options.get("scan.snapshot-id")
        if self.mode.startswith("from-snapshot"):
            if not start or not start.isdigit() or int(start) < 1:
                raise ConfigurationError(
                    f"scan.mode {self.mode!r} needs scan.snapshot-id, a snapshot id >= 1"
                )
        elif start:
            raise ConfigurationError(
                f"scan.snapshot-id is for scan.mode 'from-snapshot' or 'from-snapshot-full', "
                f"not {self.mode!r}"
            )
        self.start = int(start) if start else 0
        self.change_mode = options.get("changes.mode", "auto")
        if self.change_mode not in _CHANGE_MODES:
            raise ConfigurationError(
                f"changes.mode {self.change_mode!r} must be one of {_CHANGE_MODES}"
            )
        if self.change_mode == "changelog" and isinstance(open_table(options), AppendTable):
            raise ConfigurationError(
                "changes.mode 'changelog' is for primary-key tables with a changelog producer; "
                "an append table's stream is its appended rows (changes.mode 'auto' or 'delta')"
            )
        consumer = options.get("consumer-id")
        self.consumer_id = None if consumer is None else check_consumer_id(consumer)

    def _latest(self) -> int:
        return open_table(self.options).store.latest_snapshot_id() or 0

    def initialOffset(self) -> dict[str, int]:
        """``{"snapshot": -1}`` (the start is still to be planned; the first batch's end offset,
        in the checkpoint, fixes it) — or, from a given snapshot ``N`` (``scan.snapshot-id``, or
        the ``nextSnapshot`` of an existing ``consumer-id``, which comes first),
        ``{"snapshot": N-1}``."""
        if self.consumer_id is not None:
            next_snapshot = read_next_snapshot(open_table(self.options).store, self.consumer_id)
            if next_snapshot is not None:
                return {"snapshot": next_snapshot - 1}
        if self.mode == "from-snapshot":
            return {"snapshot": self.start - 1}
        return {"snapshot": -1}

    # Spark passes its read limit too; every available snapshot is read, so it is not used
    def latestOffset(
        self,
        start: dict[str, int] | None = None,
        limit: Any = None,  # noqa: ARG002
    ) -> dict[str, int]:
        """The latest snapshot (never behind ``start``)."""
        latest = self._latest()
        if start is None:
            return {"snapshot": latest}
        return {"snapshot": max(latest, int(start["snapshot"]))}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["snapshot"]), int(end["snapshot"])
        parts: list[InputPartition] = []
        if first == -1:  # the stream's first batch: the starting state, if the mode wants one
            first = last if self.mode in ("latest-full", "latest") else self.start
            if self.mode != "latest" and first > 0:
                if first > last:
                    raise ConfigurationError(
                        f"scan.snapshot-id {first} is after the latest snapshot {last}"
                    )
                table = open_table(self.options)
                parts += [FullPartition(s) for s in table.splits(snapshot_id=first)]
        parts += [ChangesPartition(i) for i in range(first + 1, last + 1)]
        return parts

    def commit(self, end: dict[str, int]) -> None:
        """Spark has processed everything up to offset ``end`` (it calls this when it plans
        the batch after the one ending at ``end``): with ``consumer-id`` the consumer records
        ``nextSnapshot = end + 1`` (atomically replaced)."""
        last = int(end["snapshot"])
        if self.consumer_id is not None and last >= 0:
            write_next_snapshot(open_table(self.options).store, self.consumer_id, last + 1)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = open_table(self.options)
        columns = [c for c in self.columns if c != ROW_KIND_COLUMN]
        target = pa.schema(
            [
                pa.field(ROW_KIND_COLUMN, pa.string(), False),
                *[table.arrow_schema.field(c) for c in columns],
            ]
        )
        if isinstance(partition, FullPartition):
            rows = read_split(table, partition.split, columns)
            kinds = pa.repeat(pa.scalar("+I", pa.string()), rows.num_rows)
            result = pa.table([kinds, *rows.columns], names=[ROW_KIND_COLUMN, *columns])
        else:
            assert isinstance(partition, ChangesPartition)
            sid = partition.snapshot_id
            if (
                isinstance(table, AppendTable)
                and table.store.snapshot(sid).commit_kind != CommitKind.APPEND
            ):
                # an append table's stream is its appended rows: COMPACT snapshots add none,
                # and an OVERWRITE is skipped as Paimon's streaming read skips it
                # (``streaming-read-overwrite`` = false), as the primary-key delta stream does
                return
            result = table.read_changes(
                sid - 1,
                sid,
                mode=self.change_mode,  # type: ignore[arg-type]
                columns=columns,
            ).rename_columns([ROW_KIND_COLUMN, *columns])
        yield from result.cast(target).select(self.columns).to_batches()
