"""Sort compaction of unaware-bucket append tables: Paimon's ``sort_compact`` procedure
(``SortCompactAction`` in Flink, ``CompactProcedure`` with ``order_strategy`` in Spark), and
``clustering.columns`` honoured by full compactions.

**What it does.** Every live file of each selected partition is read (through its deletion
vector: deleted rows never come back), all rows of the partition are sorted together by the
sort columns, and written as new rolling files at ``target-file-size`` (level 0, source
``APPEND``, sequence numbers from 0 in sorted order, as Paimon's overwriting writer gives
them). The new files replace every file of those partitions in ONE ``OVERWRITE`` snapshot,
whose index changes drop the partitions' deletion-vector index files — what Paimon's sort
compaction commits: its sink is an ``overwrite()`` (dynamic partition overwrite) of the rows
it read, so ``FileStoreCommitImpl.overwritePartition`` replaces the files and index files of
the partitions written. Unlike a plain dynamic overwrite, the commit is refused
(:class:`~lakeops.errors.CommitConflictError`, nothing published, the new files deleted)
when another commit changed the files or vectors of those partitions since they were read
(:func:`overwrite_entries`): their rows would otherwise be lost or resurrected. Every selected
partition that has files is rewritten, sorted already or not (as Paimon's procedure does); a
partition whose rows were all deleted loses its files and vectors and gets none. Files roll
as every lakeops writer rolls them: once a write of up to 65,536 rows takes a file past the
target size.

**Tables.** Only append tables with ``bucket = -1`` (Paimon: "Sort Compact only supports
bucket=-1 yet"; a fixed bucket's rows are read in sequence order, which a sort would undo);
not primary-key tables (their files are sorted by the key), not row-tracking or
data-evolution tables (rows would lose their ids; Paimon: "Data Evolution table cannot be
sorted!"), not a table with ``clustering.incremental`` (as Spark's procedure refuses). Sort
columns must be columns of atomic types, not partition columns (Spark's procedure: sorting by
them "is meaningless").

**Orderings** (:func:`sort_indices`), all stable (rows with equal keys keep their read order):

* ``order``: lexicographic by the columns, as Paimon's ``OrderSorter`` compares them (its
  generated ``RecordComparator``): nulls first, strings and binaries by unsigned bytes,
  floats as ``Double.compare`` (-0.0 before 0.0, NaN last);
* ``zorder``: Paimon's ``ZIndexer``: each column as an order-preserving byte string — 8 bytes
  for numbers (sign bit flipped: ``ZOrderByteUtils.longToOrderedBytes``), dates, times,
  timestamps (milliseconds) and booleans (``0x81`` for true), the first
  ``zorder.var-length-contribution`` (default 8) bytes of CHAR, VARCHAR, BINARY, VARBINARY
  (zero-padded), zeros for NULL — interleaved bit by bit (``ZOrderByteUtils.interleaveBits``:
  the first bit of every column, then the second …; a shorter column drops out once its bytes
  end), rows ordered by the interleaved bytes (unsigned). Two departures, neither visible to
  readers (a file's row order is not part of the format): floats are IEEE-flipped correctly
  (Paimon's ``floatToOrderedBytes`` shifts by 31 instead of 63 and misorders negative values),
  and decimals are ordered by value (their unscaled 64-bit integer with the sign flipped up to
  precision 18, their double beyond) where Paimon takes the unscaled two's-complement bytes;
* ``hilbert``: each column's dense rank (NULL the lowest, values in ``order``'s order),
  stretched to a common power-of-two grid, and the rows ordered by their position on the
  Hilbert curve of that grid (Skilling's transform, "Programming the Hilbert curve", 2004).
  Paimon's ``HilbertIndexer`` takes raw 63-bit values instead; ranks give every column the
  same weight whatever its range. At least two columns, as Paimon requires.

**Cost.** One partition at a time is held in memory (its rows, decoded); its files are read,
keyed, reordered and written on up to ``parallelism`` threads (the keys in row chunks, the
reorder per column, the files after the first — whose row count sets how many rows each
file takes — at once). Everything is whole-array pyarrow and numpy work.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.compact.planner import CompactionPlan, CompactionProgress
from lakeops.errors import CommitConflictError, ConfigurationError, UnsupportedFeatureError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.format.types import DataType
from lakeops.kv.append_reader import AppendFileReader
from lakeops.kv.writer import AppendLayout, RollingFileWriter
from lakeops.options.registry import check_data_files
from lakeops.options.rows_files import (
    CLUSTERING_COLUMNS,
    CLUSTERING_INCREMENTAL,
    CLUSTERING_STRATEGY,
    ZORDER_VAR_LENGTH_CONTRIBUTION,
)
from lakeops.parallel import IO_THREADS, available_cores, check_parallelism, run_ordered
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.row_tracking import data_evolution, row_tracking
from lakeops.read.scan import partition_matches, snapshot_deletion_files
from lakeops.store.context import TableContext

__all__ = [
    "STRATEGIES",
    "SortPlan",
    "SortSpec",
    "SortStrategy",
    "hilbert_index",
    "interleave_bits",
    "overwrite_entries",
    "plan_sort",
    "resolve_sort",
    "sort_indices",
    "zorder_bytes",
]

SortStrategy = Literal["order", "zorder", "hilbert"]
#: the orderings of a sort compaction (Paimon's ``OrderType`` less ``none``)
STRATEGIES: tuple[str, ...] = get_args(SortStrategy)

#: the types a sort column may have (Paimon's sorters refuse the nested ones)
_SORTABLE = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DECIMAL",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "CHAR",
        "VARCHAR",
        "BINARY",
        "VARBINARY",
    }
)
_VAR_LENGTH = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})
#: Paimon's ``ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE``
_PRIMITIVE_BYTES = 8
#: the sign bit of a 64-bit key
_SIGN = np.uint64(1 << 63)
#: rows keyed per unit of work, and rows written per slice while the first file fills
_KEY_CHUNK = 1 << 20
_WRITE_SLICE = 65_536
#: the finest Hilbert grid (bits per coordinate), and rows transformed per block
_HILBERT_BITS = 32
_HILBERT_BLOCK = 1 << 15
#: nanoseconds per unit of an Arrow timestamp (Paimon keys timestamps by millisecond)
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


@dataclass(frozen=True)
class SortSpec:
    """What a sort compaction orders rows by."""

    columns: tuple[str, ...]
    strategy: SortStrategy
    #: bytes of a CHAR/VARCHAR/BINARY/VARBINARY value in a z-value
    #: (``zorder.var-length-contribution``)
    var_length: int = _PRIMITIVE_BYTES
    #: where the columns come from, for messages: ``order_by`` or ``clustering.columns``
    source: str = "order_by"


# --------------------------------------------------------------------- what to sort by
def resolve_sort(
    ctx: TableContext,
    *,
    order_by: Sequence[str] | None,
    strategy: str,
    full: bool,
) -> SortSpec | None:
    """What a compaction sorts by (None: it does not sort): ``order_by`` with ``strategy``
    when given (refused, before anything is written, on tables and columns Paimon's sort
    compaction refuses); else, for a ``full`` compaction of an unaware-bucket append table,
    its ``clustering.columns`` with ``clustering.strategy`` (``auto``: order for 1 column,
    zorder for up to 4, hilbert for more, as Paimon's ``CoreOptions.clusteringStrategy``)."""
    if strategy not in STRATEGIES:
        raise ConfigurationError(
            f"strategy {strategy!r} is not a sort strategy; use one of {list(STRATEGIES)}"
        )
    if order_by is None:
        if strategy != "order":
            raise ConfigurationError(
                f"strategy={strategy!r} orders the columns of order_by, which is not given "
                "(a table's clustering is set by its 'clustering.strategy' option)"
            )
        return _clustering(ctx) if full else None
    if isinstance(order_by, str):
        raise ConfigurationError(
            f"order_by takes a sequence of column names, e.g. [{order_by!r}], not a string"
        )
    spec = SortSpec(tuple(order_by), cast(SortStrategy, strategy), _var_length(ctx))
    _check_table(ctx, "sort compaction (order_by)")
    if CLUSTERING_INCREMENTAL.get(ctx.schema.options):
        raise ConfigurationError(
            "the table has clustering.incremental = true, whose clustering Paimon keeps to "
            "itself: Paimon refuses a sort compaction of it, and so does lakeops"
        )
    _check_columns(ctx, spec)
    return spec


def _var_length(ctx: TableContext) -> int:
    return int(ZORDER_VAR_LENGTH_CONTRIBUTION.get(ctx.schema.options))


def _clustering(ctx: TableContext) -> SortSpec | None:
    """The sort of a full compaction of a table with ``clustering.columns`` (None: none, or
    a table Paimon's clustering does not apply to: it then compacts as usual)."""
    options = ctx.schema.options
    columns = CLUSTERING_COLUMNS.get(options, blank_is_unset=True)
    chosen = CLUSTERING_STRATEGY.get(options)
    if not columns or chosen == "none":
        return None
    if ctx.schema.primary_keys or ctx.options.bucket != -1 or row_tracking(ctx.schema):
        return None
    if chosen == "auto":
        chosen = "order" if len(columns) == 1 else "zorder" if len(columns) < 5 else "hilbert"
    spec = SortSpec(
        tuple(columns), cast(SortStrategy, chosen), _var_length(ctx), "clustering.columns"
    )
    _check_columns(ctx, spec)
    return spec


def _check_table(ctx: TableContext, what: str) -> None:
    """Refuse a sort compaction of a table Paimon's does not sort (see the module docstring);
    nothing has been written."""
    schema = ctx.schema
    why = None
    if schema.primary_keys:
        why = (
            "it has a primary key: its files are sorted by the key and merged by it, and "
            "lakeops sorts only append tables"
        )
    elif ctx.options.bucket != -1:
        why = (
            f"it has bucket = {ctx.options.bucket}: Paimon's sort compaction supports only "
            "unaware-bucket append tables (bucket = -1), since a fixed bucket's rows are read "
            "in the order they were written"
        )
    elif data_evolution(schema) or row_tracking(schema):
        why = (
            "it has row tracking: sorted rows would lose their row ids (Paimon: 'Data "
            "Evolution table cannot be sorted!')"
        )
    if why is not None:
        raise UnsupportedFeatureError(
            f"{what} of table {ctx.root} is refused: {why}; nothing was written"
        )


def _check_columns(ctx: TableContext, spec: SortSpec) -> None:
    """The sort columns must exist, be distinct, atomic and (for ``order_by``) not partition
    columns; hilbert needs two."""
    schema = ctx.schema
    where = spec.source
    if not spec.columns:
        raise ConfigurationError(f"{where} names no column to sort by")
    if len(set(spec.columns)) != len(spec.columns):
        raise ConfigurationError(f"{where} names a column twice: {list(spec.columns)}")
    unknown = [c for c in spec.columns if c not in schema.field_names]
    if unknown:
        raise ConfigurationError(
            f"{where} names {unknown}, which are not columns of the table (columns: "
            f"{list(schema.field_names)})"
        )
    partition = [c for c in spec.columns if c in schema.partition_keys]
    if partition and spec.source == "order_by":
        raise ConfigurationError(
            f"order_by names partition columns {partition}: every row of a partition has the "
            "same value there, so sorting by them is meaningless (Paimon refuses it too)"
        )
    for name, t in zip(spec.columns, schema.types_of(spec.columns), strict=True):
        if t.root not in _SORTABLE:
            raise UnsupportedFeatureError(
                f"{where}: column {name!r} of type {t} cannot be sorted by (only atomic "
                "types: numbers, decimals, strings, binaries, booleans, dates, times, "
                "timestamps); nothing was written"
            )
    if spec.strategy == "hilbert" and len(spec.columns) < 2:
        raise ConfigurationError(
            f"hilbert sort needs at least two columns ({where}: {list(spec.columns)}), as "
            "Paimon's HilbertIndexer requires; use 'order' for one"
        )


# --------------------------------------------------------------------------- the plan
@dataclass
class SortPlan(CompactionPlan):
    """A sort compaction's new files (``messages``: one per partition holding rows, its
    files as ``new_files`` of bucket 0), what they replace, and what was read."""

    #: the snapshot read (None: the table was empty)
    snapshot_id: int | None = None
    #: the partitions the commit replaces (serialized), every file and index file in them
    replaced: frozenset[bytes] = frozenset()
    #: the data files read, by (partition, bucket, file name)
    read_files: frozenset[tuple[bytes, int, str]] = frozenset()
    #: the index files of the replaced partitions, by (partition, bucket, file name)
    read_index: frozenset[tuple[bytes, int, str]] = frozenset()
    #: the rows written
    rows: int = 0


def plan_sort(
    ctx: TableContext,
    spec: SortSpec,
    *,
    partitions: Sequence[Mapping[str, Any]] | None,
    keep: Callable[[bytes], bool] | None,
    parallelism: int | None,
    progress: Callable[[CompactionProgress], None] | None = None,
) -> SortPlan:
    """Sort and rewrite every partition of the latest snapshot that ``partitions`` (specs) and
    ``keep`` (a selector of serialized partitions) both take; nothing is committed (see
    :func:`overwrite_entries`). On any failure every file written is deleted.
    ``progress`` counts partitions as its buckets."""
    check_parallelism(parallelism)
    _check_table(ctx, "sort compaction")
    snapshot = ctx.store.latest_snapshot()
    live = ctx.store.live_entries(snapshot, parallelism=IO_THREADS) if snapshot else []
    specs = partition_matches(ctx.schema, partitions, ctx.options) if partitions else None
    by_partition: dict[bytes, list[ManifestEntry]] = {}
    for e in live:
        if (specs is None or specs(e.partition)) and (keep is None or keep(e.partition)):
            by_partition.setdefault(e.partition, []).append(e)
    check_data_files((e.file.file_name for es in by_partition.values() for e in es), "compact")
    index = [e for e in ctx.store.index_entries(snapshot) if e.partition in by_partition]
    plan = SortPlan(
        snapshot_id=None if snapshot is None else snapshot.id,
        replaced=frozenset(by_partition),
        read_files=frozenset(
            (e.partition, e.bucket, e.file.file_name) for es in by_partition.values() for e in es
        ),
        read_index=frozenset((e.partition, e.bucket, e.file.file_name) for e in index),
    )
    if not by_partition:
        return plan
    ctx.locations.check_writable()
    sorter = _PartitionSorter(ctx, spec, snapshot_deletion_files(ctx, snapshot), parallelism)
    report = _Progress(progress, by_partition)
    try:
        for partition in sorted(by_partition):
            message, rows = sorter.run(partition, by_partition[partition], plan.written)
            plan.rows += rows
            if message is not None:
                plan.messages.append(message)
            report.done(by_partition[partition])
    except BaseException:
        plan.discard(ctx)
        raise
    return plan


class _Progress:
    """:class:`CompactionProgress` reports of a sort compaction (its buckets: partitions)."""

    def __init__(
        self,
        report: Callable[[CompactionProgress], None] | None,
        units: Mapping[bytes, Sequence[ManifestEntry]],
    ) -> None:
        self.report = report
        self.total = (
            len(units),
            sum(len(es) for es in units.values()),
            sum(e.file.file_size for es in units.values() for e in es),
        )
        self.seen = [0, 0, 0]
        self._emit()

    def done(self, entries: Sequence[ManifestEntry]) -> None:
        self.seen[0] += 1
        self.seen[1] += len(entries)
        self.seen[2] += sum(e.file.file_size for e in entries)
        self._emit()

    def _emit(self) -> None:
        if self.report is not None:
            n, files, size = self.total
            self.report(
                CompactionProgress(self.seen[0], n, self.seen[1], files, self.seen[2], size)
            )


class _PartitionSorter:
    """Reads, sorts and rewrites one partition at a time (see the module docstring)."""

    def __init__(
        self,
        ctx: TableContext,
        spec: SortSpec,
        vectors: Mapping[tuple[bytes, int, str], DeletionFile],
        parallelism: int | None,
    ) -> None:
        self.ctx = ctx
        self.spec = spec
        self.vectors = vectors
        self.parallelism = parallelism
        self.reader = AppendFileReader(ctx.file_io, ctx.schema, ctx.store.schema, ctx.root)
        self.dvs = DeletionVectorReader(ctx.file_io)

    def run(
        self, partition: bytes, entries: Sequence[ManifestEntry], written: list[str]
    ) -> tuple[CommitMessage | None, int]:
        """The partition's message (None: no row is left) and its row count; the paths of
        the files written are added to ``written`` as they are opened."""
        rows = self._read(partition, entries)
        if rows.num_rows == 0:
            return None, 0
        types = self.ctx.schema.types_of(self.spec.columns)
        order = sort_indices(rows, self.spec, types, self.parallelism)
        ordered = pa.Table.from_arrays(
            run_ordered(lambda c: c.take(order), rows.columns, self.parallelism),
            schema=rows.schema,
        )
        del rows
        files = self._write(partition, ordered, written)
        message = CommitMessage(partition, 0, self.ctx.options.bucket, tuple(files))
        return message, ordered.num_rows

    def _read(self, partition: bytes, entries: Sequence[ManifestEntry]) -> pa.Table:
        """Every row of the partition's files, in manifest order, without deleted rows."""
        columns = self.ctx.schema.field_names

        def read(e: ManifestEntry) -> pa.Table:
            directory = self.ctx.bucket_path(partition, e.bucket)
            rows = self.reader.read(directory, e.file, columns)
            df = self.vectors.get((partition, e.bucket, e.file.file_name))
            return self.dvs.apply(rows, df, e.file)

        tables = run_ordered(read, entries, self.parallelism)
        return pa.concat_tables(tables) if tables else self.ctx.schema.arrow_schema().empty_table()

    def _writer(self, partition: bytes, first_sequence: int) -> RollingFileWriter:
        ctx = self.ctx
        return RollingFileWriter(
            ctx.file_io,
            ctx.bucket_path(partition, 0),
            AppendLayout(ctx.schema, first_sequence),
            ctx.append.target_file_size,
            external=ctx.locations.external_paths_of(partition, 0),
        )

    def _write(self, partition: bytes, rows: pa.Table, written: list[str]) -> list[DataFileMeta]:
        """``rows`` (sorted) as rolling files of bucket 0, numbered from sequence 0: the first
        file written alone until it rolls (its row count is how many rows a file takes), the
        rest in slices of that many rows written at once, in order."""
        first = self._writer(partition, 0)
        n = rows.num_rows
        at = 0
        try:
            while at < n and not first.files:
                first.write(rows.slice(at, _WRITE_SLICE))
                at = min(at + _WRITE_SLICE, n)
            files = first.close()
        except BaseException:
            first.abort()  # (closes its open file and deletes what it wrote)
            raise
        written.extend(first.written)
        if at >= n:
            return files
        at = sum(f.row_count for f in files)
        step = max(files[0].row_count, 1)
        starts = list(range(at, n, step))
        writers = [self._writer(partition, start) for start in starts]

        def write(i: int) -> list[DataFileMeta]:
            writers[i].write(rows.slice(starts[i], step))
            return writers[i].close()

        try:
            rest = run_ordered(write, range(len(starts)), self.parallelism)
        except BaseException:
            for w in writers:
                w.abort()
            raise
        for w in writers:
            written.extend(w.written)
        return files + [f for part in rest for f in part]


def overwrite_entries(
    ctx: TableContext, plan: SortPlan, latest: Snapshot | None
) -> tuple[list[ManifestEntry], list[IndexManifestEntry]]:
    """The ``OVERWRITE`` of ``plan`` on ``latest``: every live file and index file of the
    replaced partitions deleted, the new files added. A :class:`CommitConflictError` when the
    files or index files of those partitions are not exactly those read (another commit
    appended, deleted, compacted or overwrote rows there meanwhile)."""
    live = [e for e in ctx.store.live_entries(latest) if e.partition in plan.replaced]
    index = [e for e in ctx.store.index_entries(latest) if e.partition in plan.replaced]
    files = {(e.partition, e.bucket, e.file.file_name) for e in live}
    indexes = {(e.partition, e.bucket, e.file.file_name) for e in index}
    if files != plan.read_files or indexes != plan.read_index:
        raise CommitConflictError(
            f"{ctx.root}: another commit changed the files or deletion vectors of the "
            f"partitions this sort compaction rewrote since snapshot {plan.snapshot_id}, "
            "which it read; nothing was committed — run it again"
        )
    entries = [
        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in live
    ]
    entries += [
        ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
        for m in plan.messages
        for f in m.new_files
    ]
    dropped = [IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file) for e in index]
    return entries, dropped


