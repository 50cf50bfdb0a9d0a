"""The FastAPI app of the lakeops Airflow plugin: table-health pages inside the Airflow UI.

Mounted by ``plugins/lakeops_plugin.py`` under ``/lakeops`` on the Airflow API server:

* ``GET /lakeops/`` — the tables of every connection named in ``LAKEOPS_UI_CONN_IDS``
  (comma-separated; default ``lakeops_default``), one row of health figures per table
  (:func:`lakeops.health.index.render_lake_index_html`, figures of
  :func:`lakeops.health.summary.summarize_tables`: each table's latest snapshot and its
  manifests, the tables read in parallel); ``?sort=KEY&order=asc|desc`` sorts the rows (an
  unknown key or order falls back to the default, the most sorted runs first);
* ``GET /lakeops/tables/{conn_id}/{database}/{table}`` — the page of
  :func:`lakeops.health.view.render_table_html` (an append table's:
  :func:`lakeops.health.append_view.render_append_table_html`).

Every route requires an Airflow login: the caller is resolved by Airflow's own
``airflow.api_fastapi.core_api.security.get_user`` — a JWT as ``Authorization: Bearer …`` or
the UI's ``_token`` cookie — so anonymous requests get 401 and bad tokens 403.

Every route also requires permission: a connection's tables are shown only to users whom
Airflow's auth manager allows to read that connection
(``is_authorized_connection(method="GET", details=ConnectionDetails(conn_id, team))``, the check
Airflow's own ``GET /api/v2/connections/{id}`` makes). The index lists only the permitted
connections; a table page of a forbidden connection is 403, decided before the connection is
opened, so it reveals nothing about the connection (not even whether it exists). With the simple
auth manager that means the ``op`` and ``admin`` roles; ``viewer`` and ``user`` see an empty
index. A failing check denies.

Only the connections of ``LAKEOPS_UI_CONN_IDS`` can be opened (any other id is "not found"), and
pages never show the warehouse URI, storage options or credentials: errors are one line of our
own, never an exception message or traceback.

Handlers are plain ``def``: FastAPI runs them in its thread pool, so reading a table never
blocks the event loop. Airflow core modules are imported lazily, so loading the plugin in a
worker or the scheduler stays cheap.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from lakeops import Catalog
from lakeops.airflow.connection import parse_connection
from lakeops.errors import CatalogError, ConfigurationError, LakeopsError
from lakeops.health.append_view import render_append_table_html
from lakeops.health.index import DEFAULT_SORT, SORT_KEYS, IndexRow, render_lake_index_html
from lakeops.health.summary import summarize_tables
from lakeops.health.view import (
    check_partition,
    render_message_html,
    render_table_html,
)
from lakeops.table import primary_key_table

__all__ = [
    "CONN_IDS_ENV",
    "DEFAULT_CONN_ID",
    "ConnectionUnavailable",
    "app",
    "authenticated_user",
    "can_read_connection",
    "configured_conn_ids",
    "create_app",
    "open_catalog",
]

log = logging.getLogger(__name__)

#: environment variable listing the connection ids the UI may open (comma-separated)
CONN_IDS_ENV = "LAKEOPS_UI_CONN_IDS"
DEFAULT_CONN_ID = "lakeops_default"
#: snapshots charted on a table page
RECENT_SNAPSHOTS = 20

_SECURITY_HEADERS = {
    # the pages are static HTML + inline CSS/SVG: nothing else may load or run
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_bearer = HTTPBearer(auto_error=False)


class ConnectionUnavailable(LakeopsError):
    """A connection that is not allowed, not defined or names no warehouse."""


async def authenticated_user(
    request: Request,
    bearer_credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Any:
    """The logged-in Airflow user, resolved by Airflow's ``get_user`` (bearer JWT, else the
    ``_token`` cookie); raises 401 when there is no credential and 403 for an invalid one."""
    from airflow.api_fastapi.core_api.security import get_user

    # bind by role, not by name: the OAuth parameter is `oauth_token` in Airflow 3.3.1 and
    # `_oauth_token` in 3.3.2 (it only documents the login form; the bearer carries the token)
    kwargs: dict[str, Any] = {}
    for name, param in inspect.signature(get_user).parameters.items():
        if name == "request":
            kwargs[name] = request
        elif name == "bearer_credentials":
            kwargs[name] = bearer_credentials
        elif param.default is not inspect.Parameter.empty:
            kwargs[name] = None
    return await get_user(**kwargs)


def can_read_connection(user: Any, conn_id: str) -> bool:
    """Whether Airflow's auth manager lets ``user`` read connection ``conn_id`` (``GET``), with
    the connection's team where Airflow runs multi-team, as Airflow's own connection API asks.
    Any failure of the check (no auth manager, a database error) denies."""
    try:
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.models.resource_details import ConnectionDetails
        from airflow.configuration import conf

        team_name: str | None = None
        if conf.getboolean("core", "multi_team", fallback=False):
            from airflow.models.connection import Connection

            team_name = Connection.get_team_name(conn_id)
        return bool(
            get_auth_manager().is_authorized_connection(
                method="GET",
                details=ConnectionDetails(conn_id=conn_id, team_name=team_name),
                user=user,
            )
        )
    except Exception as exc:
        log.warning("lakeops: permission check for connection %r failed: %s", conn_id, type(exc))
        return False


def configured_conn_ids() -> list[str]:
    """The connection ids of ``LAKEOPS_UI_CONN_IDS`` in order, without duplicates."""
    raw = os.environ.get(CONN_IDS_ENV, DEFAULT_CONN_ID)
    ids: list[str] = []
    for part in raw.split(","):
        conn_id = part.strip()
        if conn_id and conn_id not in ids:
            ids.append(conn_id)
    return ids


def _catalog_from_connection(conn: Any, conn_id: str = "") -> Catalog:
    """A catalog from a connection object, read by
    :func:`~lakeops.airflow.connection.parse_connection` as :class:`LakeopsHook` reads it."""
    try:
        config = parse_connection(conn, conn_id)
    except ConfigurationError as exc:
        raise ConnectionUnavailable("no warehouse") from exc
    return config.catalog()


def open_catalog(conn_id: str) -> Catalog:
    """The catalog of an allowed connection: through :class:`LakeopsHook` (the Task SDK), or,
    where the SDK cannot reach connections, through Airflow core's secrets backends.

    Raises :class:`ConnectionUnavailable` for an id outside ``LAKEOPS_UI_CONN_IDS``, an
    undefined connection or one without a warehouse.
    """
    if conn_id not in configured_conn_ids():
        raise ConnectionUnavailable("not allowed")
    try:
        from lakeops.airflow.hook import LakeopsHook

        return LakeopsHook(lakeops_conn_id=conn_id).get_catalog()
    except Exception as exc:
        log.debug("lakeops: hook could not open %r (%s); trying Airflow core", conn_id, type(exc))
    try:
        from airflow.models.connection import Connection

        conn = Connection.get_connection_from_secrets(conn_id)
    except Exception as exc:
        raise ConnectionUnavailable("not defined") from exc
    try:
        return _catalog_from_connection(conn, conn_id)
    except ConnectionUnavailable:
        raise
    except Exception as exc:  # e.g. a warehouse URI no filesystem handles
        raise ConnectionUnavailable("unusable") from exc


def _html(body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status_code, headers=_SECURITY_HEADERS)


def _opener(catalog: Catalog, identifier: str) -> Callable[[], Any]:
    return lambda: catalog.get_table(identifier)


def _index(user: Any, sort: str | None = None, order: str | None = None) -> HTMLResponse:
    entries: list[tuple[str, str, Callable[[], Any]]] = []
    hrefs: dict[tuple[str, str], str] = {}
    notes: dict[str, str] = {}
    forbidden = 0
    for conn_id in configured_conn_ids():
        if not can_read_connection(user, conn_id):
            forbidden += 1  # not even named: the user may not read this connection
            continue
        try:
            catalog = open_catalog(conn_id)
            tables = [(db, t) for db in catalog.list_databases() for t in catalog.list_tables(db)]
        except Exception as exc:
            log.warning("lakeops: cannot list tables of connection %r: %s", conn_id, type(exc))
            notes[conn_id] = "connection unavailable (not defined, or its warehouse unreadable)"
            continue
        for db, t in tables:
            identifier = f"{db}.{t}"
            hrefs[conn_id, identifier] = "tables/" + "/".join(
                quote(s, safe="") for s in (conn_id, db, t)
            )
            entries.append((conn_id, identifier, _opener(catalog, identifier)))
        if not tables:
            notes[conn_id] = "no tables"
    empty = (
        "No lakeops connection you may read: ask an Airflow admin for read access to the "
        "connections."
        if forbidden
        else "No lakeops connections configured."
    )
    rows = [
        IndexRow(summary, hrefs[summary.conn_id, summary.identifier])
        for summary in summarize_tables(entries)
    ]
    key, direction = DEFAULT_SORT
    if sort is not None and sort in SORT_KEYS:
        key, direction = sort, SORT_KEYS[sort].first_order
        if order == "asc":
            direction = "asc"
        elif order == "desc":
            direction = "desc"
    return _html(render_lake_index_html(rows, sort=key, order=direction, notes=notes, empty=empty))


def _partition_href(label: str) -> str:
    """The drill-down URL of a partition, relative to the table's page."""
    return "?" + urlencode({"partition": label})


