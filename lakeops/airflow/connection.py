"""The one reading of a ``lakeops`` Airflow connection: what :class:`LakeopsHook` and the UI
plugin both open a :class:`~lakeops.Catalog` from.

A connection names the warehouse in ``extra.warehouse`` or, failing that, its ``host``;
``extra.storage_options`` and ``extra.catalog_options`` become the catalog's storage and
catalog options; ``login``/``password`` become the ``key``/``secret`` storage options (the names
s3fs uses) unless the extra sets those; ``extra.spark_master``, ``extra.spark_conf`` and
``extra.spark_log_level`` (the level of Spark's log relayed to task logs: ``WARN`` unless set,
``INFO`` to see all of it) configure the Spark-backed operators. Reading is pure: masking
credentials in logs is the hook's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lakeops.catalog import Catalog
from lakeops.errors import ConfigurationError

__all__ = ["ConnectionConfig", "parse_connection"]


@dataclass(frozen=True)
class ConnectionConfig:
    """What a ``lakeops`` connection holds (see the module docstring)."""

    warehouse: str
    storage_options: dict[str, Any] = field(default_factory=dict)
    catalog_options: dict[str, str] = field(default_factory=dict)
    spark_master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_log_level: str = "WARN"

    def catalog(self) -> Catalog:
        """A :class:`~lakeops.Catalog` on the warehouse, with the storage and catalog options."""
        return Catalog(
            self.warehouse,
            storage_options=dict(self.storage_options),
            options=dict(self.catalog_options),
        )


def parse_connection(conn: Any, conn_id: str) -> ConnectionConfig:
    """Read connection ``conn_id`` (an Airflow ``Connection``: ``host``, ``login``,
    ``password``, ``extra_dejson``); raises :class:`~lakeops.errors.ConfigurationError` when it
    names no warehouse or an extra is not of the documented shape."""
    extra = conn.extra_dejson or {}
    if not isinstance(extra, dict):
        raise ConfigurationError(f"connection {conn_id!r}: its extra must be a JSON object")
    warehouse = extra.get("warehouse") or conn.host
    if not warehouse:
        raise ConfigurationError(
            f"connection {conn_id!r} names no warehouse: set its host (or extra.warehouse) to "
            "the warehouse path or URI, e.g. s3://bucket/warehouse"
        )
    storage = dict(_object(extra, "storage_options", conn_id))
    if conn.login:
        storage.setdefault("key", conn.login)
    if conn.password:
        storage.setdefault("secret", conn.password)
    spark_master = extra.get("spark_master")
    return ConnectionConfig(
        warehouse=str(warehouse),
        storage_options=storage,
        catalog_options=_strings(_object(extra, "catalog_options", conn_id)),
        spark_master=str(spark_master) if spark_master else None,
        spark_conf=_strings(_object(extra, "spark_conf", conn_id)),
        spark_log_level=_log_level(extra, conn_id),
    )


def _log_level(extra: dict[str, Any], conn_id: str) -> str:
    from lakeops.spark.submit import check_log_level

    try:
        return check_log_level(extra.get("spark_log_level") or "WARN")
    except ConfigurationError as exc:
        raise ConfigurationError(f"connection {conn_id!r}: extra.spark_log_level: {exc}") from None


def _object(extra: dict[str, Any], key: str, conn_id: str) -> dict[str, Any]:
    value = extra.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"connection {conn_id!r}: extra.{key} must be a JSON object, got {type(value).__name__}"
        )
    return value


def _strings(values: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in values.items()}
