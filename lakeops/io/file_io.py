"""FileIO: one small storage interface over fsspec, chosen by URI scheme.

Everything lakeops reads or writes goes through :class:`FileIO`. Paths are strings relative to
nothing: callers join them with :func:`join`. The commit point of a table, publishing
``snapshot-N`` so that exactly one writer wins, is :meth:`FileIO.publish_exclusive`.

The strategy is chosen per store (:mod:`lakeops.io.publish`): hard link on local disk, rename
without overwrite on HDFS, conditional put on object stores (probed), or a lock when the catalog
options enable one (``lock.enabled``, ``lock.type``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

import fsspec
import pyarrow as pa
import pyarrow.fs as pafs

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.io.lock import create_lock
from lakeops.io.memory_pool import use_lakeops_pool
from lakeops.io.publish import (
    ConditionalPutPublish,
    LinkPublish,
    LockedPublish,
    ObjectStoreExclusive,
    PublishStrategy,
    RenamePublish,
)
from lakeops.io.storage_errors import bounded_options, classify, endpoint_of
from lakeops.redact import redact_uri, uri_has_password

__all__ = ["CLOCK_PROBE_PREFIX", "FileIO", "join"]

_Opened = TypeVar("_Opened")

#: how many local directories a :class:`FileIO` remembers having made (forgotten all at once
#: beyond: a forgotten directory is only checked again)
_KNOWN_DIRECTORIES = 1 << 16

CLOCK_PROBE_PREFIX = "clock-probe-"
"""Name prefix of the probe files :meth:`FileIO.store_now_ms` writes (and deletes at once)."""


def join(*parts: str) -> str:
    """Join path parts with ``/``, ignoring empty parts."""
    out = ""
    for p in parts:
        if not p:
            continue
        out = p if not out else f"{out.rstrip('/')}/{p.lstrip('/')}"
    return out


def _fresh_listings(uri: str, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    """The filesystem options, with fsspec's directory-listing cache off for remote stores.

    fsspec caches directory listings per filesystem instance, and s3fs answers ``exists`` from
    that cache: a process that once listed ``snapshot/`` would never see a snapshot another
    process published afterwards (its reads stay on an old snapshot, and its commits lose every
    retry to a snapshot it cannot see). Table metadata changes under every reader, so no
    listing may be reused; a caller that asks for the cache is refused rather than served stale.
    """
    protocol = fsspec.utils.get_protocol(uri)
    if protocol in ("file", "local"):
        return dict(storage_options or {})
    # connection attempts bounded, so an unreachable endpoint is reported within seconds
    options = bounded_options(protocol, storage_options or {})
    if options.get("use_listings_cache"):
        raise ConfigurationError(
            "storage option use_listings_cache=True would let this process read a table's "
            "snapshot directory from a stale listing (missing snapshots other writers "
            "published); remove the option — lakeops lists metadata afresh on every read"
        )
    options["use_listings_cache"] = False
    return options


class FileIO:
    """Storage for one warehouse URI.

    Args:
        uri: a local path, ``file://`` URI, or another fsspec URI.
        storage_options: passed to the fsspec filesystem (endpoints, credentials); never logged
            and never written into table metadata.
    """

    def __init__(
        self,
        uri: str,
        storage_options: dict[str, Any] | None = None,
        commit_options: dict[str, str] | None = None,
    ) -> None:
        if uri_has_password(str(uri)):
            # refused before anything (fsspec, a message, a repr) sees the URI
            raise ConfigurationError(
                f"warehouse URI {redact_uri(str(uri))!r} carries credentials in its user-info; "
                "remove them from the URI and pass them as storage options instead (e.g. "
                "{'key': …, 'secret': …} for S3, or the Airflow connection's login/password)"
            )
        use_lakeops_pool()
        self._storage_options = dict(storage_options or {})
        self._commit_options = dict(commit_options or {})
        self._publisher: PublishStrategy | None = None
        # the lock options are parsed and checked now, when the catalog is created
        self._lock = create_lock(self._commit_options)
        fs, root = fsspec.core.url_to_fs(str(uri), **_fresh_listings(str(uri), storage_options))
        self.fs: fsspec.AbstractFileSystem = fs
        self.root: str = root.rstrip("/") or "/"
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.protocol: str = protocol
        self.is_local = protocol in ("file", "local")
        if self.is_local:
            self.root = os.path.abspath(self.root)
        #: the Arrow file system of local paths (stateless: one serves every call and thread)
        self._local_fs = pafs.LocalFileSystem()
        #: local directories this FileIO made, so new files in them are opened directly
        self._directories: set[str] = set()
        #: the endpoint storage requests go to, for messages (never a credential)
        self.endpoint: str = endpoint_of(protocol, self._storage_options)

    def __repr__(self) -> str:  # never show storage options (they may hold credentials)
        return f"FileIO({self.protocol}://{self.root})"

    def __reduce__(self) -> tuple[Any, ...]:
        uri = self.root if self.is_local else f"{self.protocol}://{self.root}"
        return (FileIO, (uri, self._storage_options, self._commit_options))

    # ------------------------------------------------------------------- basics
    def _plain(self, path: str) -> bool:
        """Whether ``path`` is a plain local path, served by the os module directly (what
        fsspec's local file system does, without its per-call path normalisation)."""
        return self.is_local and path.startswith("/")

    @contextlib.contextmanager
    def _classified(self, what: str) -> Iterator[None]:
        """Raise an unreachable endpoint or refused credentials as the lakeops error for that
        cause (:mod:`lakeops.io.storage_errors`); anything else passes through unchanged."""
        try:
            yield
        except Exception as exc:
            error = classify(exc, endpoint=self.endpoint, what=what)
            if error is None:
                raise
            raise error from exc

    def exists(self, path: str) -> bool:
        if self._plain(path):
            return os.path.exists(path)
        with self._classified(f"looking for {path}"):
            return bool(self.fs.exists(path))

    def bucket_exists(self, bucket: str) -> bool:
        """Whether the object-store bucket ``bucket`` exists (a ``HEAD`` of the bucket on S3).
        Unlike a plain ``exists``, a bucket that cannot be checked is not reported missing:
        an unreachable endpoint is a :class:`~lakeops.errors.StorageUnreachableError`, refused
        credentials a :class:`~lakeops.errors.StorageAccessDeniedError`."""
        with self._classified(f"checking bucket {bucket!r}"):
            if self.protocol not in ("s3", "s3a"):
                return bool(self.fs.exists(bucket))
            try:
                self.fs.call_s3("head_bucket", Bucket=bucket)
            except FileNotFoundError:
                return False
            return True

    def read_bytes(self, path: str, max_bytes: int | None = None) -> bytes:
        """The whole file, in one request (no ETag pinning: hints may be replaced meanwhile).

        With ``max_bytes``, at most ``max_bytes + 1`` bytes are read (a ranged request), so a
        caller can refuse a file larger than it is willing to hold without reading it whole."""
        if self._plain(path):
            with open(path, "rb") as f:
                # read(n) allocates n bytes up front: only a file larger than the cap reads n
                if max_bytes is None or os.fstat(f.fileno()).st_size <= max_bytes:
                    return f.read()
                return f.read(max_bytes + 1)
        if max_bytes is None:
            return bytes(self.fs.cat_file(path))
        return bytes(self.fs.cat_file(path, start=0, end=max_bytes + 1))

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a file under a fresh, unique name (data files, manifests); a missing directory
        is created (see :meth:`open_output_stream`)."""
        if self._plain(path):
            with self._open_local(path, lambda: open(path, "wb")) as out:
                out.write(data)
            return
        self.mkdirs(path.rsplit("/", 1)[0])
        with self.fs.open(path, "wb") as f:
            f.write(data)

    def open_output_stream(self, path: str) -> pa.NativeFile:
        """A new file at ``path`` as an Arrow output stream (what the Parquet, ORC and Avro
        writers write to; the caller closes it); a missing directory is created.

        On a local disk each directory is made once per :class:`FileIO` (it remembers the
        directories it made, up to :data:`_KNOWN_DIRECTORIES`), and the file is then opened
        directly: a write of thousands of small files pays one ``mkdir`` per new directory,
        not a directory check per file. A remembered directory removed since (a dropped
        table, another process) is made again when opening the file finds it missing.
        Elsewhere the directory is made as :meth:`mkdirs` does, before opening."""
        if self._plain(path):
            local = self._local_fs
            return self._open_local(path, lambda: local.open_output_stream(path))
        self.mkdirs(path.rsplit("/", 1)[0])
        return self.arrow_fs.open_output_stream(path)

    def _open_local(self, path: str, opener: Callable[[], _Opened]) -> _Opened:
        """``opener()`` (which creates the local file ``path``) once its directory exists (see
        :meth:`open_output_stream`)."""
        directory = path.rsplit("/", 1)[0] or "/"
        if directory not in self._directories:
            self._make_local_dir(directory)
        try:
            return opener()
        except FileNotFoundError:  # the directory was removed since it was made
            os.makedirs(directory, exist_ok=True)
            return opener()

    def _make_local_dir(self, directory: str) -> None:
        """Make the local ``directory`` and its missing parents, and remember it made: one
        ``mkdir`` when its parent is remembered too (a bucket in a known partition)."""
        parent = directory.rsplit("/", 1)[0]
        if parent in self._directories:
            try:
                os.mkdir(directory)
            except FileExistsError:
                pass
            except FileNotFoundError:  # the parent was removed since it was made
                os.makedirs(directory, exist_ok=True)
        else:
            os.makedirs(directory, exist_ok=True)
        if len(self._directories) >= _KNOWN_DIRECTORIES:
            self._directories.clear()
        self._directories.add(directory)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a small file so readers see the old or the new content, never a mix
        (used for hints such as ``LATEST``, where last-writer-wins is fine)."""
        if self.is_local:
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                self.write_bytes(tmp, data)
                os.replace(tmp, path)
            except BaseException:  # a full disk: no temporary file is left behind
                self.delete(tmp)
                raise
        else:
            self.write_bytes(path, data)

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)

    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents (nothing on object stores, which have none:
        creating one there only costs a request per write)."""
        if path and self._plain(path):
            os.makedirs(path, exist_ok=True)
        elif path and not self.is_object_store:
            self.fs.makedirs(path, exist_ok=True)

    @property
    def is_object_store(self) -> bool:
        """Whether this storage is an object store (keys, no directories)."""
        return self.protocol in ("s3", "s3a", "gs", "gcs", "abfs", "az", "oss")

    def list_names(self, path: str) -> list[str]:
        """Base names of the entries in a directory ([] if it does not exist)."""
        try:
            with self._classified(f"listing {path}"):
                entries = self.fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]

    def is_dir(self, path: str) -> bool:
        with self._classified(f"looking for directory {path}"):
            return bool(self.fs.isdir(path))

    @property
    def renames_atomically(self) -> bool:
        """Whether a directory can be renamed in one atomic step here (a local file system,
        HDFS) — object stores copy and delete every object instead."""
        return self.is_local or self.protocol in ("hdfs", "viewfs")

    def rename_dir(self, source: str, target: str) -> None:
        """Rename directory ``source`` to ``target`` (which must not exist) atomically; an
        :class:`UnsupportedFeatureError` where the store cannot (see
        :attr:`renames_atomically`)."""
        if not self.renames_atomically:
            raise UnsupportedFeatureError(
                f"{self.protocol}:// cannot rename a directory atomically (it copies every "
                "object, and readers and writers would see a half-moved table); create the "
                "new table and copy the data instead, or use a file system that renames"
            )
        if self.is_local:
            os.rename(source, target)
        else:
            self.fs.mv(source, target, recursive=True)

    def delete_tree(self, path: str) -> None:
        """Delete a directory and everything under it (nothing if it does not exist)."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(path, recursive=True)

    def size(self, path: str) -> int:
        if self._plain(path):
            return os.path.getsize(path)
        return int(self.fs.size(path))

    def modified_ms(self, path: str) -> float:
        """When ``path`` was last modified, in epoch milliseconds (naive times are UTC)."""
        modified = self.fs.modified(path)
        if modified.tzinfo is None:
            modified = modified.replace(tzinfo=dt.UTC)
        return float(modified.timestamp() * 1000)

    def store_now_ms(self, directory: str) -> float:
        """The store's own clock, in epoch milliseconds: the modification time it reports for
        a small probe file written into ``directory`` now (deleted again; a probe left by a
        killed process is removed by the next orphan cleanup). Unlike the local clock, this is
        the clock every file's modification time on this store comes from."""
        probe = join(directory, f"{CLOCK_PROBE_PREFIX}{uuid.uuid4().hex}.tmp")
        self.write_bytes(probe, b"")
        try:
            return self.modified_ms(probe)
        finally:
            self.delete(probe)

    def open_output(self, path: str) -> IO[bytes]:
        self.mkdirs(path.rsplit("/", 1)[0])
        result: IO[bytes] = self.fs.open(path, "wb")
        return result

    @property
    def arrow_fs(self) -> pafs.FileSystem:
        """A pyarrow filesystem for Parquet I/O on this storage."""
        if self.is_local:
            return self._local_fs
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))

    # ------------------------------------------------------------------ commit
    @property
    def publisher(self) -> PublishStrategy:
        """The exclusive-create strategy for this store (chosen once, see
        :mod:`lakeops.io.publish`)."""
        if self._publisher is None:
            exclusive: PublishStrategy
            if self.is_local:
                exclusive = LinkPublish()
            elif self.protocol in ("hdfs", "viewfs"):
                exclusive = RenamePublish()
            elif self._lock is not None:
                exclusive = ObjectStoreExclusive()  # a conditional put, else a fenced copy
            else:
                exclusive = ConditionalPutPublish()
            self._publisher = (
                exclusive if self._lock is None else LockedPublish(self._lock, exclusive)
            )
        return self._publisher

    def publish_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist yet, atomically.

        Returns True if this call created it, False if the name was already taken (another
        writer won). Readers never see a partially written file.
        """
        if not data:
            raise ConfigurationError("refusing to publish an empty file")
        if not self.is_local:  # (local strategies create the directory themselves)
            self.mkdirs(path.rsplit("/", 1)[0])
        return self.publisher.publish(self.fs, path, data)

    def check_commit_ready(self) -> None:
        """Reach the commit lock, when the catalog has one, before anything is written: an
        unreachable lock is a :class:`~lakeops.errors.LockUnavailableError` while the table is
        still untouched (no data file, manifest or manifest list)."""
        if self._lock is not None:
            self._lock.check()