def _table(
    user: Any, conn_id: str, database: str, table: str, partition: str | None = None
) -> HTMLResponse:
    identifier = f"{database}.{table}"
    not_found = f"No table {identifier!r} in lakeops connection {conn_id!r}."
    if not can_read_connection(user, conn_id):
        return _html(
            render_message_html(
                "Forbidden",
                f"Your Airflow role may not read connection {conn_id!r}, so its tables are "
                "not shown; ask an Airflow admin for read access to that connection.",
            ),
            403,
        )
    try:
        catalog = open_catalog(conn_id)
    except ConnectionUnavailable:
        return _html(
            render_message_html(
                "Not found", f"No lakeops connection {conn_id!r} is available to this page."
            ),
            404,
        )
    try:
        exists = catalog.table_exists(identifier)
    except ConfigurationError:  # not a valid database or table name
        exists = False
    except Exception as exc:
        log.warning("lakeops: cannot look up %s of %r: %s", identifier, conn_id, type(exc))
        exists = False
    if not exists:
        return _html(render_message_html("Not found", not_found), 404)
    try:
        tbl = catalog.get_table(identifier)
        if not tbl.schema.primary_keys:
            return _html(render_append_table_html(identifier, tbl, back_href="../../../"))
        tbl = primary_key_table(tbl, "health")
        health = tbl.health()
        if partition is not None:
            try:
                check_partition(health, tbl.options.partition_default_name, partition)
            except ConfigurationError as exc:
                return _html(render_message_html("Not found", f"{identifier}: {exc}"), 404)
        page = render_table_html(
            identifier,
            tbl,
            recent_snapshots=RECENT_SNAPSHOTS,
            back_href="../../../",
            health=health,
            partition=partition,
            partition_href=_partition_href,
        )
    except CatalogError:  # dropped meanwhile
        return _html(render_message_html("Not found", not_found), 404)
    except LakeopsError:  # unreadable or unsupported metadata; anything else is a bug: a 500
        log.exception("lakeops: rendering %s of %r failed", identifier, conn_id)
        return _html(render_message_html("Error", f"Table {identifier!r} could not be read."), 500)
    return _html(page)


