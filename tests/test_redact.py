"""Credentials stay out of messages and reprs: URI user-info and ``password=…`` are redacted,
a warehouse URI carrying a password is refused before anything sees it, and the lock
database's connection errors do not quote the DSN."""

from __future__ import annotations

import traceback

import pytest

from lakeops import Catalog
from lakeops.errors import CommitError, ConfigurationError
from lakeops.redact import is_secret_key, redact_text, redact_uri, uri_has_password

KEY, SECRET = "AKIAEXAMPLEKEY", "wJalr/XUtnFEMI@K7MDENG"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://AKIA:SECRET@bkt/wh", "s3://***@bkt/wh"),
        (f"at s3://{KEY}:{SECRET}@bkt/wh/db.db/t: gone", "at s3://***@bkt/wh/db.db/t: gone"),
        ("postgresql://u:pw@[bad", "postgresql://***@[bad"),
        ("a s3://k:s@x/y and gs://c:d@z/w", "a s3://***@x/y and gs://***@z/w"),
        ("host=h password=pw port=1", "host=h password=*** port=1"),
        ("password='a b' x", "password=*** x"),
        ("https://h/o?X-Amz-Signature=abc&v=1", "https://h/o?X-Amz-Signature=***&v=1"),
        ("hdfs://namenode:8020/wh and /tmp/a:b@c", "hdfs://namenode:8020/wh and /tmp/a:b@c"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_uri_has_password() -> None:
    assert uri_has_password(f"s3://{KEY}:{SECRET}@bkt/wh")
    assert uri_has_password("s3://AKIA:abc/def@bkt/wh")  # an unencoded "/" in the secret
    assert not uri_has_password("s3://bkt/wh")
    assert not uri_has_password("hdfs://user@namenode/wh")  # a user name is no credential
    assert not uri_has_password("/tmp/a:b@c/wh")
    assert redact_uri("hdfs://user@namenode/wh") == "hdfs://***@namenode/wh"


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("spark.hadoop.fs.s3a.secret.key", True),
        ("spark.hadoop.fs.s3a.access.key", True),
        ("spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net", True),
        ("spark.ssl.keyPassword", True),
        ("spark.authenticate.secret", True),
        ("spark.hadoop.fs.gs.auth.service.account.private.key", True),
        ("spark.some.apiKey", True),
        ("spark.hadoop.fs.s3a.session.token", True),
        ("spark.executor.memory", False),
        ("spark.io.encryption.keySizeBits", False),
        ("spark.kerberos.keytab", False),
        ("spark.ssl.keyStore", False),
        ("spark.sql.shuffle.partitions", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    "uri", [f"s3://{KEY}:{SECRET}@bkt/wh", f"memory://{KEY}:{SECRET}@bkt/wh", "file://u:pw-x@h/wh"]
)
def test_warehouse_uri_with_credentials_is_refused_unechoed(uri: str) -> None:
    with pytest.raises(ConfigurationError, match="storage options") as info:
        Catalog(uri)
    rendered = "".join(traceback.format_exception(info.value))
    for part in (KEY, SECRET, "pw-x"):
        assert part not in rendered
    assert "://***@" in str(info.value)


def test_postgres_lock_error_does_not_quote_the_dsn() -> None:
    pytest.importorskip("psycopg")
    from lakeops.io.lock import PostgresLock

    dsn = f"postgresql://lakeops:{SECRET}@[unbalanced/db"  # psycopg quotes this DSN back
    lock = PostgresLock(dsn, ttl_ms=1000, wait_ms=0)
    with pytest.raises(CommitError, match=r"lock\.postgres\.dsn") as info:
        lock._db()
    rendered = "".join(traceback.format_exception(info.value))
    assert SECRET not in rendered and SECRET not in repr(lock)
