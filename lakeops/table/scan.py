"""One read of a table: :class:`Scan`, made by ``table.scan(columns=…, filter=…,
snapshot_id=… | tag=… | as_of=…)`` on either kind of table.

A scan is checked once, when it is made: the columns exist, the filter is one the table can
apply, at most one of ``snapshot_id``, ``tag`` and ``as_of`` is given, and which snapshot it
reads is resolved then (see :mod:`lakeops.store.time_travel`). It then reads that snapshot,
whole (:meth:`Scan.read`), streamed (:meth:`Scan.to_batches`,
:meth:`Scan.to_arrow_batch_reader`) or handed to pandas, Polars or DuckDB; every read of one
scan sees the same snapshot. The table's kind decides only how splits are planned and read
(:class:`ScanSource`); expiry under a read is told apart from corruption here, once
(:mod:`lakeops.read.guard`).

:class:`ScanArgs` is the scan's keyword set as a type, so the table's read methods
(``read(**scan)``, ``to_pandas(**scan)`` …) take exactly what ``scan`` takes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

import pyarrow as pa

from lakeops.format.snapshot import Snapshot
from lakeops.parallel import check_parallelism
from lakeops.read import handoff
from lakeops.read.guard import guard_batches, guard_read, planned_on
from lakeops.read.predicate import Filter, RowFilter
from lakeops.store import TableStore
from lakeops.store.time_travel import AsOf

__all__ = ["READ_MODES", "ReadMode", "Scan", "ScanArgs", "ScanSource", "SplitRead"]

#: what a read returns: ``"merged"``, every row of the snapshot (a primary-key table's merged
#: by key); ``"read-optimized"``, Paimon's read-optimized read (its ``$ro`` table): a
#: primary-key table's rows in the files at the top level only (fully compacted data, read
#: without merging levels, possibly older than the latest rows); an append table's rows are
#: the same either way
ReadMode = Literal["merged", "read-optimized"]
READ_MODES: tuple[ReadMode, ...] = ("merged", "read-optimized")


class ScanArgs(TypedDict, total=False):
    """The keyword arguments of ``table.scan`` (see :meth:`lakeops.Table.scan`)."""

    columns: Sequence[str] | None
    filter: Filter | None
    snapshot_id: int | None
    tag: str | None
    as_of: AsOf | None
    mode: ReadMode


@dataclass(frozen=True)
class SplitRead:
    """What a kind of table is asked to read: the ``wanted`` columns of the rows ``rf`` keeps
    in ``splits`` (planned by its ``_plan``), with ``parallelism`` and, streamed, at most
    ``batch_rows`` rows a batch (None: the kind's default)."""

    splits: Sequence[Any]
    wanted: list[str]
    rf: RowFilter | None = None
    parallelism: int | None = None
    batch_rows: int | None = None


class ScanSource(Protocol):
    """What a kind of table gives a scan: its store, how it plans the splits of a snapshot
    and how it reads them, whole or streamed (:class:`lakeops.table.base.BaseTable` declares
    these hooks; each kind implements them)."""

    #: the table's metadata
    store: TableStore

    def _plan(
        self, snapshot: Snapshot | None, rf: RowFilter | None, *, every_level: bool = False
    ) -> Sequence[Any]: ...

    def _read_splits(self, read: SplitRead) -> pa.Table: ...

    def _stream_splits(self, read: SplitRead) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]: ...

    def _read_optimized(self, splits: Sequence[Any]) -> Sequence[Any]: ...


