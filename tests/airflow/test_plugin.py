"""The lakeops plugin on a real Airflow API server: Airflow's login guards every page, Airflow's
auth manager decides who sees which connection's tables, and headless Chromium draws the
table-health picture of a real table (checked against its splits).

One API server (SimpleAuthManager: an admin, an op and a viewer with known passwords) serves the
whole module.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from tests.airflow.conftest import airflow_cli, connection_json

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USER, PASSWORD = "admin", "lakeops-test-password"
#: SimpleAuthManager users by role: ``op`` and ``admin`` may read connections, ``viewer`` may not
ROLE_USERS = {"op": "op-user", "viewer": "viewer-user"}
SECRET = "s3cr3t-value"
DB_CONN = "lakeops_ui_db"  # a connection stored in the metadata database
MISSING_CONN = "lakeops_ui_missing"  # allowed by LAKEOPS_UI_CONN_IDS but never defined
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
EVIL = '<b>&"x'
START_TIMEOUT_S = 120.0


@dataclass
class Server:
    base: str
    warehouse: Path
    table: Table
    log: Path
    started_in_s: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(
    url: str, *, token: str | None = None, cookie: str | None = None
) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if cookie is not None:
        request.add_header("Cookie", f"_token={cookie}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(), dict(err.headers)


def _make_table(warehouse: Path) -> Table:
    """Two partitions (one hostile) by two buckets, three level-0 runs each, so the picture
    has several runs per bucket."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    for i in range(3):
        n = 40 + 30 * i
        table.write(
            pa.table(
                {
                    "dt": ["2024-01-01"] * n + [EVIL] * n,
                    "id": list(range(n)) * 2,
                    "v": [f"value-{i}" * 4] * (2 * n),
                },
                schema=SCHEMA,
            )
        )
    return table


def _wait_until_up(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"api-server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/v2/monitor/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"api-server not up after {START_TIMEOUT_S}s:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers (its own process group, started by this module)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("lakeops-ui")
    warehouse = root / "wh"
    warehouse.mkdir()
    table = _make_table(warehouse)
    passwords = root / "passwords.json"
    passwords.write_text(
        json.dumps({USER: PASSWORD, **{name: PASSWORD for name in ROLE_USERS.values()}})
    )
    conn = connection_json(warehouse, storage_options={"secret": SECRET})
    airflow_cli("connections", "add", DB_CONN, "--conn-json", conn)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = root / "api-server.log"
    env = {
        **os.environ,
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
            [f"{USER}:admin", *(f"{name}:{role}" for role, name in ROLE_USERS.items())]
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lakeops-test-jwt-secret-0123456789abcdef",
        "AIRFLOW__API__BASE_URL": base,
        "AIRFLOW_CONN_LAKEOPS_DEFAULT": conn,
        "LAKEOPS_UI_CONN_IDS": f"lakeops_default, {DB_CONN},{MISSING_CONN}",
    }
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "airflow"),
                "api-server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_up(proc, base, log)
        yield Server(base, warehouse, table, log, time.monotonic() - started)
    finally:
        _stop(proc)
        airflow_cli("connections", "delete", DB_CONN)


