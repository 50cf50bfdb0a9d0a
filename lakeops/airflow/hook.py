"""``LakeopsHook``: the ``lakeops`` connection type, and the catalog it opens.

A connection holds everything needed to reach a warehouse, so DAG code holds none of it::

    AIRFLOW_CONN_LAKEOPS_DEFAULT='{
      "conn_type": "lakeops",
      "host": "s3://bucket/warehouse",              # or extra.warehouse; a local path works too
      "login": "AKIA…", "password": "…",            # S3 key/secret (optional)
      "extra": {
        "storage_options": {"client_kwargs": {"endpoint_url": "http://minio:9000"}},
        "catalog_options": {"lock.enabled": "true", "lock.type": "postgres",
                            "lock.postgres.dsn": "postgresql://…"},
        "spark_master": "spark://spark-master:7077",   # default master of Spark-backed operators
        "spark_conf": {"spark.executor.memory": "2g"}
      }
    }'

``login``/``password`` become the ``key``/``secret`` storage options (the names s3fs uses). Every
credential (password, secret-like storage options, the lock DSN, ``spark_conf`` entries such as
``spark.hadoop.fs.s3a.secret.key``) is registered with Airflow's secrets masker as soon as the
connection is read, so it never shows in task logs; Spark-backed operators hand the
``spark_conf`` credentials to ``spark-submit`` in a private properties file, never its command
line (:mod:`lakeops.spark.submit`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from airflow.sdk import BaseHook

from lakeops import AnyTable, Catalog
from lakeops.airflow.connection import ConnectionConfig, parse_connection
from lakeops.errors import TableNotFoundError
from lakeops.format.identifiers import closest_identifiers
from lakeops.redact import is_secret_key, redact_text, register_secret

__all__ = ["LakeopsHook"]

_SECRET_WORDS = ("secret", "password", "token", "key", "dsn", "credential")


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def _mask(values: Mapping[str, Any]) -> None:
    from airflow.sdk.log import mask_secret

    for name, value in values.items():
        if isinstance(value, Mapping):
            _mask(value)
        elif _is_secret(name) and value not in (None, ""):
            mask_secret(str(value))


class LakeopsHook(BaseHook):
    """Opens the lakeops :class:`~lakeops.Catalog` (and tables) a connection points at.

    Args:
        lakeops_conn_id: the Airflow connection id (type ``lakeops``).
    """

    conn_name_attr = "lakeops_conn_id"
    default_conn_name = "lakeops_default"
    conn_type = "lakeops"
    hook_name = "lakeops"

    def __init__(self, lakeops_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lakeops_conn_id = lakeops_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """How the connection form looks in the Airflow UI."""
        return {
            "hidden_fields": ["schema", "port"],
            "relabeling": {
                "host": "Warehouse (path or URI)",
                "login": "S3 access key (optional)",
                "password": "S3 secret key (optional)",
            },
            "placeholders": {
                "host": "s3://bucket/warehouse",
                "extra": json.dumps(
                    {
                        "storage_options": {"client_kwargs": {"endpoint_url": "http://host:9000"}},
                        "catalog_options": {"lock.enabled": "true", "lock.type": "postgres"},
                        "spark_master": "local[*]",
                    }
                ),
            },
        }

    @cached_property
    def connection(self) -> ConnectionConfig:
        """The connection as :func:`~lakeops.airflow.connection.parse_connection` reads it;
        its credentials are registered with Airflow's secrets masker on first access."""
        config = parse_connection(self.get_connection(self.lakeops_conn_id), self.lakeops_conn_id)
        _mask(config.storage_options)
        _mask(config.catalog_options)
        for key, value in config.spark_conf.items():  # e.g. spark.hadoop.fs.s3a.secret.key
            if is_secret_key(key):
                register_secret(value)
        return config

    @property
    def config(self) -> dict[str, Any]:
        """``warehouse``, ``storage_options``, ``catalog_options``, ``spark_master``,
        ``spark_conf`` and ``spark_log_level`` of :attr:`connection`, as a dict (copies)."""
        c = self.connection
        return {
            "warehouse": c.warehouse,
            "storage_options": dict(c.storage_options),
            "catalog_options": dict(c.catalog_options),
            "spark_master": c.spark_master,
            "spark_conf": dict(c.spark_conf),
            "spark_log_level": c.spark_log_level,
        }

    @property
    def warehouse(self) -> str:
        return self.connection.warehouse

    @property
    def storage_options(self) -> dict[str, Any]:
        return dict(self.connection.storage_options)

    @property
    def catalog_options(self) -> dict[str, str]:
        return dict(self.connection.catalog_options)

    def get_conn(self) -> Catalog:
        """The catalog (Airflow's name for "the client")."""
        return self.get_catalog()

    def get_catalog(self) -> Catalog:
        """A :class:`~lakeops.Catalog` on the connection's warehouse."""
        return self.connection.catalog()

    def get_table(self, identifier: str) -> AnyTable:
        """Table ``identifier`` (``database.table``). A missing table's
        :class:`~lakeops.errors.TableNotFoundError` names the closest tables of the warehouse
        ("did you mean demo.orders?"), else the tables there are, as the CLI does."""
        try:
            table = self.get_catalog().get_table(identifier)
        except TableNotFoundError as exc:
            raise TableNotFoundError(f"{exc} — {self._table_hint(identifier)}") from exc
        return table

    def _table_hint(self, identifier: str) -> str:
        existing = self.list_tables()
        close = closest_identifiers(identifier, existing)
        if close:
            return "did you mean " + " or ".join(close) + "?"
        if not existing:
            return f"connection {self.lakeops_conn_id!r} points at a warehouse with no tables"
        shown = ", ".join(existing[:10]) + (", …" if len(existing) > 10 else "")
        return f"the tables of connection {self.lakeops_conn_id!r} are: {shown}"

    def list_tables(self) -> list[str]:
        """Every ``database.table`` in the warehouse."""
        catalog = self.get_catalog()
        return [f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db)]

    def test_connection(self) -> tuple[bool, str]:
        """The UI's "Test" button: lists the warehouse's databases."""
        try:
            databases = self.get_catalog().list_databases()
        except Exception as exc:  # a library's message may quote a URI or DSN: redacted
            return False, redact_text(str(exc))
        return True, f"warehouse reachable, {len(databases)} database(s)"
