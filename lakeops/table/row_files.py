"""The data files of an append table that a row-level change (:mod:`lakeops.table.row_level`)
touches, changed file by file, and the one ``OVERWRITE`` commit that publishes the change.

A change is a function of one file (:data:`Decide`): given a :class:`FileRows` — the file's
columns, each read on first use and kept, and which rows its deletion vector already deletes —
it says which live rows the change removes and which rows it appends for them (an update's
new rows), or None when it touches none. It reads only what it needs to decide (a condition's
columns, a merge's keys); a file it touches is then read whole, without reading those columns
again. :func:`prepare_change` runs it over the planned files on the cores, one unit of work per
file, and streams:

* **copy-on-write** (no ``deletion-vectors.enabled``): an unaware-bucket table's touched file is
  decided and its surviving rows written by a writer of its own in the same unit, so at most
  one file per worker is held at once (never every touched file); the rows of a fixed bucket
  go through one writer, fed in plan order from a bounded read-ahead (its sequence numbers
  keep counting), as Paimon's one writer of a bucket does;
* **deletion vectors**: the removed rows are marked in the files' vectors; no file is
  rewritten, and a file's rows are dropped as soon as it is decided.

The appended rows (every file's, in plan order, then the ``inserted`` rows of a merge, known
once every file is decided) are written as new files after the touched ones. One
``OVERWRITE`` snapshot then replaces the rewritten files (or their vectors) and adds the new
files; a :class:`~lakeops.errors.CommitConflictError`, nothing committed, if another commit
replaced those files or gave them vectors meanwhile. Any failure before the commit aborts
every writer made (their files are deleted) and deletes the index files written: nothing is
left behind. The change is prepared on one snapshot (:func:`prepare_change`) and committed
once (:meth:`Prepared.commit`); a file found missing while it is prepared because expiry
removed that snapshot is a :class:`~lakeops.errors.SnapshotExpiredError`, after which the
change can be prepared again on the latest snapshot (:func:`lakeops.table.row_level.read_latest`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from lakeops.commit.committer import Committer, PlannedChange
from lakeops.compact.vectors import BucketVectors
from lakeops.errors import CommitConflictError, CommitStateUnknownError, CorruptTableError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX, DeletionFile, deletion_files
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.kv.append_reader import AppendFileReader
from lakeops.parallel import imap_ordered, run_ordered
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.guard import guard_read, planned_on
from lakeops.read.predicate import RowFilter
from lakeops.store.context import TableContext

__all__ = [
    "AppendFiles",
    "Changed",
    "Decide",
    "FileChange",
    "FileJob",
    "FileRows",
    "Prepared",
    "RewriteTarget",
    "prepare_change",
]


class RewriteTarget(Protocol):
    """What a change of an append table's files needs of the table."""

    context: TableContext

    def new_write(
        self,
        *,
        overwrite: bool | Sequence[Mapping[str, Any]] = False,
        parallelism: int | None = None,
    ) -> Any: ...
    def _committer(self) -> Committer: ...
    def _plan(
        self, snapshot: Snapshot | None, rf: RowFilter | None, *, every_level: bool = False
    ) -> Sequence[Any]: ...


@dataclass(frozen=True)
class FileJob:
    """One data file a change may touch: its manifest entry, the directory of its bucket, its
    deletion file (None: no row deleted), and ``offset``, the physical rows of the planned
    files before it (so ``offset + position`` numbers every row of the plan uniquely)."""

    entry: ManifestEntry
    directory: str
    deletion: DeletionFile | None
    offset: int

    @property
    def key(self) -> tuple[bytes, int, str]:
        """The file's (partition, bucket, file name): unique among a snapshot's files."""
        return (self.entry.partition, self.entry.bucket, self.entry.file.file_name)

    @property
    def rows(self) -> int:
        """The file's physical rows (its manifest's ``row_count``)."""
        return int(self.entry.file.row_count)


@dataclass(frozen=True)
class FileChange:
    """What a change does to one file: ``removed`` (a bool per physical row; only live rows
    are set) and ``appended``, the rows it appends for them (None: none)."""

    removed: np.ndarray
    appended: pa.Table | None = None