def create_app() -> FastAPI:
    """The plugin's FastAPI app (routes, auth dependency, HTML error pages)."""
    api = FastAPI(
        title="lakeops tables",
        description="Health pages of lakeops (Apache Paimon) tables.",
        dependencies=[Depends(authenticated_user)],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @api.exception_handler(StarletteHTTPException)
    # FastAPI passes an exception handler (request, exc)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse:  # noqa: ARG001
        titles = {401: "Not logged in", 403: "Forbidden", 404: "Not found"}
        message = {
            401: "Log in to Airflow to see lakeops tables.",
            403: "Your Airflow login is not valid here; log in again.",
        }.get(exc.status_code, str(exc.detail) if exc.status_code < 500 else "Server error.")
        response = _html(
            render_message_html(titles.get(exc.status_code, "Error"), message), exc.status_code
        )
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @api.get("/", response_class=HTMLResponse, name="index")
    def index(
        user: Annotated[Any, Depends(authenticated_user)],
        sort: str | None = None,
        order: str | None = None,
    ) -> HTMLResponse:
        """Every table of every configured connection the user may read: one row of health
        figures per table with a link to its page, sorted by column ``sort`` in ``order``."""
        return _index(user, sort, order)

    @api.get("/tables/{conn_id}/{database}/{table}", response_class=HTMLResponse, name="table_page")
    def table_page(
        user: Annotated[Any, Depends(authenticated_user)],
        conn_id: str,
        database: str,
        table: str,
        partition: str | None = None,
    ) -> HTMLResponse:
        """The health page of ``database.table`` of connection ``conn_id`` (403 unless the user
        may read the connection); ``?partition=k=v/k2=v2`` draws every bucket of one partition
        (the drill-down of a large table's partition summary)."""
        return _table(user, conn_id, database, table, partition)

    return api


app = create_app()