# ------------------------------------------------------------------------ the orderings
def sort_indices(
    rows: pa.Table,
    spec: SortSpec,
    types: Sequence[DataType],
    parallelism: int | None = None,
) -> pa.Array:
    """The stable permutation that orders ``rows`` by ``spec`` (``types``: the Paimon types
    of ``spec.columns``); see the module docstring."""
    pairs = list(zip(spec.columns, types, strict=True))
    if spec.strategy == "order":
        exact = _exact_words(rows, pairs)
        if exact is not None:  # every column has an exact 64-bit key
            return pa.array(_sort_words(exact))
        keys = {f"k{i}": _order_key(rows.column(c), t) for i, (c, t) in enumerate(pairs)}
        return pc.sort_indices(
            pa.table(keys), sort_keys=[(k, "ascending", "at_start") for k in keys]
        )
    if spec.strategy == "zorder":
        keyed = rows.select(list(spec.columns))
        planes = _chunked(
            lambda lo, size: zorder_bytes(
                keyed.slice(lo, size), spec.columns, types, spec.var_length
            ),
            rows.num_rows,
            parallelism,
        )
    else:
        planes = _hilbert_planes(rows, spec, types, parallelism)
    return pa.array(_sort_planes(planes))


def _chunked(work: Callable[[int, int], np.ndarray], n: int, parallelism: int | None) -> np.ndarray:
    """``work(lo, size)`` (byte planes ``(k, m)`` of the ``m`` rows from ``lo``) over ``n``
    rows in chunks, on up to ``parallelism`` threads, the planes joined in row order."""
    workers = check_parallelism(parallelism) or available_cores()
    size = max(min(_KEY_CHUNK, -(-n // workers)), _WRITE_SLICE)
    parts = run_ordered(lambda lo: work(lo, size), range(0, max(n, 1), size), parallelism)
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _sort_planes(planes: np.ndarray) -> np.ndarray:
    """The stable order of rows by their keys, given as byte planes ``(k, n)`` (plane 0 the
    most significant): planes equal in every row decide nothing and are dropped, the rest
    packed big-endian into 64-bit words (8 planes a word) and sorted by :func:`_sort_words`."""
    n = planes.shape[1]
    varying = [p for p in planes if p.min() != p.max()] if n else []
    if not varying:
        return np.arange(n, dtype=np.int64)
    words = []
    for w in range(0, len(varying), 8):
        chunk = varying[w : w + 8]
        word = np.zeros(n, dtype=np.uint64)
        for j, plane in enumerate(chunk):  # big-endian, in the low bytes of the word
            word |= plane.astype(np.uint64) << np.uint64(8 * (len(chunk) - 1 - j))
        words.append(word)
    return _sort_words(words)


def _sort_words(words: Sequence[np.ndarray]) -> np.ndarray:
    """The stable order of rows by 64-bit words (the first the most significant). Each word
    less its minimum takes only the bits its range needs: when they and the row's position
    fit in 64 bits together, one sort of those packed keys is the stable order; else the
    words are sorted least significant first, each pass stable by sorting the word's dense
    ranks with the positions below them."""
    n = len(words[0])
    position_bits = max((n - 1).bit_length(), 1)
    mask = np.uint64((1 << position_bits) - 1)
    positions = np.arange(n, dtype=np.uint64)
    shifted = [w - w.min() for w in words]
    widths = [int(w.max()).bit_length() for w in shifted]
    if sum(widths) + position_bits <= 64:
        packed = positions.copy()
        at = position_bits
        for word, width in zip(reversed(shifted), reversed(widths), strict=True):
            if width:
                packed |= word << np.uint64(at)
                at += width
        packed.sort()
        return (packed & mask).astype(np.int64)
    order: np.ndarray | None = None
    for word in reversed(words):
        current = word if order is None else word[order]
        packed = (_dense_rank(current) << np.uint64(position_bits)) | positions
        packed.sort()
        step = (packed & mask).astype(np.int64)
        order = step if order is None else order[step]
    assert order is not None
    return order


def _dense_rank(key: np.ndarray) -> np.ndarray:
    """Dense ranks from 0 of 64-bit keys (equal keys share one): one sort of the keys, with
    each row's position below them when both fit in 64 bits, else an argsort."""
    n = len(key)
    position_bits = max((n - 1).bit_length(), 1)
    shifted = key - key.min()
    if int(shifted.max()).bit_length() + position_bits <= 64:
        packed = (shifted << np.uint64(position_bits)) | np.arange(n, dtype=np.uint64)
        packed.sort()
        values = packed >> np.uint64(position_bits)
        positions = (packed & np.uint64((1 << position_bits) - 1)).astype(np.intp)
    else:
        positions = np.argsort(key)
        values = key[positions]
    dense = np.zeros(n, dtype=np.uint64)
    np.cumsum(values[1:] != values[:-1], out=dense[1:])
    ranks = np.empty(n, dtype=np.uint64)
    ranks[positions] = dense
    return ranks


# ---------------------------------------------------------------------- column keys
def _valid(array: pa.Array) -> np.ndarray | None:
    """Where ``array`` is not null (None: nowhere null)."""
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _flip_int(values: np.ndarray) -> np.ndarray:
    """Signed 64-bit integers as order-preserving unsigned ones (the sign bit flipped)."""
    return values.astype(np.int64).view(np.uint64) ^ _SIGN


def _flip_float(values: np.ndarray) -> np.ndarray:
    """Doubles as order-preserving unsigned 64-bit keys, in ``Double.compare``'s order
    (-0.0 before 0.0, every NaN as Java's canonical NaN, after +inf)."""
    bits = values.astype(np.float64).view(np.int64)
    bits = np.where(np.isnan(values), np.int64(0x7FF8000000000000), bits)
    return (bits ^ ((bits >> np.int64(63)) | np.int64(-(1 << 63)))).view(np.uint64)


def _numbers(array: pa.Array, dtype: type[np.generic]) -> np.ndarray:
    """The values of a numeric ``array`` as ``dtype`` (nulls as 0)."""
    zero = False if pa.types.is_boolean(array.type) else 0
    filled = array.fill_null(zero) if array.null_count else array
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=dtype)


def _decimal_key(array: pa.Array, t: DataType) -> np.ndarray:
    """Decimals by value: up to precision 18 the unscaled 64-bit integer (the low word of the
    128-bit value) sign-flipped, beyond it the double, IEEE-flipped."""
    if (t.precision or 10) <= 18:
        raw = np.frombuffer(array.buffers()[1], dtype=np.int64)
        low = raw[2 * array.offset : 2 * (array.offset + len(array)) : 2]
        return _flip_int(low)
    doubles = pc.cast(array, pa.float64(), safe=False)
    return _flip_float(_numbers(doubles, np.float64))


def _fixed_key(array: pa.Array, t: DataType, *, exact: bool = False) -> np.ndarray | None:
    """The 64-bit order-preserving key of a fixed-width column (zero where null), as
    Paimon's ``ZIndexer`` bytes read big-endian; ``exact``: a key that orders exactly as
    ``order`` compares (timestamps by their full value, not their millisecond), None where
    there is none (a DECIMAL beyond precision 18)."""
    r = t.root
    if r == "BOOLEAN":
        key = np.where(_numbers(array, np.bool_), np.uint64(0x81 << 56), np.uint64(0))
    elif r in ("FLOAT", "DOUBLE"):
        key = _flip_float(_numbers(array, np.float64))
    elif r == "DECIMAL":
        if exact and (t.precision or 10) > 18:
            return None
        key = _decimal_key(array, t)
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = _UNIT_NANOS[array.type.unit]
        raw = _numbers(array.view(pa.int64()), np.int64)
        # Paimon keys a timestamp by its epoch millisecond (floor)
        millis = raw * (unit // 1_000_000) if unit >= 1_000_000 else raw // (1_000_000 // unit)
        key = _flip_int(raw if exact else millis)
    elif r in ("DATE", "TIME"):
        key = _flip_int(_numbers(array.view(pa.int32()), np.int64))
    else:
        key = _flip_int(_numbers(array, np.int64))
    valid = _valid(array)
    return key if valid is None else np.where(valid, key, np.uint64(0))


def _word_planes(key: np.ndarray, width: int = _PRIMITIVE_BYTES) -> np.ndarray:
    """The last ``width`` big-endian bytes of 64-bit keys, as planes ``(width, n)``."""
    return np.stack(
        [
            ((key >> np.uint64(8 * (width - 1 - j))) & np.uint64(0xFF)).astype(np.uint8)
            for j in range(width)
        ]
    )


def _prefix_planes(array: pa.Array, width: int) -> np.ndarray:
    """The first ``width`` bytes of each string or binary value, zero-padded (zeros for
    NULL), as planes ``(width, n)``."""
    binary = pc.binary_slice(array.cast(pa.large_binary()), 0, width)
    if binary.null_count:
        binary = binary.fill_null(b"")
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)
    offsets = offsets[binary.offset : binary.offset + len(binary) + 1]
    data_buffer = binary.buffers()[2]
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None and data_buffer.size
        else np.zeros(1, np.uint8)
    )
    starts, lengths = offsets[:-1], np.diff(offsets)
    last = len(data) - 1
    return np.stack(
        [
            np.where(lengths > j, data[np.minimum(starts + j, last)], np.uint8(0))
            for j in range(width)
        ]
    ).astype(np.uint8)


def zorder_bytes(
    rows: pa.Table, columns: Sequence[str], types: Sequence[DataType], var_length: int
) -> np.ndarray:
    """Paimon's z-values (``ZIndexer.index``) of every row of ``rows`` at once: byte planes
    ``(k, n)`` (row ``i``'s z-value is ``planes[:, i]``), see the module docstring."""
    parts = []
    for name, t in zip(columns, types, strict=True):
        array = rows.column(name).combine_chunks()
        key = None if t.root in _VAR_LENGTH else _fixed_key(array, t)
        parts.append(_prefix_planes(array, var_length) if key is None else _word_planes(key))
    return interleave_bits(parts)


def _exact_words(rows: pa.Table, pairs: Sequence[tuple[str, DataType]]) -> list[np.ndarray] | None:
    """``order``'s keys as 64-bit words, most significant first: per column one that is 0
    for NULL and 1 else (NULL first; only for a column with nulls), then its exact key;
    None when a column has no such key (strings, binaries, wide decimals: pyarrow sorts
    those)."""
    words = []
    for name, t in pairs:
        if t.root in _VAR_LENGTH:
            return None
        array = rows.column(name).combine_chunks()
        key = _fixed_key(array, t, exact=True)
        if key is None:
            return None
        valid = _valid(array)
        if valid is not None:
            words.append(valid.astype(np.uint64))
        words.append(key)
    return words


@functools.cache
def _spread(d: int) -> dict[tuple[int, int], np.ndarray]:
    """For interleaving ``d`` bytes bit by bit (bit ``j`` of byte ``p``, most significant
    first, goes to bit ``j * d + p`` of a ``d``-byte group): per (``p``, output byte ``t``)
    the 256-entry table of the bits byte ``p`` puts into byte ``t`` of the group."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1)
    tables: dict[tuple[int, int], np.ndarray] = {}
    for p in range(d):
        for j in range(8):
            at = j * d + p
            table = tables.setdefault((p, at // 8), np.zeros(256, np.uint8))
            table |= (bits[:, j] << (7 - at % 8)).astype(np.uint8)
    return tables


def interleave_bits(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Paimon's ``ZOrderByteUtils.interleaveBits`` over every row at once: ``columns`` are
    byte planes ``(w_i, n)`` of each column's bytes; the result, planes ``(sum w_i, n)``,
    takes the first bit of every column, then the second …, a column dropping out once its
    bytes end — byte ``k`` of the columns longer than ``k``, interleaved, one byte group
    after another (by 256-entry tables, never per row)."""
    n = columns[0].shape[1]
    out = np.empty((sum(c.shape[0] for c in columns), n), dtype=np.uint8)
    at = 0
    for k in range(max(c.shape[0] for c in columns)):
        present = [c[k] for c in columns if c.shape[0] > k]
        d = len(present)
        tables = _spread(d)
        for t in range(d):
            plane = out[at + t]
            plane[:] = 0
            for p in range(d):
                table = tables.get((p, t))
                if table is not None:
                    plane |= table[present[p]]
        at += d
    return out


# ------------------------------------------------------------------------ hilbert
def _order_key(column: pa.ChunkedArray | pa.Array, t: DataType) -> pa.Array:
    """A column as ``order`` compares it: floats as their ``Double.compare`` keys (nulls
    kept), everything else as it is."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if t.root not in ("FLOAT", "DOUBLE"):
        return array
    key = _flip_float(_numbers(array, np.float64))
    valid = _valid(array)
    return pa.array(key, mask=None if valid is None else ~valid)


def _ranks(column: pa.ChunkedArray, t: DataType) -> tuple[np.ndarray, int]:
    """Dense ranks of a column in ``order``'s order from 0, NULL the lowest, and how many
    distinct values (NULL one of them) there are."""
    array = column.combine_chunks()
    key = None if t.root in _VAR_LENGTH else _fixed_key(array, t, exact=True)
    if key is not None:
        valid = _valid(array)
        if valid is not None:  # NULL 0, the values from 1
            low = key[valid].min() if valid.any() else np.uint64(0)
            key = np.where(valid, key - low + np.uint64(1), np.uint64(0))
        ranks = _dense_rank(key)
    else:  # strings, binaries, wide decimals: pyarrow ranks them
        keyed = _order_key(array, t)
        ranks = np.asarray(
            pc.rank(keyed, sort_keys="ascending", tiebreaker="dense").to_numpy(), dtype=np.uint64
        )  # 1.. for values; a null's rank is meaningless here
        valid = _valid(keyed)
        # from 0 without nulls; with them NULL is 0, below the values, which count from 1
        ranks = ranks - np.uint64(1) if valid is None else np.where(valid, ranks, np.uint64(0))
    distinct = int(ranks.max()) + 1 if len(ranks) else 1
    return ranks, distinct


def _hilbert_planes(
    rows: pa.Table, spec: SortSpec, types: Sequence[DataType], parallelism: int | None
) -> np.ndarray:
    """The Hilbert positions of every row, as byte planes (see the module docstring): each
    column's dense rank stretched to ``[0, 2**bits - 1]``, ``bits`` what the column with
    the most distinct values needs (at most 32)."""
    ranked = run_ordered(
        lambda i: _ranks(rows.column(spec.columns[i]), types[i]),
        range(len(spec.columns)),
        parallelism,
    )
    widest = max(distinct for _, distinct in ranked)
    bits = min(max((widest - 1).bit_length(), 1), _HILBERT_BITS)
    top = float((1 << bits) - 1)
    coords = [
        np.minimum(np.floor(r.astype(np.float64) * (top / max(distinct - 1, 1))), top).astype(
            np.uint32
        )
        for r, distinct in ranked
    ]
    return _chunked(
        lambda lo, size: hilbert_index([c[lo : lo + size] for c in coords], bits),
        rows.num_rows,
        parallelism,
    )


def hilbert_index(coords: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The positions on the ``len(coords)``-dimensional Hilbert curve of order ``bits`` (at
    most 32) of points with those coordinates (each below ``2**bits``), for every point at
    once, as byte planes (``ceil(bits / 8)`` bytes per coordinate): Skilling's
    ``AxesToTranspose`` ("Programming the Hilbert curve", 2004), then the transposed
    coordinates interleaved bit by bit, most significant first (each shifted left to whole
    bytes, which keeps the order). Blocks of rows small enough to stay in cache."""
    n = len(coords[0])
    width = -(-bits // 8)
    out = np.empty((len(coords) * width, n), dtype=np.uint8)
    for lo in range(0, n, _HILBERT_BLOCK):
        x = [np.array(c[lo : lo + _HILBERT_BLOCK], dtype=np.uint32) for c in coords]
        _axes_to_transpose(x, bits)
        shift = np.uint32(8 * width - bits)
        out[:, lo : lo + len(x[0])] = interleave_bits(
            [_word_planes((c << shift).astype(np.uint64), width) for c in x]
        )
    return out


def _axes_to_transpose(x: list[np.ndarray], bits: int) -> None:
    """Skilling's ``AxesToTranspose`` on uint32 coordinate arrays, in place, by whole-array
    bit operations: the inverse undo excess work, then the Gray encoding."""
    d = len(x)
    unset = np.empty_like(x[0])  # all ones where the level's bit of x[i] is 0
    swap = np.empty_like(x[0])
    for level in range(bits - 1, 0, -1):
        p = np.uint32((1 << level) - 1)
        for i in range(d):
            np.right_shift(x[i], level, out=unset)
            np.bitwise_and(unset, 1, out=unset)
            np.subtract(unset, 1, out=unset)
            # bit set: invert the low bits of x[0]; else exchange them between x[0] and x[i]
            np.bitwise_xor(x[0], x[i], out=swap)
            np.bitwise_and(swap, p, out=swap)
            np.bitwise_and(swap, unset, out=swap)
            np.bitwise_and(unset, p, out=unset)
            np.bitwise_xor(unset, p, out=unset)  # p where the bit is set, else 0
            np.bitwise_xor(x[0], unset, out=x[0])
            np.bitwise_xor(x[0], swap, out=x[0])
            if i:
                np.bitwise_xor(x[i], swap, out=x[i])
    for i in range(1, d):
        np.bitwise_xor(x[i], x[i - 1], out=x[i])
    fix = np.zeros_like(x[0])
    for level in range(bits - 1, 0, -1):
        np.right_shift(x[d - 1], level, out=swap)
        np.bitwise_and(swap, 1, out=swap)
        np.negative(swap, out=swap)  # all ones where the bit is set
        np.bitwise_and(swap, np.uint32((1 << level) - 1), out=swap)
        np.bitwise_xor(fix, swap, out=fix)
    for i in range(d):
        np.bitwise_xor(x[i], fix, out=x[i])
