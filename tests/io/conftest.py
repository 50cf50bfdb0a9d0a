"""Storage fixtures: one moto S3 server and (when available) one PostgreSQL per test session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.io.servers import make_bucket, moto_server, postgres_server, s3_options


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def s3_warehouse(s3_endpoint: str) -> tuple[str, dict]:
    """A fresh bucket; returns (warehouse URI, storage options)."""
    bucket = f"wh-{uuid.uuid4().hex[:12]}"
    make_bucket(s3_endpoint, bucket)
    return f"s3://{bucket}/warehouse", s3_options(s3_endpoint)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str | None]:
    with postgres_server() as dsn:
        yield dsn
