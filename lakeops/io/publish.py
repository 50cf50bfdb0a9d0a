"""Exclusive publication of a file: one interface, a strategy per store.

``publish(path, data) -> bool`` creates ``path`` with ``data`` only if it does not exist yet,
atomically: True if this call created it, False if another writer had it first. Readers never
see a partial file.

* :class:`LinkPublish` — local disk: write a temporary file, ``os.link`` it to the final name
  (fails if the name exists), remove the temporary name.
* :class:`RenamePublish` — HDFS: write a temporary file, rename it without overwrite (the
  NameNode refuses an existing destination).
* :class:`ConditionalPutPublish` — object stores that honour ``If-None-Match: *``. The store is
  probed once per directory and process: a second conditional create of a probe object must
  fail. A store that ignores the condition is refused (configure a lock) rather than corrupted.
  After a win the object is read back, so an emulator that lets two creators through is caught.
* :class:`LockedPublish` — any store with a lock (``lock.enabled``): check, write and re-check
  the fencing token while holding the lock.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from abc import ABC, abstractmethod
from typing import Any

from lakeops.errors import CommitError, ConfigurationError, LockUnavailableError
from lakeops.io.lock import Lock

__all__ = [
    "ConditionalPutPublish",
    "LinkPublish",
    "LockedPublish",
    "PublishStrategy",
    "RenamePublish",
    "StoreRefusedError",
]


class StoreRefusedError(CommitError):
    """The store does not honour conditional creates and no lock is configured."""


class PublishStrategy(ABC):
    """Creates a file exclusively (see the module docstring)."""

    @abstractmethod
    def publish(self, fs: Any, path: str, data: bytes) -> bool:
        """True if this call created ``path``; False if it already existed."""


class LinkPublish(PublishStrategy):
    """Local disk: temporary file + ``os.link``."""

    def publish(self, fs: Any, path: str, data: bytes) -> bool:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:  # a full disk: no temporary file is left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)


class RenamePublish(PublishStrategy):
    """HDFS: temporary file + rename without overwrite.

    ``rename(src, dst)`` is the client's rename that fails (returns False or raises) when ``dst``
    exists — hdfs-native's ``rename(src, dst, overwrite=False)``. Never fsspec's ``mv`` (which
    overwrites, or ignores the NameNode's refusal).
    """

    def publish(self, fs: Any, path: str, data: bytes) -> bool:
        directory, name = path.rsplit("/", 1)
        tmp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
        try:
            with fs.open(tmp, "wb") as f:
                f.write(data)
        except BaseException:  # a full disk: no temporary file is left behind
            with contextlib.suppress(OSError):
                fs.rm_file(tmp)
            raise
        client = getattr(fs, "client", fs)
        strip = getattr(fs, "_strip_protocol", lambda p: p)
        try:
            renamed = client.rename(strip(tmp), strip(path), overwrite=False)
        except FileExistsError:
            renamed = False
        except OSError as exc:
            if "exist" not in str(exc).lower():
                fs.rm_file(tmp)
                raise
            renamed = False
        if renamed is False:
            fs.rm_file(tmp)
            return False
        return True


class ConditionalPutPublish(PublishStrategy):
    """Object stores: ``If-None-Match: *`` creates, probed once per directory."""

    def __init__(self) -> None:
        self._probed: set[str] = set()

    def _probe(self, fs: Any, directory: str) -> None:
        if directory in self._probed:
            return
        probe = f"{directory}/.lakeops-probe-{uuid.uuid4().hex}"
        try:
            fs.pipe_file(probe, b"probe", mode="create")
            try:
                fs.pipe_file(probe, b"probe-again", mode="create")
                honoured = False
            except FileExistsError:
                honoured = True
            except OSError as exc:
                honoured = "precondition" in str(exc).lower() or "412" in str(exc)
        finally:
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(probe)
        if not honoured:
            raise StoreRefusedError(
                f"the store behind {directory} does not honour conditional creates "
                "(If-None-Match), so two writers could both publish the same snapshot; "
                "configure a commit lock: catalog options {'lock.enabled': 'true', "
                "'lock.type': 'postgres', 'lock.postgres.dsn': …} (or 'sqlite' on one host)"
            )
        self._probed.add(directory)

    def publish(self, fs: Any, path: str, data: bytes) -> bool:
        if not data:
            raise ConfigurationError("refusing to publish an empty object (not exclusive on S3)")
        self._probe(fs, path.rsplit("/", 1)[0])
        try:
            fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        except OSError as exc:
            if "precondition" in str(exc).lower() or "412" in str(exc):
                return False
            raise
        fs.invalidate_cache(path)
        return bytes(fs.cat_file(path)) == data  # another creator slipped through: we lost


class LockedPublish(PublishStrategy):
    """Any store: check-then-write while holding a fenced lock."""

    def __init__(self, lock: Lock) -> None:
        self.lock = lock

    def publish(self, fs: Any, path: str, data: bytes) -> bool:
        key = path.rsplit("/", 1)[0]
        lease = self.lock.acquire(key)
        try:
            fs.invalidate_cache(path)
            if fs.exists(path):
                return False
            if not self.lock.is_held(lease):
                raise LockUnavailableError(
                    f"the commit lock for {key!r} expired before publishing; "
                    "nothing was published (raise lock.expire-time-ms)"
                )
            if _is_local(fs):  # its first file (schema-0): the directory is created under the lock
                fs.makedirs(key, exist_ok=True)
            try:
                fs.pipe_file(path, data)
            except BaseException:
                # a store that shows files while they are written (local disk, HDFS) may hold
                # a partial snapshot: it was created under the lock, so it is ours to remove.
                # (An object store's put is whole or absent: what landed stays.)
                if _shows_partial_files(fs):
                    with contextlib.suppress(OSError):
                        fs.rm_file(path)
                raise
            return True
        finally:
            self.lock.release(lease)


def _is_local(fs: Any) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return any(p in ("file", "local") for p in protocols)


def _shows_partial_files(fs: Any) -> bool:
    """Whether a file being written is visible under its name on this store."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return any(p in ("file", "local", "hdfs", "viewfs") for p in protocols)
