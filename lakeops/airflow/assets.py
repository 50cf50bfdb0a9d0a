"""Table Assets: ``lakeops://<conn_id>/<database>/<table>``.

One Asset per table, named by the Airflow connection that reaches its warehouse (never by the
storage path, which may carry account details), so a downstream DAG can be scheduled on
``table_asset("lakeops_default", "db.orders")`` and is triggered by every commit an operator
makes to that table.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult

__all__ = ["ASSET_ALIAS", "SCHEME", "parse_table_uri", "sanitize_uri", "table_asset", "table_uri"]

SCHEME = "lakeops"
# operators attach their Asset events to this alias, so the table (often a templated, run-time
# value) need not be known when the DAG is parsed
ASSET_ALIAS = "lakeops-commits"


def table_uri(conn_id: str, identifier: str) -> str:
    """The Asset URI of table ``identifier`` (``db.table``) reached through ``conn_id``."""
    database, _, table = identifier.partition(".")
    if not database or not table or "." in table or "/" in identifier or not conn_id:
        raise ValueError(f"expected a table identifier 'database.table', got {identifier!r}")
    return f"{SCHEME}://{conn_id}/{database}/{table}"


def parse_table_uri(uri: str) -> tuple[str, str]:
    """``(conn_id, "db.table")`` of a table Asset URI."""
    prefix = f"{SCHEME}://"
    if not uri.startswith(prefix):
        raise ValueError(f"not a lakeops table URI: {uri!r}")
    parts = uri[len(prefix) :].split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(
            f"a lakeops table URI is lakeops://<conn_id>/<database>/<table>, got {uri!r}"
        )
    return parts[0], f"{parts[1]}.{parts[2]}"


def table_asset(conn_id: str, identifier: str) -> Any:
    """The ``airflow.sdk.Asset`` of a table."""
    from airflow.sdk import Asset

    return Asset(uri=table_uri(conn_id, identifier), name=f"{conn_id}:{identifier}")


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's Asset URI handler for the ``lakeops`` scheme: rejects malformed URIs."""
    if not uri.netloc:
        raise ValueError("a lakeops Asset URI needs the connection id as its host")
    segments = [s for s in uri.path.split("/") if s]
    if len(segments) != 2 or uri.query or uri.fragment:
        raise ValueError("a lakeops Asset URI is lakeops://<conn_id>/<database>/<table>")
    return uri