class FileRows:
    """One planned file's rows as a change decides them: its columns, each read on first use
    and kept (never read twice), and which rows its deletion vector deletes. Used by one
    thread."""

    def __init__(self, files: AppendFiles, job: FileJob) -> None:
        self.files = files
        self.job = job
        self._columns: dict[str, pa.ChunkedArray] = {}
        self._dead: np.ndarray | None = None

    @property
    def dead(self) -> np.ndarray:
        """Which physical rows its deletion vector deletes (a bool each)."""
        if self._dead is None:
            self._dead = self.files.dead(self.job)
        return self._dead

    def table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of the file, in physical order, as ``columns`` (default: all) of the
        current schema; the columns not read yet are read now, in one read."""
        names = list(self.files.names if columns is None else columns)
        missing = [c for c in names if c not in self._columns]
        if missing:
            got = self.files.read(self.job, missing)
            self._columns.update(zip(missing, got.columns, strict=True))
        return pa.Table.from_arrays(
            [self._columns[c] for c in names], schema=self.files.reader.output_schema(names)
        )

    def release(self) -> None:
        """Drop the columns read (the unit is done with the file)."""
        self._columns.clear()


#: a change of one file: its rows (read on demand) -> what the change does to it, or None when
#: it touches none of its rows
Decide = Callable[[FileRows], FileChange | None]


class AppendFiles:
    """The data files of ``snapshot`` that ``rf``'s statistics (and buckets, partitions) do not
    rule out, in plan order, and how to read them."""

    def __init__(self, table: RewriteTarget, snapshot: Snapshot, rf: RowFilter | None) -> None:
        ctx = table.context
        self.context = ctx
        self.snapshot = snapshot
        entries = {
            (e.partition, e.bucket, e.file.file_name): e for e in ctx.store.live_entries(snapshot)
        }
        self.reader = AppendFileReader(ctx.file_io, ctx.schema, ctx.store.schema, ctx.root)
        self.vectors = DeletionVectorReader(ctx.file_io)
        self.names = list(ctx.schema.field_names)
        jobs: list[FileJob] = []
        offset = 0
        for split in table._plan(snapshot, rf):
            directory = ctx.bucket_path(split.partition_bytes, split.bucket)
            for f in split.files:
                entry = entries[(split.partition_bytes, split.bucket, f.file_name)]
                jobs.append(FileJob(entry, directory, split.deletion_of(f), offset))
                offset += int(f.row_count)
        self.jobs: list[FileJob] = jobs

    def read(self, job: FileJob, columns: Sequence[str]) -> pa.Table:
        """Every row of ``job``'s file, in physical order, as ``columns`` of the current
        schema."""
        return self.reader.read(job.directory, job.entry.file, columns)

    def dead(self, job: FileJob) -> np.ndarray:
        """Which physical rows of ``job``'s file its deletion vector deletes (a bool each)."""
        dead = np.zeros(job.rows, dtype=bool)
        if job.deletion is None:
            return dead
        positions = self.vectors.positions(job.deletion)
        if len(positions) and int(positions.max()) >= job.rows:
            raise CorruptTableError(
                f"the deletion vector of data file {job.entry.file.file_name} "
                f"({job.deletion.path}) deletes row {int(positions.max())}, past the file's "
                f"{job.rows} rows"
            )
        dead[positions.astype(np.int64)] = True
        return dead


@dataclass(frozen=True)
class Changed:
    """What a change did (:meth:`Prepared.commit`): the live rows it removed from the files,
    the rows their changes appended (an update's new rows; a merge's inserted rows not
    counted), and its snapshot (None: nothing touched or appended, nothing committed)."""

    removed: int
    appended: int
    snapshot_id: int | None


@dataclass
class _Decided:
    """A touched file: its job, the rows removed (a bit per physical row, packed: held for
    every touched file until the commit), the rows appended for it, and (copy-on-write) the
    commit messages of its surviving rows written anew."""

    job: FileJob
    removed_bits: np.ndarray
    removed: int
    appended: pa.Table | None
    messages: list[CommitMessage]

    def positions(self) -> np.ndarray:
        """The removed rows' positions (ascending uint64)."""
        bits = np.unpackbits(self.removed_bits, count=self.job.rows).astype(bool)
        return np.flatnonzero(bits).astype(np.uint64)


class _Writers:
    """Every writer a change makes (created on the pool's threads), for an abort."""

    def __init__(self, table: RewriteTarget) -> None:
        self.table = table
        self.made: list[Any] = []
        self._lock = threading.Lock()

    def new(self, parallelism: int | None) -> Any:
        writer = self.table.new_write(parallelism=parallelism)
        with self._lock:
            self.made.append(writer)
        return writer

    def abort(self) -> None:
        for writer in self.made:
            writer.abort()


def _survivors(rows: FileRows, removed: np.ndarray) -> pa.Table:
    """The rows of a rewritten file: neither deleted by its vector nor removed, in order."""
    kept = ~rows.dead & ~removed
    whole = rows.table()
    rows.release()
    return whole if bool(kept.all()) else whole.filter(pa.array(kept))