def _login(server: Server, username: str) -> str:
    """A JWT from the simple auth manager's ``POST /auth/token``."""
    body = json.dumps({"username": username, "password": PASSWORD}).encode()
    request = urllib.request.Request(
        f"{server.base}/auth/token",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        return str(json.loads(response.read())["access_token"])


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    """The admin's JWT."""
    return _login(server, USER)


def _expected(table: Table) -> dict[tuple[str, str], list[int]]:
    """(``dt=<value>``, bucket) → levels of the split's files, read from the table itself."""
    return {
        (f"dt={s.partition[0]}", str(s.bucket)): sorted(f.level for f in s.files)
        for s in table.splits()
    }


def test_server_started_in_time(server: Server) -> None:
    print(f"api-server answered after {server.started_in_s:.1f}s")
    assert server.started_in_s < START_TIMEOUT_S


@pytest.mark.parametrize(
    "path", ["/lakeops/", "/lakeops/tables/lakeops_default/db/t", "/lakeops/tables/x/db/nope"]
)
def test_anonymous_and_forged_requests_are_refused(server: Server, path: str) -> None:
    status, body, _ = _get(server.base + path)
    assert status in (401, 403)
    assert 'class="bucket"' not in body and "db.t" not in body
    status, body, _ = _get(server.base + path, token="not-a-jwt")
    assert status in (401, 403)
    assert 'class="bucket"' not in body
    status, body, _ = _get(server.base + path, cookie="not-a-jwt")
    assert status in (401, 403)
    assert 'class="bucket"' not in body


def test_bearer_token_and_cookie_both_work(server: Server, token: str) -> None:
    for kwargs in ({"token": token}, {"cookie": token}):
        status, body, headers = _get(f"{server.base}/lakeops/tables/lakeops_default/db/t", **kwargs)
        assert status == 200, body[-500:]
        assert body.count('class="bucket"') == len(server.table.splits())
        assert "default-src 'none'" in headers["content-security-policy"]


def test_browser_draws_the_lsm_picture(server: Server, token: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    expected = _expected(server.table)
    assert len(expected) == 4 and all(levels == [0, 0, 0] for levels in expected.values())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.add_cookies([{"name": "_token", "value": token, "url": server.base}])
            page = context.new_page()
            page.set_default_timeout(15_000)
            response = page.goto(f"{server.base}/lakeops/tables/lakeops_default/db/t")
            assert response is not None and response.status == 200

            buckets = page.locator("g.bucket")
            assert buckets.count() == len(expected)
            seen: dict[tuple[str, str], list[int]] = {}
            for i in range(buckets.count()):
                g = buckets.nth(i)
                key = (
                    g.get_attribute("data-partition") or "",
                    g.get_attribute("data-bucket") or "",
                )
                seen[key] = sorted(
                    int(level or -1)
                    for level in g.locator("rect.file").evaluate_all(
                        "rects => rects.map(r => r.getAttribute('data-level'))"
                    )
                )
            assert seen == expected
            rects = page.locator("rect.file")
            assert rects.count() == sum(len(levels) for levels in expected.values())
            for i in range(rects.count()):
                box = rects.nth(i).bounding_box()
                assert box is not None and box["width"] > 0 and box["height"] > 0, i

            svgs = page.locator("svg")
            assert svgs.count() >= len(expected) + 1  # one per band + the history chart
            for i in range(svgs.count()):
                box = svgs.nth(i).bounding_box()
                assert box is not None and box["width"] > 0 and box["height"] > 0, i
            # the partition value is shown as text, not interpreted as markup
            assert page.get_by_text(f"dt={EVIL} · bucket 0").count() == 1
            assert page.locator("h3 b").count() == 0

            shot = tmp_path / "table.png"
            page.screenshot(path=str(shot), full_page=True)
            data = shot.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000

            content = page.content()
            assert SECRET not in content
            assert str(server.warehouse) not in content

            # "all tables" leads to the index, which links back to the same picture
            page.get_by_role("link", name="all tables").click()
            page.wait_for_load_state()
            assert page.url == f"{server.base}/lakeops/"
            page.get_by_role("link", name="db.t").first.click()
            page.wait_for_load_state()
            assert page.url.endswith("/lakeops/tables/lakeops_default/db/t")
            assert page.locator("g.bucket").count() == len(expected)
        finally:
            browser.close()


def test_airflow_ui_nav_opens_the_page(server: Server, token: str) -> None:
    """Browse → "lakeops tables" in Airflow's own UI shows the index in its iframe, and the
    table link opens the picture there (the UI session is the ``_token`` cookie)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.add_cookies([{"name": "_token", "value": token, "url": server.base}])
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{server.base}/")
            page.get_by_role("button", name="Browse").click()
            page.get_by_role("menuitem", name="lakeops tables").click()
            frame = page.frame_locator("iframe")
            frame.get_by_role("link", name="db.t").first.click()
            frame.locator("g.bucket").first.wait_for()
            assert frame.locator("g.bucket").count() == len(server.table.splits())
        finally:
            browser.close()


def test_index_lists_each_connection(server: Server, token: str) -> None:
    status, body, _ = _get(f"{server.base}/lakeops/", token=token)
    assert status == 200
    for conn_id in ("lakeops_default", DB_CONN):
        assert f'href="tables/{conn_id}/db/t"' in body
    assert f'data-conn-id="{MISSING_CONN}"' in body and "connection unavailable" in body
    assert SECRET not in body and str(server.warehouse) not in body


def test_connection_stored_in_the_metadata_db(server: Server, token: str) -> None:
    status, body, _ = _get(f"{server.base}/lakeops/tables/{DB_CONN}/db/t", token=token)
    assert status == 200
    assert body.count('class="bucket"') == len(server.table.splits())


@pytest.mark.parametrize(
    "path",
    [
        "/lakeops/tables/lakeops_default/db/nope",
        "/lakeops/tables/lakeops_default/nodb/t",
        "/lakeops/tables/lakeops_default/..%2F..%2Fetc/passwd",
        f"/lakeops/tables/{MISSING_CONN}/db/t",
        "/lakeops/tables/not_allowed/db/t",
    ],
)
def test_unknown_connection_or_table_is_a_plain_404(server: Server, token: str, path: str) -> None:
    status, body, _ = _get(server.base + path, token=token)
    assert status == 404
    assert "Traceback" not in body
    assert SECRET not in body and str(server.warehouse) not in body
    assert body.count('<p class="message">') == 1


def test_no_storage_options_or_warehouse_anywhere(server: Server, token: str) -> None:
    for path in ("/lakeops/", "/lakeops/tables/lakeops_default/db/t"):
        status, body, _ = _get(server.base + path, token=token)
        assert status == 200
        assert SECRET not in body
        assert str(server.warehouse) not in body
        assert "file://" not in body


@pytest.mark.parametrize("role", ["viewer", "op"])
def test_only_users_who_may_read_the_connection_see_its_tables(server: Server, role: str) -> None:
    """Airflow's own connection API and the plugin agree: a viewer (403 on
    ``GET /api/v2/connections/{id}``) gets 403 on every table page and an index without tables;
    an op (200 there) sees them as the admin does."""
    token = _login(server, ROLE_USERS[role])
    allowed = role == "op"
    for conn_id in ("lakeops_default", DB_CONN):
        status, _, _ = _get(f"{server.base}/api/v2/connections/{conn_id}", token=token)
        # 404 for the environment connection, which Airflow's API cannot list
        assert status == (403 if not allowed else 200 if conn_id == DB_CONN else 404)
        status, body, headers = _get(f"{server.base}/lakeops/tables/{conn_id}/db/t", token=token)
        assert "default-src 'none'" in headers["content-security-policy"]
        if allowed:
            assert status == 200
            assert body.count('class="bucket"') == len(server.table.splits())
        else:
            assert status == 403
            assert 'class="bucket"' not in body and "2024-01-01" not in body
            assert "may not read connection" in body
    # a forbidden user learns nothing about other ids either: not 404, but 403
    status, _, _ = _get(f"{server.base}/lakeops/tables/not_allowed/db/nope", token=token)
    assert status == (404 if allowed else 403)

    status, body, _ = _get(f"{server.base}/lakeops/", token=token)
    assert status == 200
    for conn_id in ("lakeops_default", DB_CONN, MISSING_CONN):
        assert (f'data-conn-id="{conn_id}"' in body) == allowed
    assert ('href="tables/' in body) == allowed
    assert ("db.t" in body) == allowed
    if not allowed:
        assert "No lakeops connection you may read" in body


def test_plugin_adds_a_nav_entry(server: Server, token: str) -> None:
    status, body, _ = _get(f"{server.base}/api/v2/plugins", token=token)
    assert status == 200
    plugin = next(p for p in json.loads(body)["plugins"] if p["name"] == "lakeops")
    assert plugin["fastapi_apps"][0]["url_prefix"] == "/lakeops"
    views = plugin["external_views"]
    assert [(v["name"], v["href"], v["destination"]) for v in views] == [
        ("lakeops tables", "/lakeops/", "nav")
    ]


# ---------------------------------------------------------------------------- extra link
def test_table_link_from_xcom(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.execution_time.xcom import XCom
    from airflow.sdk.types import TaskInstanceKey

    from lakeops.airflow.links import XCOM_KEY, LakeopsTableLink, table_xcom_value

    pushed: dict[str, Any] = {}

    def get_value(*, ti_key: Any, key: str) -> Any:
        assert key == XCOM_KEY
        return pushed.get(ti_key.task_id)

    monkeypatch.setattr(XCom, "get_value", staticmethod(get_value))
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "http://localhost:8080")
    link = LakeopsTableLink()
    assert link.name == "lakeops table"

    def key(task_id: str) -> TaskInstanceKey:
        return TaskInstanceKey(dag_id="d", task_id=task_id, run_id="r", try_number=1)

    pushed["ok"] = table_xcom_value("lakeops_default", "db.t")
    pushed["odd"] = table_xcom_value("my conn/1", "db.a b")
    pushed["bad"] = {"conn_id": "c", "table": "no-dot"}
    assert link.get_link(None, ti_key=key("ok")) == "/lakeops/tables/lakeops_default/db/t"  # type: ignore[arg-type]
    assert link.get_link(None, ti_key=key("odd")) == "/lakeops/tables/my%20conn%2F1/db/a%20b"  # type: ignore[arg-type]
    assert link.get_link(None, ti_key=key("bad")) == ""  # type: ignore[arg-type]
    assert link.get_link(None, ti_key=key("absent")) == ""  # type: ignore[arg-type]
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://example.test/airflow/")
    assert link.get_link(None, ti_key=key("ok")) == "/airflow/lakeops/tables/lakeops_default/db/t"  # type: ignore[arg-type]


# ---------------------------------------------------------------------- connection lookup
def test_open_catalog_falls_back_to_airflow_core(
    airflow_db: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the Task SDK cannot read connections, Airflow core's secrets backends are used,
    with the hook's reading of host/extra/login/password."""
    from lakeops.airflow import plugin
    from lakeops.airflow.hook import LakeopsHook

    def sdk_unavailable(self: LakeopsHook) -> Catalog:
        raise RuntimeError("no supervisor here")

    Catalog(str(warehouse)).create_database("db")
    monkeypatch.setattr(LakeopsHook, "get_catalog", sdk_unavailable)
    monkeypatch.setenv("LAKEOPS_UI_CONN_IDS", "lakeops_default,ui_other")
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKEOPS_DEFAULT",
        json.dumps(
            {
                "conn_type": "lakeops",
                "host": "/nonexistent-host-path",
                "login": "AKIA-TEST",
                "password": "pw-test",
                "extra": {"warehouse": str(warehouse), "storage_options": {"x": "1"}},
            }
        ),
    )
    catalog = plugin.open_catalog("lakeops_default")
    assert catalog.list_databases() == ["db"]  # extra.warehouse wins over host
    assert catalog.file_io._storage_options == {"x": "1", "key": "AKIA-TEST", "secret": "pw-test"}
    assert catalog.file_io.root.endswith(str(warehouse))
    with pytest.raises(plugin.ConnectionUnavailable):
        plugin.open_catalog("ui_other")  # allowed, but not defined anywhere
    with pytest.raises(plugin.ConnectionUnavailable):
        plugin.open_catalog("not_allowed")


