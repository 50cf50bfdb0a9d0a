"""Storage errors say what failed — endpoint unreachable, credentials refused, bucket missing,
warehouse path missing — each its own error in the lakeops tree, within ten seconds by
default, naming the endpoint and never the secret."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lakeops import Catalog
from lakeops.errors import (
    BucketNotFoundError,
    StorageAccessDeniedError,
    StorageUnreachableError,
    WarehouseNotFoundError,
)
from lakeops.io.storage_errors import bounded_options
from tests.io.servers import free_port, moto_server_requiring_auth, s3_options

SECRET = "s3cr3t-never-shown"

CALLS: dict[str, Callable[[Catalog], Any]] = {
    "list_databases": lambda c: c.list_databases(),
    "get_table": lambda c: c.get_table("db.t"),
    "create_database": lambda c: c.create_database("db"),
}


def _options(endpoint: str) -> dict[str, Any]:
    return {**s3_options(endpoint), "secret": SECRET}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_an_unreachable_endpoint_is_named_within_ten_seconds(
    call: Callable[[Catalog], Any],
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there: connection refused
    started = time.monotonic()
    catalog = Catalog("s3://bucket-x/warehouse", storage_options=_options(endpoint))
    with pytest.raises(StorageUnreachableError) as failed:
        call(catalog)
    assert time.monotonic() - started < 10
    message = str(failed.value)
    assert endpoint in message and "unreachable" in message
    assert failed.value.endpoint == endpoint
    assert SECRET not in message and "does not exist" not in message


def test_a_missing_bucket_is_bucket_not_found(s3_endpoint: str) -> None:
    bucket = f"missing-{uuid.uuid4().hex[:12]}"
    catalog = Catalog(f"s3://{bucket}/warehouse", storage_options=_options(s3_endpoint))
    for call in CALLS.values():
        if call is CALLS["create_database"]:
            continue  # creating writes into the bucket: a plain storage error, tested below
        with pytest.raises(BucketNotFoundError) as missing:
            call(catalog)
        message = str(missing.value)
        assert bucket in message and s3_endpoint in message and SECRET not in message
        assert isinstance(missing.value, WarehouseNotFoundError)


def test_an_existing_bucket_with_an_empty_prefix_is_an_empty_warehouse(
    s3_warehouse: tuple[str, dict],
) -> None:
    uri, storage = s3_warehouse
    assert Catalog(uri, storage_options=storage).list_databases() == []


def test_refused_credentials_are_access_denied() -> None:
    with moto_server_requiring_auth() as endpoint:
        catalog = Catalog("s3://bucket-x/warehouse", storage_options=_options(endpoint))
        for call in CALLS.values():
            started = time.monotonic()
            with pytest.raises(StorageAccessDeniedError) as refused:
                call(catalog)
            assert time.monotonic() - started < 10
            message = str(refused.value)
            assert endpoint in message and "credentials" in message
            assert SECRET not in message and "testing" not in message
            assert isinstance(refused.value, PermissionError)


def test_a_missing_local_warehouse_path_is_warehouse_not_found(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "no-such-warehouse"))
    with pytest.raises(WarehouseNotFoundError) as missing:
        catalog.list_databases()
    assert not isinstance(missing.value, BucketNotFoundError)
    assert "check the path" in str(missing.value)


def test_bounds_are_defaults_the_storage_options_override() -> None:
    bounded = bounded_options("s3", {"key": "k"})
    assert bounded["config_kwargs"]["connect_timeout"] == 2
    assert bounded["config_kwargs"]["retries"]["max_attempts"] == 2
    mine = {"config_kwargs": {"connect_timeout": 30, "retries": {"max_attempts": 9}}}
    assert bounded_options("s3", mine)["config_kwargs"] == mine["config_kwargs"]
    assert "config_kwargs" not in bounded_options("gcs", {})
