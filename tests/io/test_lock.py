"""Commit-lock options are checked when the catalog is created; a local SQLite lock creates
tables and commits; a lock that cannot be reached or taken leaves the table untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.errors import LockUnavailableError
from lakeops.io.lock import SQLiteLock

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lock.type": "postgress"}, r"'lock.type' = 'postgress' is unknown \(did you mean"),
        ({"lock.type": "sqlite", "lock.acquire-timeout-ms": "abc"}, "'lock.acquire-timeout-ms'"),
        ({"lock.enabled": "true", "lock.expire-time-ms": "0"}, "'lock.expire-time-ms'"),
        ({"lock.enabled": "true", "lock.acquire-timeout-ms": "-1"}, "at least 0"),
        ({"lock.enabled": "yes"}, "'lock.enabled'"),
        ({"lock.tpye": "sqlite"}, "did you mean 'lock.type'"),
        ({"lock.type": "postgres"}, "needs 'lock.postgres.dsn'"),
    ],
)
def test_lock_options_are_refused_when_the_catalog_is_created(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    before = tree(tmp_path)
    with pytest.raises(ConfigurationError, match=message):
        Catalog(str(tmp_path / "wh"), options=options)
    assert tree(tmp_path) == before


def test_local_sqlite_lock_creates_tables_and_commits(tmp_path: Path) -> None:
    catalog = Catalog(
        str(tmp_path / "wh"),
        options={"lock.type": "sqlite", "lock.sqlite.path": str(tmp_path / "locks.db")},
    )
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    table.write(pa.table({"id": [2], "v": ["c"]}))
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "c"},
    ]
    assert (tmp_path / "wh" / "db.db" / "t" / "snapshot" / "snapshot-2").is_file()


def _table(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [1], "v": ["a"]}))


def test_unreachable_lock_fails_before_anything_is_written(tmp_path: Path) -> None:
    _table(tmp_path)
    warehouse = tmp_path / "wh"
    before = tree(warehouse)
    dsn = "postgresql://user:s3cret-pw@127.0.0.1:9/lakeops?connect_timeout=2"
    catalog = Catalog(str(warehouse), options={"lock.type": "postgres", "lock.postgres.dsn": dsn})
    table = catalog.get_table("db.t")
    with pytest.raises(LockUnavailableError, match=r"lock\.postgres\.dsn") as err:
        table.write(pa.table({"id": [2], "v": ["b"]}))
    assert "s3cret-pw" not in str(err.value)
    with pytest.raises(LockUnavailableError):
        table.compact(full=True)
    assert tree(warehouse) == before


def test_lock_not_taken_in_time_leaves_no_manifest_behind(tmp_path: Path) -> None:
    """The lock is reachable but held by another writer: the commit gives up after
    'lock.acquire-timeout-ms', and its data files, manifests and manifest lists are gone."""
    _table(tmp_path)
    warehouse = tmp_path / "wh"
    locks = str(tmp_path / "locks.db")
    catalog = Catalog(
        str(warehouse),
        options={"lock.type": "sqlite", "lock.sqlite.path": locks, "lock.acquire-timeout-ms": "0"},
    )
    table = catalog.get_table("db.t")
    before = tree(warehouse)
    holder = SQLiteLock(locks, ttl_ms=600_000)
    lease = holder.acquire(str(warehouse / "db.db" / "t" / "snapshot"))
    try:
        with pytest.raises(LockUnavailableError, match=r"lock\.acquire-timeout-ms"):
            table.write(pa.table({"id": [2], "v": ["b"]}))
    finally:
        holder.release(lease)
    assert tree(warehouse) == before
    table.write(pa.table({"id": [2], "v": ["b"]}))  # once the lock is free the commit goes in
    assert table.read().num_rows == 2


def test_create_table_with_an_unusable_lock_creates_nothing(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    Catalog(str(warehouse)).create_database("db")
    before = tree(warehouse)
    dsn = "postgresql://user:pw@127.0.0.1:9/lakeops?connect_timeout=2"
    unreachable = Catalog(
        str(warehouse), options={"lock.type": "postgres", "lock.postgres.dsn": dsn}
    )
    with pytest.raises(LockUnavailableError):
        unreachable.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    locks = str(tmp_path / "locks.db")
    held = Catalog(
        str(warehouse),
        options={"lock.type": "sqlite", "lock.sqlite.path": locks, "lock.acquire-timeout-ms": "0"},
    )
    holder = SQLiteLock(locks, ttl_ms=600_000)
    lease = holder.acquire(str(warehouse / "db.db" / "t" / "schema"))
    try:
        with pytest.raises(LockUnavailableError):
            held.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    finally:
        holder.release(lease)
    assert tree(warehouse) == before
    assert held.create_table("db.t", schema=SCHEMA, primary_keys=["id"]).read().num_rows == 0
