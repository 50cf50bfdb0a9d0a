"""Exclusive publication of a file: one interface, a strategy per store.

``publish(path, data, fence) -> bool`` creates ``path`` with ``data`` only if it does not exist
yet, atomically: True if this call created it, False if another writer had it first. Readers
never see a partial file, and the final name is only ever made by one atomic step (a link, a
rename, a conditional put or a copy), never by writing it in place, so a writer killed at any
point leaves either no file under the final name or the whole one.

``fence`` (optional) is called immediately before that atomic step and raises to stop it: a
locked publish re-checks its lease there (see :class:`LockedPublish`).

* :class:`LinkPublish` — local disk: write a temporary file, ``os.link`` it to the final name
  (fails if the name exists), remove the temporary name.
* :class:`RenamePublish` — HDFS: write a temporary file, rename it without overwrite (the
  NameNode refuses an existing destination).
* :class:`ConditionalPutPublish` — object stores that honour ``If-None-Match: *``. The store is
  probed once per directory and process: a second conditional create of a probe object must
  fail. A store that ignores the condition is refused (configure a lock) rather than corrupted.
  After a win the object is read back, so an emulator that lets two creators through is caught.
* :class:`LockedPublish` — any store with a lock (``lock.enabled``): while holding a lease, check
  that the name is free, then publish with the store's own exclusive step, the lease re-checked
  (its fencing token) immediately before it; on an object store that ignores conditional
  creates, :class:`FencedCopyPublish`.
* :class:`FencedCopyPublish` — only under a lock, on a store without an exclusive create: write
  a temporary object, re-check the lease and that the name is free, copy, read back.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from lakeops.errors import CommitError, ConfigurationError, LockUnavailableError
from lakeops.io.lock import Lease, Lock

__all__ = [
    "ConditionalPutPublish",
    "FencedCopyPublish",
    "Fence",
    "LinkPublish",
    "LockedPublish",
    "ObjectStoreExclusive",
    "PublishStrategy",
    "RenamePublish",
    "StoreRefusedError",
]

#: called immediately before the step that makes the final name; raises to stop the publish
Fence = Callable[[], None]


def _no_fence() -> None:
    """The fence of an unlocked publish: nothing to re-check."""


class StoreRefusedError(CommitError):
    """The store does not honour conditional creates and no lock is configured."""


class PublishStrategy(ABC):
    """Creates a file exclusively (see the module docstring)."""

    @abstractmethod
    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        """True if this call created ``path``; False if it already existed. ``fence`` runs
        immediately before the step that creates the final name."""


def _temporary(path: str) -> str:
    """A unique hidden name beside ``path`` (readers list only ``snapshot-<n>``-style names)."""
    directory, name = path.rsplit("/", 1)
    return f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"


class LinkPublish(PublishStrategy):
    """Local disk: temporary file + ``os.link``."""

    def publish(self, _fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = _temporary(path)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            fence()
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:  # a full disk or a refused fence: no temporary file is left behind
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class RenamePublish(PublishStrategy):
    """HDFS: temporary file + rename without overwrite.

    ``rename(src, dst)`` is the client's rename that fails (returns False or raises) when ``dst``
    exists — hdfs-native's ``rename(src, dst, overwrite=False)``. Never fsspec's ``mv`` (which
    overwrites, or ignores the NameNode's refusal).
    """

    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        tmp = _temporary(path)
        try:
            with fs.open(tmp, "wb") as f:
                f.write(data)
            fence()
        except BaseException:  # a full disk or a refused fence: no temporary file is left
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
        self._probed: dict[str, bool] = {}

    def honours(self, fs: Any, directory: str) -> bool:
        """Whether the store behind ``directory`` refuses a second conditional create (probed
        once per directory and process)."""
        known = self._probed.get(directory)
        if known is not None:
            return known
        probe = f"{directory}/.lakeops-probe-{uuid.uuid4().hex}"
        try:
            fs.pipe_file(probe, b"probe", mode="create")
            try:
                fs.pipe_file(probe, b"probe-again", mode="create")
                honoured = False
            except FileExistsError:
                honoured = True
            except OSError as exc:
                honoured = _precondition_failed(exc)
        finally:
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(probe)
        self._probed[directory] = honoured
        return honoured

    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        if not data:
            raise ConfigurationError("refusing to publish an empty object (not exclusive on S3)")
        directory = path.rsplit("/", 1)[0]
        if not self.honours(fs, directory):
            raise StoreRefusedError(
                f"the store behind {directory} does not honour conditional creates "
                "(If-None-Match), so two writers could both publish the same snapshot; "
                "configure a commit lock: catalog options {'lock.enabled': 'true', "
                "'lock.type': 'postgres', 'lock.postgres.dsn': …} (or 'sqlite' on one host)"
            )
        fence()
        try:
            fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        except OSError as exc:
            if _precondition_failed(exc):
                return False
            raise
        return _read_back(fs, path, data)  # another creator slipped through: we lost


class FencedCopyPublish(PublishStrategy):
    """A store without an exclusive create, under a lock only: temporary object, then (the
    lease and the free name re-checked) one server-side copy, then a read-back.

    The payload travels before the fence, so what remains after it is one short copy request.
    That request is the residual window: a holder whose lease expires while its copy is in
    flight cannot be stopped by any check on its side (the store has no condition to refuse
    it). The read-back catches a copy that lost to another one, not one that lands later."""

    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        tmp = _temporary(path)
        try:
            fs.pipe_file(tmp, data)
            fence()
            fs.invalidate_cache(path)
            if fs.exists(path):
                return False
            fs.copy(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                fs.rm_file(tmp)
        return _read_back(fs, path, data)


class LockedPublish(PublishStrategy):
    """Any store: under a fenced lock, the name checked free, then the store's own exclusive
    step (``exclusive``) with the lease re-checked immediately before it.

    A holder whose lease expired (and was taken over) cannot publish: its fence raises
    :class:`LockUnavailableError` before the final name is made, and where the store has an
    exclusive create (a link, a rename without overwrite, a conditional put) a holder that
    passed its fence just before expiring still cannot replace a snapshot another holder
    published meanwhile: its create fails. The final name is never written in place, so a
    holder killed anywhere leaves no empty or partial snapshot."""

    def __init__(self, lock: Lock, exclusive: PublishStrategy) -> None:
        self.lock = lock
        self.exclusive = exclusive

    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        key = path.rsplit("/", 1)[0]
        lease = self.lock.acquire(key)
        try:
            fs.invalidate_cache(path)
            if fs.exists(path):
                return False

            def fenced() -> None:
                fence()
                self._fence(lease)

            return self.exclusive.publish(fs, path, data, fenced)
        finally:
            self.lock.release(lease)

    def _fence(self, lease: Lease) -> None:
        if not self.lock.is_held(lease):
            raise LockUnavailableError(
                f"the commit lock for {lease.key!r} expired before publishing (another writer "
                "may hold it now); nothing was published — raise 'lock.expire-time-ms' if "
                "commits take longer than the lease"
            )


class ObjectStoreExclusive(PublishStrategy):
    """Under a lock on an object store: the conditional put where the store honours it,
    else :class:`FencedCopyPublish`."""

    def __init__(self) -> None:
        self.conditional = ConditionalPutPublish()
        self.copy = FencedCopyPublish()

    def publish(self, fs: Any, path: str, data: bytes, fence: Fence = _no_fence) -> bool:
        if self.conditional.honours(fs, path.rsplit("/", 1)[0]):
            return self.conditional.publish(fs, path, data, fence)
        return self.copy.publish(fs, path, data, fence)


def _read_back(fs: Any, path: str, data: bytes) -> bool:
    """After this process's create of ``path`` succeeded: whether ``path`` holds ``data``. A
    file already gone was this create's and was removed since (a snapshot others built on and
    expiry removed while this writer paused): True, and the committer's check that the id was
    new decides what it was."""
    fs.invalidate_cache(path)
    try:
        return bytes(fs.cat_file(path)) == data
    except FileNotFoundError:
        return True


def _precondition_failed(exc: OSError) -> bool:
    return "precondition" in str(exc).lower() or "412" in str(exc)