@dataclass(frozen=True, eq=False)
class Scan:
    """One checked read of a table: ``columns`` of the rows ``row_filter`` keeps, in
    ``snapshot`` (None: the table had no snapshot, and reads are empty). Make it with
    ``table.scan(...)``; see the module docstring."""

    #: the table it reads
    table: ScanSource
    #: the columns returned, in order
    columns: tuple[str, ...]
    #: the checked filter (None: every row)
    row_filter: RowFilter | None
    #: the snapshot read
    snapshot: Snapshot | None
    #: merged rows, or the read-optimized read of the top level (:data:`ReadMode`)
    mode: ReadMode = field(default="merged", kw_only=True)
    #: every committed record, level 0 too where batch reads skip it (deletion vectors,
    #: first-row): what a row-level change reads, so that it misses no committed write
    every_level: bool = field(default=False, kw_only=True)

    def splits(self) -> list[Any]:
        """The (partition, bucket) splits this scan reads, pruned by its filter."""
        return list(guard_read(self.table.store, planned_on(self.snapshot), self._plan))

    def read(self, *, parallelism: int | None = None) -> pa.Table:
        """The rows, whole, as one table.

        A primary-key table's rows are merged by key (the batches of :meth:`to_batches` as one
        table; ``parallelism``: sections merged at once). An append table's are every row of
        every live file, by (partition, bucket), a fixed bucket's files in the order they were
        written (``parallelism``: files read at once). Only the columns asked for and what the
        filter reads are read from storage (with a primary-key table's key and sequence
        fields); the filter skips partitions, buckets, files and row groups that cannot hold a
        kept row, then is applied exactly. ``parallelism`` defaults to the cores available."""
        check_parallelism(parallelism)
        table, wanted, rf = self.table, list(self.columns), self.row_filter
        # a file missing because expiry removed the snapshot under the read is no corruption
        return guard_read(
            table.store,
            planned_on(self.snapshot),
            lambda: table._read_splits(SplitRead(self._plan(), wanted, rf, parallelism)),
        )

    def to_batches(
        self, *, batch_rows: int | None = None, parallelism: int | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The rows of :meth:`read`, streamed as record batches with bounded memory.

        A primary-key table: ``batch_rows`` rows read at once per file, and at most per batch
        (default 131072); ``parallelism`` sections merged at once, in order (default the cores
        available); about ``parallelism * 4 * batch_rows`` rows are held at any time, whatever
        the table's size (:mod:`lakeops.read.stream`). An append table: streamed file by file
        in batches of at most ``batch_rows`` rows; ``parallelism`` files read ahead at once,
        in order (each held whole, at most ``2 * parallelism`` of them); default one file at a
        time, streamed in batches."""
        return self._stream(batch_rows, parallelism)[1]

    def to_arrow_batch_reader(
        self, *, batch_rows: int | None = None, parallelism: int | None = None
    ) -> pa.RecordBatchReader:
        """:meth:`to_batches` as a ``pyarrow.RecordBatchReader`` (for engines that take
        Arrow streams: DuckDB, Polars, DataFusion, ``pyarrow.dataset.write_dataset`` …)."""
        schema, batches = self._stream(batch_rows, parallelism)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def to_pandas(self) -> Any:
        """:meth:`read` as a pandas DataFrame (``pip install 'lakeops[pandas]'``)."""
        handoff.require("pandas", "pandas")
        return handoff.to_pandas(self.read())

    def to_polars(self) -> Any:
        """:meth:`read` as a Polars DataFrame, sharing the Arrow buffers where the types allow
        (``pip install 'lakeops[polars]'``)."""
        handoff.require("polars", "polars")
        return handoff.to_polars(self.read())

    def to_duckdb(self, *, connection: Any = None, streaming: bool = False) -> Any:
        """A DuckDB relation over the rows, scanned in place by DuckDB (no copy), on
        ``connection`` (default: DuckDB's default connection).

        By default over :meth:`read`'s table (the relation can run many queries); with
        ``streaming=True`` over :meth:`to_arrow_batch_reader` (bounded memory, one query).
        (``pip install 'lakeops[duckdb]'``)"""
        handoff.require("duckdb", "duckdb")
        data = self.to_arrow_batch_reader() if streaming else self.read()
        return handoff.to_duckdb(data, connection)

    def _plan(self) -> Sequence[Any]:
        splits = self.table._plan(self.snapshot, self.row_filter, every_level=self.every_level)
        return self.table._read_optimized(splits) if self.mode == "read-optimized" else splits

    def _stream(
        self, batch_rows: int | None, parallelism: int | None
    ) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
        check_parallelism(parallelism)
        planned = planned_on(self.snapshot)
        splits = guard_read(self.table.store, planned, self._plan)
        schema, batches = self.table._stream_splits(
            SplitRead(splits, list(self.columns), self.row_filter, parallelism, batch_rows)
        )
        return schema, guard_batches(self.table.store, planned, batches)