@dataclass
class Prepared:
    """A change decided and its new files written, not committed yet (:func:`prepare_change`):
    :meth:`commit` publishes it as one ``OVERWRITE`` snapshot, once."""

    table: RewriteTarget
    #: the live rows removed from the files, and the rows their changes appended
    removed: int
    appended: int
    #: the commit's plan on the latest snapshot (None: nothing touched or appended)
    plan: Callable[[Snapshot | None], PlannedChange] | None
    writers: _Writers
    #: index files written
    written: list[str]

    def commit(self) -> Changed:
        """Publish the change (nothing when it touched nothing); on a failure other than an
        unknown commit state, nothing is published and every file it wrote is deleted."""
        if self.plan is None:
            return Changed(0, 0, None)
        try:
            published = self.table._committer().commit_rewrite(self.plan)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            self.discard()
            raise
        return Changed(self.removed, self.appended, published.id)

    def discard(self) -> None:
        """Delete every file the change wrote."""
        self.writers.abort()
        for path in self.written:
            self.table.context.file_io.delete(path)


def prepare_change(
    table: RewriteTarget,
    snapshot: Snapshot,
    rf: RowFilter | None,
    decide: Decide,
    *,
    inserted: Callable[[], pa.Table] | None = None,
) -> Prepared:
    """Apply ``decide`` to every file of ``snapshot`` that ``rf`` does not rule out
    (:class:`AppendFiles`), then write the files' appended rows (in plan order) and the rows
    ``inserted()`` gives (called once every file is decided) — the change of one ``OVERWRITE``
    snapshot, not committed (see the module docstring). On any failure every file written is
    deleted; a file found missing because expiry removed ``snapshot`` meanwhile is a
    :class:`~lakeops.errors.SnapshotExpiredError` (:func:`lakeops.read.guard.guard_read`):
    the change can be prepared again on the latest snapshot."""
    writers = _Writers(table)
    written: list[str] = []
    try:
        return guard_read(
            table.context.store,
            planned_on(snapshot),
            lambda: _prepare(table, snapshot, rf, decide, inserted, writers, written),
        )
    except BaseException:
        Prepared(table, 0, 0, None, writers, written).discard()
        raise


def _prepare(
    table: RewriteTarget,
    snapshot: Snapshot,
    rf: RowFilter | None,
    decide: Decide,
    inserted: Callable[[], pa.Table] | None,
    writers: _Writers,
    written: list[str],
) -> Prepared:
    """:func:`prepare_change`'s work (``written``: the index files it writes)."""
    ctx = table.context
    vectored = ctx.options.deletion_vectors
    files = AppendFiles(table, snapshot, rf)
    decided, messages, writer = _stream(table, files, decide, writers)
    appended = [d.appended for d in decided if d.appended is not None]
    from_files = sum(a.num_rows for a in appended)
    if inserted is not None:
        appended.append(inserted())
    appended = [a for a in appended if a.num_rows]
    if not decided and not appended:
        return Prepared(table, 0, 0, None, writers, written)
    if appended or writer is not None:
        writer = writer or writers.new(None)
        for part in appended:
            writer.write(part)
        messages += list(writer.prepare_commit())
    index_changes, marked = _vector_changes(ctx, files.snapshot, decided, vectored, written)
    rewritten = () if vectored else decided
    entries = [replace(d.job.entry, kind=FileKind.DELETE) for d in rewritten]
    entries += [
        ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, new)
        for m in messages
        for new in m.new_files
    ]
    removed = {e.file.file_name for e in index_changes if e.kind == FileKind.DELETE}

    def plan(latest: Snapshot | None) -> PlannedChange:
        _check_vectors_unchanged(ctx, latest, marked, removed)
        return PlannedChange(entries, [], index_changes)

    return Prepared(table, sum(d.removed for d in decided), from_files, plan, writers, written)


def _decided(
    files: AppendFiles, job: FileJob, decide: Decide
) -> tuple[FileRows, np.ndarray, _Decided] | None:
    """``job``'s file decided: its rows, the rows removed (a bool each) and the touched file;
    None when the change touches none of its rows."""
    rows = FileRows(files, job)
    change = decide(rows)
    if change is None:
        return None
    removed = np.asarray(change.removed, dtype=bool)
    if len(removed) != job.rows:
        raise ValueError(f"{len(removed)} removal marks for the {job.rows} rows of a file")
    count = int(np.count_nonzero(removed))
    if not count:
        return None
    touched = _Decided(job, np.packbits(removed), count, change.appended, [])
    return rows, removed, touched


