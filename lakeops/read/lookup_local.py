"""Local lookup files: one per looked-up data file, on local disk, shared by every process.

A point lookup in a fresh process would otherwise decode whole column chunks of every row group
a sought key falls in (:mod:`lakeops.read.lookup_files`), which for a hundred random keys is
the whole table. As Paimon's lookup does (``LookupLevels``: a local file built per remote data
file it looks up), the first lookup of a data file writes the file's records to a **local
lookup file**, and every later lookup of that data file — in this process or any other on the
machine — searches the local file instead:

* Format: an uncompressed Arrow IPC file, opened with :func:`pyarrow.memory_map` (no read of
  the file: opening costs the footer, well under a millisecond), holding
  - the data file's records in file order, in the uniform record layout of the reader
    (:meth:`~lakeops.kv.reader.KeyValueReader.record_schema` with every value column of the
    table's current schema: merge keys in current types with canonical NaN, sequence number,
    row kind), so a row's index is its position in the data file (deletion vectors apply by
    position, as before);
  - an index: ``hash`` (Paimon's ``BinaryRow`` hash of each row's merge key,
    :func:`~lakeops.format.bucket_hash.hash_rows`, int32) sorted, and ``order``, the position
    of the row each hash belongs to. A lookup hashes its sought keys whole-array, finds each in
    the sorted hashes with :func:`numpy.searchsorted`, and checks the candidate rows' keys
    against the sought keys exactly (a semi-join: hash collisions never return a row). Only
    the pages of the index it bisects and of the matching rows are read from disk. A hash index
    serves composite and string keys alike; FLOAT/DOUBLE keys (``-0.0`` hashes apart from
    ``0.0``) are left to the unit path.
* Key: (file system protocol, full path, size, the data file's schema id, the table schema id
  the records were laid out in, format version), both as the file's name (a SHA-256 of them) and
  in the file's metadata, which is checked on every open: a local file whose recorded key does
  not match is never used (it is rebuilt). Data files are immutable — every name holds a UUID
  and a file is never rewritten in place — so a local file stays right as long as its data file
  exists.
* Building: the lookup that first needs a data file decodes it and answers from the decoded
  records at once (a membership test over every row); indexing and writing the local file
  happen on a background thread of the process (one, at a lowered priority, at most
  :data:`_PENDING` files waiting — beyond that the lookup writes its own), which then swaps the
  in-memory copy for the memory-mapped file. A process waits for its writes before it exits
  (:meth:`LocalFiles.settle`); a forked child writes on a thread of its own.
* Writing: to a temporary file in the same directory, flushed to disk, then renamed into place
  (atomic on POSIX): a reader sees a whole local file or none. Two processes building the same
  local file at once each write their own and the last rename wins (both hold the same). A local
  file that cannot be opened, is truncated, has a row count other than the data file's, or an
  index that is not sorted, is rebuilt.
* Directory (``lakeops.lookup.local-dir``): by default ``$XDG_CACHE_HOME/lakeops/lookup``
  (``~/.cache/lakeops/lookup`` where unset): a per-user cache directory — local disk rather than
  a RAM-backed ``/tmp``, and not a directory shared with other users, who could otherwise plant
  files there. Whatever directory is used, it must be owned by this user and writable by no one
  else; if it is not (or cannot be created), lookups do without local files.
* Eviction: ``lookup.cache-file-retention`` (Paimon's, 1 hour by default): a local file not used
  for that long is deleted; ``lookup.cache-max-disk-size`` (Paimon's, unlimited by default; 0
  turns local files off): beyond it the least recently used local files are deleted. A local
  file's modification time is its last use (refreshed at most once a minute per process).
  Eviction runs whenever a local file is built. A file another process still has mapped may be
  deleted: its mapping stays valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.format.bucket_hash import hash_rows
from lakeops.format.types import DataType
from lakeops.options.rows_write import (
    LOOKUP_CACHE_FILE_RETENTION,
    LOOKUP_CACHE_MAX_DISK_SIZE,
    LOOKUP_LOCAL_DIR,
)

__all__ = ["DENSE", "LOCAL_FILES", "LocalFile", "LocalFiles", "LocalSettings", "local_settings"]

#: bumped whenever the layout of a local file changes: files of another version are rebuilt
FORMAT_VERSION = 1
#: the metadata key of a local file's own key
_META = b"lakeops.lookup-file"
#: the index columns (no Paimon field is named with a NUL)
_HASH = "\x00hash"
_ORDER = "\x00order"
_SUFFIX = ".lookup.arrow"
#: opened local files kept per process
_OPEN = 1024
#: a used local file's modification time is refreshed at most this often (seconds)
_TOUCH_EVERY = 60.0
#: a temporary file older than this (seconds) was abandoned by a builder that died
_ABANDONED = 3600.0
#: matches of at least one row in this many are marked row by row rather than listed
DENSE = 16
#: built local files waiting to be written, beyond which a lookup writes its own at once
_PENDING = 4
#: the nice value of the thread that writes local files
_NICE = 10


@dataclass(frozen=True)
class LocalSettings:
    """Where local lookup files live and how long and how much of them are kept."""

    #: None: no local files (turned off, or no safe directory)
    directory: Path | None
    retention_seconds: float
    max_disk_bytes: int


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/lakeops/lookup``, ``~/.cache/lakeops/lookup`` where it is unset."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lakeops" / "lookup"


def local_settings(options: Mapping[str, str]) -> LocalSettings:
    """The local lookup file settings of a table's ``options``."""
    limit = LOOKUP_CACHE_MAX_DISK_SIZE.get(options)
    retention = LOOKUP_CACHE_FILE_RETENTION.get(options) / 1000
    text = LOOKUP_LOCAL_DIR.get(options).strip()
    directory = Path(text).expanduser() if text else default_directory()
    return LocalSettings(directory if limit > 0 else None, retention, limit)


