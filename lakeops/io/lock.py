"""Commit locks with expiry and fencing, for stores without an atomic create.

A lock guards one key (a table's snapshot directory). ``acquire`` returns a :class:`Lease` with a
*fencing token* that grows with every grant; a lease expires after ``ttl_ms`` so a crashed holder
cannot block the table forever. Before publishing, the committer re-checks its lease
(``is_held``): a writer whose lease expired — and was taken over — must not publish.

* :class:`SQLiteLock` — a SQLite database on the local disk: one host, many processes.
* :class:`PostgresLock` — a PostgreSQL table (``psycopg``): many hosts.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from lakeops.errors import CommitError, ConfigurationError
from lakeops.redact import redact_text

__all__ = ["Lease", "Lock", "PostgresLock", "SQLiteLock", "create_lock"]


@dataclass(frozen=True)
class Lease:
    """A granted lock: who holds which key, with which fencing token, until when."""

    key: str
    owner: str
    token: int
    expires_ms: int


def _now_ms() -> int:
    return int(time.time() * 1000)


class Lock(ABC):
    """A lock service."""

    def __init__(self, ttl_ms: int = 60_000, wait_ms: int = 120_000) -> None:
        self.ttl_ms = ttl_ms
        self.wait_ms = wait_ms

    def acquire(self, key: str) -> Lease:
        """Take ``key``, waiting (with jittered backoff) up to ``wait_ms``."""
        owner = f"{os.getpid()}-{uuid.uuid4().hex}"
        deadline = _now_ms() + self.wait_ms
        pause = 0.005
        while True:
            lease = self._try_acquire(key, owner)
            if lease is not None:
                return lease
            if _now_ms() > deadline:
                raise CommitError(
                    f"could not take the commit lock for {key!r} within "
                    f"{self.wait_ms} ms; is another writer stuck?"
                )
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.2)

    @abstractmethod
    def _try_acquire(self, key: str, owner: str) -> Lease | None:
        """Grant the key if it is free or its lease expired; None otherwise."""

    @abstractmethod
    def is_held(self, lease: Lease) -> bool:
        """Whether ``lease`` is still the current, unexpired grant of its key."""

    @abstractmethod
    def release(self, lease: Lease) -> None:
        """Give the key back (no effect if the lease was taken over)."""

    def __getstate__(self) -> dict[str, Any]:  # connections are per process
        state = dict(self.__dict__)
        state.pop("_conn", None)
        return state


class SQLiteLock(Lock):
    """A lock table in a SQLite file (``lock.sqlite.path``): processes of one host."""

    def __init__(self, path: str, ttl_ms: int = 60_000, wait_ms: int = 120_000) -> None:
        super().__init__(ttl_ms, wait_ms)
        self.path = path

    def _db(self) -> sqlite3.Connection:
        conn = self.__dict__.get("_conn")
        if conn is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS lakeops_locks (key TEXT PRIMARY KEY, "
                "owner TEXT NOT NULL, token INTEGER NOT NULL, expires_ms INTEGER)"
            )
            self.__dict__["_conn"] = conn
        return conn

    def _try_acquire(self, key: str, owner: str) -> Lease | None:
        db = self._db()
        now = _now_ms()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT owner, token, expires_ms FROM lakeops_locks WHERE key = ?", (key,)
            ).fetchone()
            if row is not None and row[2] > now:
                db.execute("ROLLBACK")
                return None
            token = (row[1] + 1) if row is not None else 1
            db.execute(
                "INSERT OR REPLACE INTO lakeops_locks VALUES (?, ?, ?, ?)",
                (key, owner, token, now + self.ttl_ms),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return Lease(key, owner, token, now + self.ttl_ms)

    def is_held(self, lease: Lease) -> bool:
        row = (
            self._db()
            .execute(
                "SELECT owner, token, expires_ms FROM lakeops_locks WHERE key = ?", (lease.key,)
            )
            .fetchone()
        )
        return (
            row is not None
            and row[0] == lease.owner
            and row[1] == lease.token
            and row[2] > _now_ms()
        )

    def release(self, lease: Lease) -> None:
        self._db().execute(
            "UPDATE lakeops_locks SET expires_ms = 0 WHERE key = ? AND owner = ? AND token = ?",
            (lease.key, lease.owner, lease.token),
        )


class PostgresLock(Lock):
    """A lock table in PostgreSQL (``lock.postgres.dsn``): many hosts."""

    def __init__(self, dsn: str, ttl_ms: int = 60_000, wait_ms: int = 120_000) -> None:
        super().__init__(ttl_ms, wait_ms)
        self.dsn = dsn

    def __repr__(self) -> str:  # never show the DSN: it may hold a password
        return "PostgresLock(...)"

    def _db(self) -> Any:
        conn = self.__dict__.get("_conn")
        if conn is None:
            try:
                import psycopg
            except ImportError:
                raise ConfigurationError(
                    "lock.type 'postgres' needs psycopg: pip install 'lakeops[postgres]'"
                ) from None
            try:
                conn = psycopg.connect(self.dsn, autocommit=True)
            except psycopg.Error as exc:
                # psycopg may quote the DSN (password included) in its message
                raise CommitError(
                    "cannot connect to the lock database of 'lock.postgres.dsn': "
                    f"{redact_text(str(exc)).strip()}"
                ) from None
            conn.execute(
                "CREATE TABLE IF NOT EXISTS lakeops_locks (key TEXT PRIMARY KEY, "
                "owner TEXT NOT NULL, token BIGINT NOT NULL, expires_ms BIGINT)"
            )
            self.__dict__["_conn"] = conn
        return conn

    def _try_acquire(self, key: str, owner: str) -> Lease | None:
        now = _now_ms()
        row = (
            self._db()
            .execute(
                "INSERT INTO lakeops_locks AS l VALUES (%s, %s, 1, %s) ON CONFLICT (key) DO UPDATE "
                "SET owner = EXCLUDED.owner, token = l.token + 1, expires_ms = EXCLUDED.expires_ms "
                "WHERE l.expires_ms <= %s RETURNING token",
                (key, owner, now + self.ttl_ms, now),
            )
            .fetchone()
        )
        return None if row is None else Lease(key, owner, int(row[0]), now + self.ttl_ms)

    def is_held(self, lease: Lease) -> bool:
        row = (
            self._db()
            .execute(
                "SELECT owner, token, expires_ms FROM lakeops_locks WHERE key = %s", (lease.key,)
            )
            .fetchone()
        )
        return (
            row is not None
            and row[0] == lease.owner
            and int(row[1]) == lease.token
            and int(row[2]) > _now_ms()
        )

    def release(self, lease: Lease) -> None:
        self._db().execute(
            "UPDATE lakeops_locks SET expires_ms = 0 WHERE key = %s AND owner = %s AND token = %s",
            (lease.key, lease.owner, lease.token),
        )


def create_lock(options: dict[str, str]) -> Lock | None:
    """The lock the catalog options ask for (``lock.enabled``, ``lock.type``), or None."""
    enabled = str(options.get("lock.enabled", "false")).lower() == "true"
    kind = str(options.get("lock.type", "sqlite" if enabled else "")).lower()
    if not enabled and not options.get("lock.type"):
        return None
    ttl = int(options.get("lock.expire-time-ms", 60_000))
    wait = int(options.get("lock.acquire-timeout-ms", 120_000))
    if kind == "sqlite":
        path = options.get("lock.sqlite.path") or os.path.join(
            os.path.expanduser("~"), ".lakeops", "locks.sqlite"
        )
        return SQLiteLock(path, ttl, wait)
    if kind in ("postgres", "postgresql", "jdbc"):
        dsn = options.get("lock.postgres.dsn")
        if not dsn:
            raise ConfigurationError(
                "lock.type 'postgres' needs 'lock.postgres.dsn', e.g. "
                "'postgresql://user:secret@db-host:5432/lakeops'"
            )
        return PostgresLock(dsn, ttl, wait)
    raise ConfigurationError(
        f"lock.type {kind!r} is unknown; use 'sqlite' (one host) or 'postgres' (many hosts)"
    )
