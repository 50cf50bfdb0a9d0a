"""``LakeopsTableLink``: the "lakeops table" button of a task, opening the table's health page.

An operator that works on a table pushes the XCom :data:`XCOM_KEY` with
:func:`table_xcom_value` (``{"conn_id": …, "table": "db.table"}``) and lists
``LakeopsTableLink()`` in its ``operator_extra_links``. In Airflow 3 the worker calls
:meth:`LakeopsTableLink.get_link` when the task finishes — succeeded or failed — and stores the
link; the UI shows it as a button on the task instance. An operator that also records what it
pushed in its attribute :data:`PUSHED_ATTR` (the lakeops operators do) is answered from there:
a task that failed before pushing gets no link, and no XCom lookup (which Airflow's client
logs as an error, "XCom not found", when there is none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from airflow.sdk import BaseOperatorLink

from lakeops.format.identifiers import parse_identifier

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

__all__ = [
    "PLUGIN_URL_PREFIX",
    "PUSHED_ATTR",
    "XCOM_KEY",
    "LakeopsTableLink",
    "table_path",
    "table_xcom_value",
]

#: the XCom key an operator pushes the table it worked on under
XCOM_KEY = "lakeops_table"
#: the operator attribute holding the value it pushed under :data:`XCOM_KEY` (None: nothing
#: pushed yet); the link reads it instead of the XCom when the operator has it
PUSHED_ATTR = "lakeops_table_pushed"
#: where the plugin's FastAPI app is mounted on the API server
PLUGIN_URL_PREFIX = "/lakeops"


def table_xcom_value(conn_id: str, table: str) -> dict[str, str]:
    """The value operators push under :data:`XCOM_KEY` for table ``table`` (``db.table``)."""
    return {"conn_id": conn_id, "table": table}


def table_path(conn_id: str, table: str, base_path: str = "") -> str:
    """``<base_path>/lakeops/tables/<conn_id>/<db>/<table>`` with every segment URL-quoted;
    raises :class:`~lakeops.errors.ConfigurationError` (a ``ValueError``) if ``table`` is not a
    valid ``database.table`` (:func:`~lakeops.format.identifiers.parse_identifier`)."""
    database, name = parse_identifier(table)
    segments = "/".join(quote(s, safe="") for s in (conn_id, database, name))
    return f"{base_path.rstrip('/')}{PLUGIN_URL_PREFIX}/tables/{segments}"


def _base_path() -> str:
    """The path part of ``[api] base_url`` ('' when Airflow is served at the root)."""
    try:
        from airflow.sdk.configuration import conf

        base_url = conf.get("api", "base_url", fallback="") or ""
    except Exception:
        return ""
    return urlsplit(base_url).path.rstrip("/")


def _link_for(value: Any, base_path: str) -> str:
    """The link for an XCom value ('' unless it is a well-formed table reference)."""
    if not isinstance(value, dict):
        return ""
    conn_id, table = value.get("conn_id"), value.get("table")
    if not isinstance(conn_id, str) or not isinstance(table, str) or not conn_id:
        return ""
    try:
        return table_path(conn_id, table, base_path)
    except ValueError:
        return ""


class LakeopsTableLink(BaseOperatorLink):
    """Links a task instance to the health page of the table it worked on (read from the XCom
    :data:`XCOM_KEY` of that task instance); empty when the task pushed none."""

    name = "lakeops table"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        """``/lakeops/tables/<conn_id>/<db>/<table>`` (under the path of ``[api] base_url``),
        or ``""``."""
        if hasattr(operator, PUSHED_ATTR):  # the task that ran, in this worker
            value = getattr(operator, PUSHED_ATTR)
            return "" if value is None else _link_for(value, _base_path())
        from airflow.sdk.execution_time.xcom import XCom

        try:
            value = XCom.get_value(ti_key=ti_key, key=XCOM_KEY)
        except Exception:
            return ""
        return _link_for(value, _base_path())