def _safe_directory(directory: Path) -> bool:
    """Create ``directory`` (mode 0700) if needed; whether it is a directory of this user that
    no one else may write (files others could plant are never trusted)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@dataclass
class LocalFile:
    """An opened (memory-mapped) local lookup file."""

    path: Path
    #: the records, in data-file order (columns of the record schema; a zero-copy view)
    records: pa.Table
    #: the rows' key hashes, sorted, and the position of the row of each (None: a local file
    #: this process built and has not indexed yet — every row is a candidate)
    hashes: np.ndarray | None
    order: np.ndarray | None
    #: when this process last refreshed the file's modification time
    touched: float

    def candidates(self, hashes: np.ndarray) -> np.ndarray:
        """The sorted positions of the rows whose key hash is one of ``hashes``.

        The sought hashes are sorted first, so the bisection walks the index in order. Where
        the matches are a large share of the rows (at least one in :data:`DENSE`), the rows
        are marked in one pass over the index instead of listed and deduplicated."""
        if self.hashes is None or self.order is None:
            return np.arange(self.records.num_rows, dtype=np.int64)
        rows = len(self.order)
        if not len(hashes) or not rows:
            return np.empty(0, dtype=np.int64)
        sought = np.sort(hashes)
        lo = np.searchsorted(self.hashes, sought, side="left")
        hi = np.searchsorted(self.hashes, sought, side="right")
        counts = hi - lo
        total = int(counts.sum())
        if not total:
            return np.empty(0, dtype=np.int64)
        if total * DENSE >= rows:
            # +1 where a matching span of the sorted hashes starts, -1 where it ends
            edges = np.bincount(lo, minlength=rows + 1) - np.bincount(hi, minlength=rows + 1)
            marked = np.zeros(rows, dtype=bool)
            marked[self.order[np.cumsum(edges[:rows]) > 0]] = True
            return np.flatnonzero(marked)
        firsts = np.repeat(lo, counts)
        within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.unique(self.order[firsts + within])


def _key_text(key: tuple[Any, ...]) -> str:
    return json.dumps([FORMAT_VERSION, *key])


def _open(path: Path, key: tuple[Any, ...], rows: int) -> LocalFile | None:
    """The local file at ``path`` if it is whole and holds ``key`` with ``rows`` rows."""
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
        meta = table.schema.metadata or {}
        if meta.get(_META) != _key_text(key).encode() or table.num_rows != rows:
            return None
        table.validate()
        hashes = _one(table.column(_HASH)).to_numpy()
        order = _one(table.column(_ORDER)).to_numpy()
    except (OSError, pa.ArrowException, ValueError, KeyError):
        return None
    if len(hashes) > 1 and bool(np.any(hashes[1:] < hashes[:-1])):
        return None
    if len(order) and (int(order.min()) < 0 or int(order.max()) >= rows):
        return None
    records = table.drop_columns([_HASH, _ORDER]).replace_schema_metadata(None)
    return LocalFile(path, records, hashes, order, 0.0)


def _one(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array (one chunk: no copy)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def key_hashes(columns: list[pa.Array | pa.ChunkedArray], types: list[DataType]) -> np.ndarray:
    """The hash of each row's key (``columns``, of ``types``) a local file's index holds."""
    return hash_rows(columns, types)


def _write(
    path: Path,
    key: tuple[Any, ...],
    records: pa.Table,
    key_names: list[str],
    types: list[DataType],
) -> None:
    """Write ``records`` and their hash index (the key hashes sorted, and the row each belongs
    to) as the local file ``path`` of ``key``, atomically."""
    hashes = key_hashes([records.column(k) for k in key_names], types)
    order = np.argsort(hashes, kind="stable")
    table = (
        records.append_column(_HASH, pa.array(hashes[order]))
        .append_column(_ORDER, pa.array(order.astype(np.int64)))
        .replace_schema_metadata({_META: _key_text(key).encode()})
    )
    fd, temp = tempfile.mkstemp(prefix=".build-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            with pa.ipc.new_file(out, table.schema) as writer:
                writer.write_table(table.combine_chunks())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _background() -> None:
    """Lower the calling thread's scheduling priority (Linux: a thread's own nice value),
    so that writing local files yields the cores to the lookups that wait for answers."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _NICE)


