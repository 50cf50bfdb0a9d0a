"""The provider: entry point and metadata, connection and hook, Asset URIs, and the
environment (pyspark not clobbered by pyspark-client)."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lakeops import Catalog
from lakeops.airflow.assets import parse_table_uri, sanitize_uri, table_asset, table_uri
from lakeops.airflow.hook import LakeopsHook
from tests.airflow.conftest import airflow_cli

pytestmark = pytest.mark.airflow


def test_pyspark_is_intact_next_to_airflow() -> None:
    import pyspark

    assert pyspark.__version__.startswith("4."), pyspark.__version__
    assert distribution("apache-airflow").version.startswith("3.")
    with pytest.raises(PackageNotFoundError):  # pulled by Airflow's Spark provider; overwrites
        distribution("pyspark-client")
    # the airflow extra's OpenLineage provider sits next to both without replacing either
    assert distribution("apache-airflow-providers-openlineage").version >= "2.20"


def test_provider_info_is_valid_and_registered() -> None:
    import airflow
    import jsonschema

    (ep,) = [
        e for e in entry_points(group="apache_airflow_provider") if e.module.startswith("lakeops")
    ]
    info = ep.load()()
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)
    assert info["connection-types"] == [
        {"connection-type": "lakeops", "hook-class-name": "lakeops.airflow.hook.LakeopsHook"}
    ]


@pytest.mark.slow
def test_airflow_lists_the_provider_and_connection_type() -> None:
    out = airflow_cli("providers", "list", "-o", "json")
    assert any(p["package_name"] == "lakeops" for p in json.loads(out))
    hooks = airflow_cli("providers", "hooks", "-o", "json")
    assert any(h.get("connection_type") == "lakeops" for h in json.loads(hooks))


def test_asset_uris() -> None:
    assert table_uri("lakeops_default", "db.orders") == "lakeops://lakeops_default/db/orders"
    assert parse_table_uri("lakeops://c/db/orders") == ("c", "db.orders")
    assert table_asset("c", "db.orders").uri == "lakeops://c/db/orders"
    for bad in ("db", "db.a.b", "a/b.c"):
        with pytest.raises(ValueError):
            table_uri("c", bad)
    for bad in ("lakeops:///db/t", "lakeops://c/db", "lakeops://c/db/t/x"):
        with pytest.raises(ValueError):
            sanitize_uri(urlsplit(bad))
    assert sanitize_uri(urlsplit("lakeops://c/db/t")).netloc == "c"


def test_hook_opens_the_catalog_and_masks_credentials(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    conn = {
        "conn_type": "lakeops",
        "host": str(catalog.warehouse),
        "login": "AKIAEXAMPLE",
        "password": "pa55-word-xyz",
        "extra": {
            "storage_options": {"client_kwargs": {"region_name": "eu-west-1"}},
            "catalog_options": {"lock.postgres.dsn": "postgresql://u:dsn-secret@h/db"},
            "spark_master": "spark://m:7077",
            "spark_conf": {
                "spark.hadoop.fs.s3a.secret.key": "spark-conf-secret-xyz",
                "spark.executor.memory": "2048m",
            },
        },
    }
    monkeypatch.setenv("AIRFLOW_CONN_WH", json.dumps(conn))
    hook = LakeopsHook("wh")
    catalog.create_table(
        "db.t",
        schema=__import__("pyarrow").schema([("id", "int64")]),
        primary_keys=["id"],
        options={"bucket": "1"},
    )
    assert hook.list_tables() == ["db.t"]
    assert hook.get_table("db.t").root == catalog.get_table("db.t").root
    assert hook.storage_options == {
        "client_kwargs": {"region_name": "eu-west-1"},
        "key": "AKIAEXAMPLE",
        "secret": "pa55-word-xyz",
    }
    assert hook.config["spark_master"] == "spark://m:7077"
    line = (
        "key AKIAEXAMPLE secret pa55-word-xyz and dsn postgresql://u:dsn-secret@h/db "
        "spark spark-conf-secret-xyz memory 2048m"
    )
    redacted = redact(line)
    for value in ("AKIAEXAMPLE", "pa55-word-xyz", "dsn-secret", "spark-conf-secret-xyz"):
        assert value not in redacted, redacted  # the access key and spark_conf: by lakeops
    assert "2048m" in redacted  # not a credential
    assert hook.test_connection()[0]


def test_hook_refuses_a_warehouse_uri_with_credentials_without_echoing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = {"conn_type": "lakeops", "host": "s3://AKIAINURI:uri-secret-value@bucket/wh"}
    monkeypatch.setenv("AIRFLOW_CONN_CRED", json.dumps(conn))
    ok, message = LakeopsHook("cred").test_connection()
    assert not ok and "storage options" in message
    assert "AKIAINURI" not in message and "uri-secret-value" not in message


def test_hook_without_a_warehouse_says_how_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_EMPTY", json.dumps({"conn_type": "lakeops"}))
    with pytest.raises(ValueError, match=r"extra\.warehouse"):
        LakeopsHook("empty").get_catalog()
