"""One reading of a ``lakeops`` connection (:mod:`lakeops.airflow.connection`), shared by the
hook and the UI plugin; and one identifier rule for the catalog, Asset URIs and task links."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.airflow.assets import parse_table_uri, table_uri
from lakeops.airflow.connection import ConnectionConfig, parse_connection
from lakeops.airflow.links import table_path
from lakeops.airflow.plugin import ConnectionUnavailable, _catalog_from_connection
from lakeops.format.identifiers import check_identifier

pytestmark = pytest.mark.airflow


class Conn:
    """The attributes of an Airflow ``Connection`` that lakeops reads."""

    def __init__(
        self,
        host: str | None = None,
        login: str | None = None,
        password: str | None = None,
        **extra: Any,
    ) -> None:
        self.host, self.login, self.password = host, login, password
        self.extra_dejson: Any = extra


def test_parse_connection_maps_every_field() -> None:
    conn = Conn(
        "s3://host-bucket/wh",
        "AKIA",
        "pw",
        warehouse="s3://extra-bucket/wh",
        storage_options={"secret": "explicit", "client_kwargs": {"region_name": "x"}},
        catalog_options={"lock.enabled": True, "lock.expire-time-ms": 5000},
        spark_master="spark://m:7077",
        spark_conf={"spark.executor.cores": 2},
    )
    assert parse_connection(conn, "c") == ConnectionConfig(
        warehouse="s3://extra-bucket/wh",  # extra.warehouse wins over host
        storage_options={
            "secret": "explicit",
            "client_kwargs": {"region_name": "x"},
            "key": "AKIA",
        },
        catalog_options={"lock.enabled": "True", "lock.expire-time-ms": "5000"},
        spark_master="spark://m:7077",
        spark_conf={"spark.executor.cores": "2"},
    )
    assert parse_connection(Conn("/wh"), "c") == ConnectionConfig(warehouse="/wh")


@pytest.mark.parametrize(
    ("conn", "words"),
    [
        (Conn(), "names no warehouse"),
        (Conn("/wh", storage_options=["key"]), "extra.storage_options must be a JSON object"),
        (Conn("/wh", catalog_options="lock.enabled=true"), "extra.catalog_options"),
        (Conn("/wh", spark_conf=3), "extra.spark_conf"),
    ],
)
def test_hook_and_plugin_refuse_the_same_connections(
    conn: Conn, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigurationError, match=words) as refused:
        parse_connection(conn, "conn-x")
    assert "conn-x" in str(refused.value)
    with pytest.raises(ConnectionUnavailable):  # the plugin: one line of its own, no details
        _catalog_from_connection(conn, "conn-x")
    from lakeops.airflow.hook import LakeopsHook

    hook = LakeopsHook("conn-x")
    monkeypatch.setattr(hook, "get_connection", lambda conn_id: conn)
    with pytest.raises(ConfigurationError, match=words):
        hook.get_catalog()


def test_hook_and_plugin_open_the_same_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakeops.airflow.hook import LakeopsHook

    conn = Conn(str(tmp_path), "AKIA", "pw", catalog_options={"lock.enabled": "false"})
    hook = LakeopsHook("conn-y")
    monkeypatch.setattr(hook, "get_connection", lambda conn_id: conn)
    by_hook, by_plugin = hook.get_catalog(), _catalog_from_connection(conn, "conn-y")
    assert by_hook.warehouse == by_plugin.warehouse == Catalog(str(tmp_path)).warehouse
    assert (
        by_hook.file_io._storage_options
        == by_plugin.file_io._storage_options
        == {
            "key": "AKIA",
            "secret": "pw",
        }
    )


IDENTIFIERS = [
    "db.orders",
    "db",
    "db.orders.x",
    ".orders",
    "db.",
    "my db.order items",
    "db. orders",
    "d\u200bb.t",
    "db.t$files",
    "a/b.c",
    "db.t\n",
    "\u00e9t\u00e9.\u65e5\u672c",
]


def _model(identifier: str) -> tuple[str, str] | None:
    """The rule: exactly two names around one '.', each a valid name on its own."""
    parts = identifier.split(".")
    if len(parts) != 2:
        return None
    try:
        return check_identifier("database", parts[0]), check_identifier("table", parts[1])
    except ConfigurationError:
        return None


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_catalog_assets_and_links_parse_identifiers_alike(tmp_path: Path, identifier: str) -> None:
    expected = _model(identifier)
    catalog = Catalog(str(tmp_path))
    calls = {
        "catalog": lambda: catalog.table_exists(identifier),
        "asset": lambda: table_uri("c", identifier),
        "link": lambda: table_path("c", identifier),
    }
    for name, call in calls.items():
        if expected is None:
            with pytest.raises(ConfigurationError):
                call()
        else:
            assert call() is not None, name
    if expected is not None:
        database, table = expected
        assert table_uri("c", identifier) == f"lakeops://c/{database}/{table}"
        assert parse_table_uri(table_uri("c", identifier)) == ("c", identifier)