class LocalFiles:
    """The local lookup files of this process: opened ones kept (memory-mapped), built ones
    written under the directory of the settings given. Thread-safe."""

    def __init__(self) -> None:
        self._open: OrderedDict[tuple[str, tuple[Any, ...]], LocalFile] = OrderedDict()
        self._safe: dict[Path, bool] = {}
        self._lock = threading.Lock()
        #: the thread that writes built local files, of the process that made it (a forked
        #: child makes its own), and the writes it has not finished
        self._writer: ThreadPoolExecutor | None = None
        self._writer_pid = 0
        self._pending: set[Future[None]] = set()
        #: local files built and opened by this process (for tests and benchmarks)
        self.built = 0
        self.opened = 0

    def clear(self) -> None:
        """Forget the opened local files (the files stay on disk), once the ones being
        written are written."""
        self.settle()
        with self._lock:
            self._open.clear()
            self._safe.clear()

    def usable(self, settings: LocalSettings) -> bool:
        """Whether ``settings`` name a directory local files may be kept in."""
        directory = settings.directory
        if directory is None:
            return False
        with self._lock:
            safe = self._safe.get(directory)
        if safe is None:
            safe = _safe_directory(directory)
            with self._lock:
                self._safe[directory] = safe
        return safe

    def get(
        self,
        settings: LocalSettings,
        key: tuple[Any, ...],
        rows: int,
        build: Callable[[], tuple[pa.Table, list[str], list[DataType]]],
    ) -> LocalFile | None:
        """The local file of ``key`` (a data file of ``rows`` rows): opened if kept or on disk
        and whole, else built from ``build()`` (the records, their merge-key columns and the key
        types). A built one serves at once from memory while this process writes it to disk
        in the background (:meth:`settle`), and is then used memory-mapped like any other.
        None where ``settings`` allow no local files, or where the records are beyond the disk
        budget."""
        if not self.usable(settings):
            return None
        directory = settings.directory
        assert directory is not None
        name = hashlib.sha256(_key_text(key).encode()).hexdigest() + _SUFFIX
        path = directory / name
        cache_key = (str(directory), key)
        with self._lock:
            found = self._open.get(cache_key)
            if found is not None:
                self._open.move_to_end(cache_key)
        if found is None:
            found = _open(path, key, rows)
            if found is None:
                records, key_names, types = build()
                if records.get_total_buffer_size() > settings.max_disk_bytes:
                    return None
                found = LocalFile(path, records, None, None, time.time())
                self.built += 1
                self._write_later(settings, cache_key, key, rows, found, (key_names, types))
            self.opened += 1
            with self._lock:
                self._open[cache_key] = found
                while len(self._open) > _OPEN:
                    self._open.popitem(last=False)
        now = time.time()
        if now - found.touched > _TOUCH_EVERY:
            with contextlib.suppress(OSError):
                os.utime(found.path, (now, now))
            found.touched = now
        return found

    def settle(self) -> None:
        """Wait until every local file this process has built is written to disk (or given
        up: a full or failing local disk keeps none)."""
        with self._lock:
            pending = list(self._pending) if self._writer_pid == os.getpid() else []
        for future in pending:
            future.result()

    def _write_later(
        self,
        settings: LocalSettings,
        cache_key: tuple[str, tuple[Any, ...]],
        key: tuple[Any, ...],
        rows: int,
        built: LocalFile,
        keys: tuple[list[str], list[DataType]],
    ) -> None:
        """Index and write ``built`` (records of merge-key columns and types ``keys``) to disk,
        evict, and swap the in-memory copy this process keeps for the memory-mapped file — on
        the writer thread, or here where :data:`_PENDING` writes already wait (each holds a
        decoded data file in memory)."""

        def write() -> None:
            try:
                _write(built.path, key, built.records, *keys)
            except (OSError, pa.ArrowException):
                written = None  # a full or failing local disk: lookups read the data file
            else:
                self._evict(settings, keep=built.path)
                written = _open(built.path, key, rows)
            with self._lock:
                if self._open.get(cache_key) is built:
                    if written is None:
                        del self._open[cache_key]
                    else:
                        self._open[cache_key] = written

        with self._lock:
            if self._writer_pid != os.getpid():  # none yet, or the parent's before a fork
                self._writer = ThreadPoolExecutor(
                    1, thread_name_prefix="lakeops-lookup-file", initializer=_background
                )
                self._writer_pid = os.getpid()
                self._pending = set()
            if len(self._pending) >= _PENDING or self._writer is None:
                later = None
            else:
                later = self._writer.submit(write)
                self._pending.add(later)
        if later is None:
            write()
            return
        # (a future done before the callback is added runs it here, outside the lock)
        later.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    def _evict(self, settings: LocalSettings, keep: Path) -> None:
        """Delete the local files (and abandoned temporary files) not used within the
        retention, then the least recently used beyond the disk budget (never ``keep``)."""
        directory = settings.directory
        assert directory is not None
        now = time.time()
        files: list[tuple[float, int, Path]] = []
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                if not entry.name.endswith((_SUFFIX, ".tmp")):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    files.append((info.st_mtime, info.st_size, Path(entry.path)))
        kept = []
        for mtime, size, path in files:
            # another process may still be writing a young temporary file
            limit = settings.retention_seconds
            if path.name.endswith(".tmp"):
                limit = max(limit, _ABANDONED)
            if path != keep and now - mtime > limit:
                with contextlib.suppress(OSError):
                    path.unlink()
            elif path.name.endswith(_SUFFIX):
                kept.append((mtime, size, path))
        total = sum(size for _, size, _ in kept)
        for _, size, path in sorted(kept):
            if total <= settings.max_disk_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size


#: the local lookup files every lookup of this process shares
LOCAL_FILES = LocalFiles()
