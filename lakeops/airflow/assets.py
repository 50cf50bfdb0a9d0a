"""Table Assets: ``lakeops://<conn_id>/<database>/<table>``.

One Asset per table, named by the Airflow connection that reaches its warehouse (never by the
storage path, which may carry account details), so a downstream DAG can be scheduled on
``table_asset("lakeops_default", "db.orders")`` and is triggered by every commit an operator
makes to that table.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult

from lakeops.errors import ConfigurationError
from lakeops.format.identifiers import check_identifier, parse_identifier

__all__ = ["ASSET_ALIAS", "SCHEME", "parse_table_uri", "sanitize_uri", "table_asset", "table_uri"]

SCHEME = "lakeops"
# operators attach their Asset events to this alias, so the table (often a templated, run-time
# value) need not be known when the DAG is parsed
ASSET_ALIAS = "lakeops-commits"


def table_uri(conn_id: str, identifier: str) -> str:
    """The Asset URI of table ``identifier`` (``db.table``, parsed by
    :func:`~lakeops.format.identifiers.parse_identifier`) reached through ``conn_id``; raises
    :class:`~lakeops.errors.ConfigurationError` for a malformed identifier or connection id."""
    database, table = parse_identifier(identifier)
    _check_conn_id(conn_id)
    return f"{SCHEME}://{conn_id}/{database}/{table}"


def _check_conn_id(conn_id: object) -> str:
    if not isinstance(conn_id, str) or not conn_id or "/" in conn_id:
        raise ConfigurationError(
            f"an Airflow connection id must be a non-empty string without '/', got {conn_id!r}"
        )
    return conn_id


def parse_table_uri(uri: str) -> tuple[str, str]:
    """``(conn_id, "db.table")`` of a table Asset URI; raises
    :class:`~lakeops.errors.ConfigurationError` (a ``ValueError``) for any other string."""
    prefix = f"{SCHEME}://"
    if not uri.startswith(prefix):
        raise ConfigurationError(f"not a lakeops table URI: {uri!r}")
    parts = uri[len(prefix) :].split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigurationError(
            f"a lakeops table URI is lakeops://<conn_id>/<database>/<table>, got {uri!r}"
        )
    conn_id, database, table = parts
    return conn_id, f"{check_identifier('database', database)}.{check_identifier('table', table)}"


def table_asset(conn_id: str, identifier: str) -> Any:
    """The ``airflow.sdk.Asset`` of a table."""
    from airflow.sdk import Asset

    return Asset(uri=table_uri(conn_id, identifier), name=f"{conn_id}:{identifier}")


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's Asset URI handler for the ``lakeops`` scheme: rejects malformed URIs."""
    if not uri.netloc:
        raise ConfigurationError("a lakeops Asset URI needs the connection id as its host")
    segments = [s for s in uri.path.split("/") if s]
    if len(segments) != 2 or uri.query or uri.fragment:
        raise ConfigurationError("a lakeops Asset URI is lakeops://<conn_id>/<database>/<table>")
    return uri