def test_catalog_from_connection_maps_credentials(warehouse: Path) -> None:
    from lakeops.airflow.plugin import ConnectionUnavailable, _catalog_from_connection

    class Conn:
        host = str(warehouse)
        login = "AKIA-TEST"
        password = "pw-test"
        extra_dejson: dict[str, Any] = {"storage_options": {"key": "explicit"}}  # noqa: RUF012

    catalog = _catalog_from_connection(Conn())
    assert catalog.file_io.root.endswith(str(warehouse))
    # login/password become key/secret unless the extra sets them (as LakeopsHook.config)
    assert catalog.file_io._storage_options == {"key": "explicit", "secret": "pw-test"}
    Conn.host = ""
    Conn.extra_dejson = {}
    with pytest.raises(ConnectionUnavailable):
        _catalog_from_connection(Conn())


def test_page_shows_the_cli_figures(server: Server, token: str) -> None:
    """The plugin page and ``lakeops health --json`` report the same amplification figures
    (one metrics implementation, one window)."""
    import re

    from typer.testing import CliRunner

    from lakeops.cli.main import app

    result = CliRunner().invoke(app, ["-w", str(server.warehouse), "health", "db.t", "--json"])
    assert result.exit_code == 0, result.stderr
    cli = json.loads(result.stdout)
    status, body, _ = _get(f"{server.base}/lakeops/tables/lakeops_default/db/t", token=token)
    assert status == 200
    header = re.search(r'<header data-snapshot-id="(\d+)" data-write-amplification="([^"]*)" '
                       r'data-space-amplification="([^"]*)"', body)  # fmt: skip
    assert header is not None
    write_amp = cli["write_amplification"]
    assert header.groups() == (
        str(cli["snapshot_id"]),
        "-" if write_amp is None else f"{write_amp:.2f}",
        f"{cli['space_amplification']:.2f}",
    )
    bands = re.findall(r'data-bucket="(\d+)" [^>]*data-space-amplification="([^"]*)"', body)
    assert bands == [(str(b["bucket"]), f"{b['space_amplification']:.2f}") for b in cli["buckets"]]


def test_partition_drill_down(server: Server, token: str) -> None:
    """``?partition=`` (the summary's drill-down link) draws the buckets of that partition
    only, the hostile one included; an unknown partition is a plain 404 naming the closest."""
    import html
    import re

    from lakeops.airflow.plugin import _partition_href

    page = f"{server.base}/lakeops/tables/lakeops_default/db/t"
    for value in ("2024-01-01", EVIL):
        status, body, _ = _get(page + _partition_href(f"dt={value}"), token=token)
        assert status == 200
        bands = re.findall(r'<g class="bucket" data-partition="([^"]*)" data-bucket="(\d+)"', body)
        assert sorted(bands) == [
            (html.escape(f"dt={value}"), "0"),
            (html.escape(f"dt={value}"), "1"),
        ]
    status, body, _ = _get(page + _partition_href("dt=2024-01-02"), token=token)
    assert status == 404
    assert "did you mean dt=2024-01-01" in body and body.count('<p class="message">') == 1