def _stream(
    table: RewriteTarget, files: AppendFiles, decide: Decide, writers: _Writers
) -> tuple[list[_Decided], list[CommitMessage], Any]:
    """Decide every planned file and, copy-on-write, rewrite the touched ones: the touched
    files in plan order, the messages of the rewritten files' new files, and the writer a
    fixed-bucket rewrite left open (None for any other), which the appended rows go through
    after the rewritten ones."""
    if table.context.options.deletion_vectors:  # no rewrite: each file's rows freed at once

        def marked(job: FileJob) -> _Decided | None:
            got = _decided(files, job, decide)
            return None if got is None else got[2]

        out = [d for d in imap_ordered(marked, files.jobs, None) if d is not None]
        return out, [], None
    if table.context.options.bucket > 0:
        return _stream_one_writer(files, decide, writers)

    def rewrite(job: FileJob) -> _Decided | None:
        got = _decided(files, job, decide)
        if got is None:
            return None
        rows, removed, touched = got
        kept = _survivors(rows, removed)
        if kept.num_rows:
            writer = writers.new(1)
            writer.write(kept)
            del kept
            touched.messages = list(writer.prepare_commit())
        return touched

    out = [d for d in run_ordered(rewrite, files.jobs, None) if d is not None]
    return out, [m for d in out for m in d.messages], None


def _stream_one_writer(
    files: AppendFiles, decide: Decide, writers: _Writers
) -> tuple[list[_Decided], list[CommitMessage], Any]:
    """A fixed-bucket table's rewrite: files read and decided ahead on the cores (a bounded
    read-ahead: :func:`~lakeops.parallel.imap_ordered`), their surviving rows fed to one
    writer in plan order, left open for the appended rows."""

    def survivors(job: FileJob) -> tuple[_Decided, pa.Table] | None:
        got = _decided(files, job, decide)
        if got is None:
            return None
        rows, removed, touched = got
        return touched, _survivors(rows, removed)

    out: list[_Decided] = []
    writer: Any = None
    for got in imap_ordered(survivors, files.jobs, None):
        if got is None:
            continue
        touched, kept = got
        if kept.num_rows:
            writer = writer or writers.new(None)
            writer.write(kept)
        out.append(touched)
    return out, [], writer


def _vector_changes(
    ctx: TableContext,
    snapshot: Snapshot,
    touched: Sequence[_Decided],
    vectored: bool,
    written: list[str],
) -> tuple[list[IndexManifestEntry], set[tuple[bytes, int, str]]]:
    """The deletion-vector index changes of ``touched`` files: with vectors, their removed rows
    marked; without, the vectors of the files rewritten dropped. Also the files marked."""
    live = [
        e for e in ctx.store.index_entries(snapshot) if e.file.index_type == DELETION_VECTORS_INDEX
    ]
    by_bucket: dict[tuple[bytes, int], list[_Decided]] = {}
    for d in touched:
        by_bucket.setdefault((d.job.entry.partition, d.job.entry.bucket), []).append(d)
    changes: list[IndexManifestEntry] = []
    marked: set[tuple[bytes, int, str]] = set()
    for (partition, bucket), group in by_bucket.items():
        mine = [e for e in live if (e.partition, e.bucket) == (partition, bucket)]
        if not vectored and not mine:
            continue
        paths = {
            e.file.file_name: ctx.locations.index_entry_path(partition, bucket, e.file)
            for e in mine
        }
        bitmap64 = ctx.options.deletion_vectors_bitmap64
        vectors = BucketVectors(ctx.file_io, tuple(mine), paths, bitmap64)
        for d in group if vectored else ():
            name = d.job.entry.file.file_name
            vectors.mark(name, d.positions())
            marked.add((partition, bucket, name))
        before = [] if vectored else [d.job.entry.file for d in group]
        entries, paths_written = vectors.changes(partition, bucket, before, [], ctx.locations)
        written += paths_written
        changes += entries
    return changes, marked


def _check_vectors_unchanged(
    ctx: TableContext,
    latest: Snapshot | None,
    marked: set[tuple[bytes, int, str]],
    removed: set[str],
) -> None:
    """Refuse the commit when a file this change gives a vector got one meanwhile in an index
    file it does not replace (two vectors of one file: rows deleted by another commit)."""
    if not marked or latest is None:
        return
    current = deletion_files(ctx.store.index_entries(latest))  # paths: index file names
    for key in marked:
        df = current.get(key)
        if df is not None and df.path not in removed:
            raise CommitConflictError(
                f"data file {key[2]} got a deletion vector from another commit while this "
                "change was prepared; nothing was committed — run it again"
            )
