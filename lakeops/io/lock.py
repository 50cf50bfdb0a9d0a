"""Commit locks with expiry and fencing, for stores without an atomic create.

A lock guards one key (a table's snapshot directory). ``acquire`` returns a :class:`Lease` with a
*fencing token* that grows with every grant; a lease expires after ``ttl_ms`` so a crashed holder
cannot block the table forever. Before publishing, the committer re-checks its lease
(``is_held``): a writer whose lease expired — and was taken over — must not publish.

* :class:`SQLiteLock` — a SQLite database on the local disk: one host, many processes.
* :class:`PostgresLock` — a PostgreSQL table (``psycopg``): many hosts.
"""

from __future__ import annotations

import difflib
import os
import random
import re
import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lakeops.errors import (
    ConfigurationError,
    LakeopsError,
    LockUnavailableError,
)
from lakeops.redact import redact_text

__all__ = ["LOCK_OPTIONS", "Lease", "Lock", "PostgresLock", "SQLiteLock", "create_lock"]


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
            try:
                lease = self._try_acquire(key, owner)
            except LakeopsError:
                raise
            except Exception as exc:
                raise LockUnavailableError(
                    f"the commit lock service failed ({self._describe(exc)}); nothing was published"
                ) from None
            if lease is not None:
                return lease
            if _now_ms() > deadline:
                raise LockUnavailableError(
                    f"could not take the commit lock for {key!r} within "
                    f"{self.wait_ms} ms (catalog option 'lock.acquire-timeout-ms'); nothing "
                    "was published; is another writer stuck?"
                )
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.2)

    def check(self) -> None:
        """Connect to the lock service now (before a write writes any file): a
        :class:`LockUnavailableError` naming the catalog option if it cannot be reached."""
        try:
            self._db()
        except LakeopsError:
            raise
        except Exception as exc:
            raise LockUnavailableError(
                f"the commit lock cannot be reached ({self._describe(exc)}); nothing was "
                f"written: check the catalog option {self._option!r}"
            ) from None

    def _describe(self, exc: Exception) -> str:
        """``exc`` as text without a secret of the lock's address."""
        return f"{type(exc).__name__}: {exc}"

    _option = "lock.type"

    @abstractmethod
    def _db(self) -> Any:
        """The (cached) connection to the lock service."""

    @abstractmethod
    def _try_acquire(self, key: str, owner: str) -> Lease | None:
        """Grant the key if it is free or its lease expired; None otherwise."""

    #: the DB-API parameter placeholder of the lock service's driver ("?" or "%s")
    _param = "?"

    def is_held(self, lease: Lease) -> bool:
        """Whether ``lease`` is still the current, unexpired grant of its key."""
        p = self._param
        row = (
            self._db()
            .execute(
                f"SELECT owner, token, expires_ms FROM lakeops_locks WHERE key = {p}", (lease.key,)
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
        """Give the key back (no effect if the lease was taken over)."""
        p = self._param
        self._db().execute(
            f"UPDATE lakeops_locks SET expires_ms = 0 WHERE key = {p} AND owner = {p} "
            f"AND token = {p}",
            (lease.key, lease.owner, lease.token),
        )

    def __getstate__(self) -> dict[str, Any]:  # connections are per process
        state = dict(self.__dict__)
        state.pop("_conn", None)
        return state


class SQLiteLock(Lock):
    """A lock table in a SQLite file (``lock.sqlite.path``): processes of one host."""

    _option = "lock.sqlite.path"

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


class PostgresLock(Lock):
    """A lock table in PostgreSQL (``lock.postgres.dsn``): many hosts."""

    _param = "%s"

    def __init__(self, dsn: str, ttl_ms: int = 60_000, wait_ms: int = 120_000) -> None:
        super().__init__(ttl_ms, wait_ms)
        self.dsn = dsn

    _option = "lock.postgres.dsn"

    def __repr__(self) -> str:  # never show the DSN: it may hold a password
        return "PostgresLock(...)"

    def _describe(self, exc: Exception) -> str:
        text = str(exc)
        secrets = [self.dsn, urlsplit(self.dsn).password or ""]
        secrets += re.findall(r"password\s*=\s*(\S+)", self.dsn)
        for secret in sorted(filter(None, secrets), key=len, reverse=True):
            text = text.replace(secret, "***")
        return f"{type(exc).__name__}: {text}"

    def _db(self) -> Any:
        conn = self.__dict__.get("_conn")
        if conn is None:
            try:
                import psycopg
            except ImportError:
                raise ConfigurationError(
                    "lock.type 'postgres' needs psycopg: pip install 'lakeops[postgres]'"
                ) from None
            # an unreachable host fails in seconds, not after the TCP timeout (a DSN may say)
            timeout: dict[str, Any] = {"connect_timeout": 10}
            if "connect_timeout" in self.dsn:
                timeout = {}
            try:
                conn = psycopg.connect(self.dsn, autocommit=True, **timeout)
            except psycopg.Error as exc:
                # psycopg may quote the DSN (password included) in its message
                raise LockUnavailableError(
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


#: the catalog options of the commit lock, and what each holds
LOCK_OPTIONS = {
    "lock.enabled": "'true' or 'false' (true without lock.type: a SQLite lock)",
    "lock.type": "'sqlite' (one host) or 'postgres' (many hosts)",
    "lock.sqlite.path": "the SQLite file of a sqlite lock (default ~/.lakeops/locks.sqlite)",
    "lock.postgres.dsn": "the PostgreSQL connection string of a postgres lock",
    "lock.expire-time-ms": "how long a lease lasts, in ms (at least 1, default 60000)",
    "lock.acquire-timeout-ms": "how long a commit waits for the lock, in ms (at least 0, "
    "default 120000)",
}
_LOCK_TYPES = {"sqlite": "sqlite", "postgres": "postgres", "postgresql": "postgres",
               "jdbc": "postgres"}  # fmt: skip


def _lock_int(options: dict[str, str], key: str, default: int, low: int) -> int:
    text = str(options.get(key, default)).strip()
    if not re.fullmatch(r"[+-]?\d+", text) or int(text) < low or int(text) > 2**63 - 1:
        raise ConfigurationError(
            f"catalog option {key!r} = {options.get(key)!r} is invalid: it must be an integer "
            f"number of milliseconds, at least {low}; set e.g. {key!r} = '{default}' or "
            "remove it"
        )
    return int(text)


def create_lock(options: dict[str, str]) -> Lock | None:
    """The lock the catalog options ask for (``lock.enabled``, ``lock.type``), or None.

    Every ``lock.*`` option is parsed and checked here, when the catalog is created, so a
    misspelt key or type, a non-numeric timeout or a postgres lock without a DSN is a
    :class:`ConfigurationError` before anything is written. Nothing is connected to (and
    psycopg is not needed yet, so read-only users of the catalog need no driver):
    :meth:`Lock.check` connects before a write or compaction writes its first file.
    """
    unknown = sorted(k for k in options if k.startswith("lock.") and k not in LOCK_OPTIONS)
    if unknown:
        hints = {k: difflib.get_close_matches(k, list(LOCK_OPTIONS), n=1) for k in unknown}
        raise ConfigurationError(
            "; ".join(
                f"unknown catalog option {k!r}"
                + (f"; did you mean {hints[k][0]!r}?" if hints[k] else "")
                for k in unknown
            )
            + f" (the lock options are {', '.join(LOCK_OPTIONS)})"
        )
    enabled_text = str(options.get("lock.enabled", "false")).strip().lower()
    if enabled_text not in ("true", "false"):
        raise ConfigurationError(
            f"catalog option 'lock.enabled' = {options['lock.enabled']!r} is invalid: it must "
            "be 'true' or 'false'"
        )
    enabled = enabled_text == "true"
    ttl = _lock_int(options, "lock.expire-time-ms", 60_000, 1)
    wait = _lock_int(options, "lock.acquire-timeout-ms", 120_000, 0)
    given = str(options.get("lock.type", "")).strip().lower()
    if not enabled and not given:
        return None
    kind = _LOCK_TYPES.get(given or "sqlite")
    if kind is None:
        close = difflib.get_close_matches(given, list(_LOCK_TYPES), n=1)
        raise ConfigurationError(
            f"catalog option 'lock.type' = {options['lock.type']!r} is unknown"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + "; use 'sqlite' (one host) or 'postgres' (many hosts)"
        )
    if kind == "sqlite":
        path = str(options.get("lock.sqlite.path") or "").strip() or os.path.join(
            os.path.expanduser("~"), ".lakeops", "locks.sqlite"
        )
        return SQLiteLock(path, ttl, wait)
    dsn = str(options.get("lock.postgres.dsn") or "").strip()
    if not dsn:
        raise ConfigurationError(
            "lock.type 'postgres' needs 'lock.postgres.dsn', e.g. "
            "'postgresql://user:secret@db-host:5432/lakeops'"
        )
    return PostgresLock(dsn, ttl, wait)
