"""The lakeops plugin on a real Airflow API server: Airflow's login guards every page, Airflow's
auth manager decides who sees which connection's tables, and headless Chromium draws the
table-health picture of a real table (checked against its splits) and the index of a lake of
twenty tables (checked against the writes made).

One API server serves the whole module, started with the command of the README's "Open the
Airflow UI" section (SimpleAuthManager: an op and a viewer with known passwords, and the admin
whose password the server generates into the file the README names).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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
USER, PASSWORD = "admin", "lakeops-test-password"  # the admin's password is generated
#: SimpleAuthManager users by role: ``op`` and ``admin`` may read connections, ``viewer`` may not
ROLE_USERS = {"op": "op-user", "viewer": "viewer-user"}
SECRET = "s3cr3t-value"
DB_CONN = "lakeops_ui_db"  # a connection stored in the metadata database
MISSING_CONN = "lakeops_ui_missing"  # allowed by LAKEOPS_UI_CONN_IDS but never defined
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
EVIL = '<b>&"x'
START_TIMEOUT_S = 120.0


REPO = Path(__file__).resolve().parents[2]
#: the port of the README's commands, replaced by a free one here
README_PORT = "8080"


@dataclass(frozen=True)
class ReadmeUi:
    """What the README's "Open the Airflow UI" section tells a user to run and open."""

    api_server: list[str]
    password_file: str
    login_url: str
    index_url: str


def readme_ui() -> ReadmeUi:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n### Open the Airflow UI\n")
    section = text[start : text.find("\n## ", start + 1)]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None
    commands = [
        line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()
    ]
    api_server = next(shlex.split(c) for c in commands if c.startswith("airflow api-server"))
    cat = next(shlex.split(c) for c in commands if c.startswith("cat "))
    urls = re.findall(r"<(http://[^>]+)>", section)
    return ReadmeUi(api_server, cat[1], urls[0], next(u for u in urls if "/lakeops" in u))


@dataclass
class Server:
    base: str
    warehouse: Path
    table: Table
    log: Path
    started_in_s: float
    argv: list[str]
    admin_password: str
    lake: dict[str, int | None]


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


#: sorted runs per table of the lake (None: no sorted runs), besides db.t (three per bucket)
def _make_lake(warehouse: Path) -> dict[str, int | None]:
    """Nineteen more tables in database ``lake``: primary-key tables of one bucket written 1
    to 9 times (one sorted run per write: the model), an append table, an empty table, one of
    16 buckets in two partitions (its heat map) and one compacted and written again."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("lake")
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])

    def data(n: int, tag: int) -> pa.Table:
        return pa.table({"k": list(range(n)), "v": [f"v{tag}" * 8] * n}, schema=schema)

    model: dict[str, int | None] = {"db.t": 3}
    events = catalog.create_table("lake.events", schema=schema)
    for i in range(3):
        events.write(data(50, i))
    model["lake.events"] = None
    catalog.create_table("lake.empty", schema=schema, primary_keys=["k"])
    model["lake.empty"] = None
    wide = catalog.create_table(
        "lake.wide",
        schema=pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())]),
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "16", "write-only": "true"},
    )
    for i in range(2):
        for dt in ("2026-11-27", "2026-11-28"):
            wide.write(data(400, i).add_column(0, "dt", pa.array([dt] * 400)))
    model["lake.wide"] = 2
    compacted = catalog.create_table(
        "lake.compacted", schema=schema, primary_keys=["k"], options={"bucket": "1"}
    )
    for i in range(3):
        compacted.write(data(30, i))
    compacted.compact(full=True)
    compacted.write(data(5, 9))
    model["lake.compacted"] = 2
    for i in range(15):
        name = f"lake.orders_{i:02d}"
        table = catalog.create_table(
            name, schema=schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"}
        )
        writes = i % 9 + 1
        for j in range(writes):
            table.write(data(20 + j, j))
        model[name] = writes
    assert len(model) == 20
    return model


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
    # the metadata-database connection: a warehouse holding a copy of db.t only
    shutil.copytree(warehouse, root / "wh-db")
    lake = _make_lake(warehouse)
    readme = readme_ui()
    # the README's password file, in this AIRFLOW_HOME: the admin's is generated at the start
    passwords = airflow_db / Path(readme.password_file).name
    passwords.write_text(json.dumps({name: PASSWORD for name in ROLE_USERS.values()}))
    conn = connection_json(warehouse, storage_options={"secret": SECRET})
    db_conn = connection_json(root / "wh-db", storage_options={"secret": SECRET})
    airflow_cli("connections", "add", DB_CONN, "--conn-json", db_conn)
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
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lakeops-test-jwt-secret-0123456789abcdef",
        "AIRFLOW__API__BASE_URL": base,
        "AIRFLOW_CONN_LAKEOPS_DEFAULT": conn,
        "LAKEOPS_UI_CONN_IDS": f"lakeops_default, {DB_CONN},{MISSING_CONN}",
    }
    argv = [str(port) if arg == README_PORT else arg for arg in readme.api_server]
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / argv[0]), *argv[1:]],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_up(proc, base, log)
        admin_password = json.loads(passwords.read_text())[USER]
        yield Server(
            base,
            warehouse,
            table,
            log,
            time.monotonic() - started,
            argv,
            admin_password,
            lake,
        )
    finally:
        _stop(proc)
        airflow_cli("connections", "delete", DB_CONN)


def _login(server: Server, username: str) -> str:
    """A JWT from the simple auth manager's ``POST /auth/token``."""
    password = server.admin_password if username == USER else PASSWORD
    body = json.dumps({"username": username, "password": password}).encode()
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


# ------------------------------------------------------------------- README and the index
def test_readme_ui_section_is_what_this_module_runs(server: Server) -> None:
    """The README's start command is the one the server of this module runs (only the port
    differs), bound to 127.0.0.1; its password file is where the server generated the admin's
    password (with scripts/airflow-env.sh's AIRFLOW_HOME); its URLs are this server's."""
    readme = readme_ui()
    assert readme.api_server[:2] == ["airflow", "api-server"]
    assert readme.api_server[readme.api_server.index("--host") + 1] == "127.0.0.1"
    port = server.base.rsplit(":", 1)[1]
    assert server.argv == [port if a == README_PORT else a for a in readme.api_server]
    assert readme.login_url == f"http://127.0.0.1:{README_PORT}/"
    assert readme.index_url == f"http://127.0.0.1:{README_PORT}/lakeops/"
    # the password file: scripts/airflow-env.sh's AIRFLOW_HOME, the file the server wrote
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW_HOME"}
    home = subprocess.run(
        ["bash", "-c", 'source scripts/airflow-env.sh && printf %s "$AIRFLOW_HOME"'],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (REPO / readme.password_file).parent == Path(home)
    generated = json.loads(
        (Path(os.environ["AIRFLOW_HOME"]) / Path(readme.password_file).name).read_text()
    )
    assert generated[USER] == server.admin_password and server.admin_password != PASSWORD
    assert f"Password for user '{USER}'" in server.log.read_text()


def _index_url(server: Server, query: str = "") -> str:
    """The README's index URL on this server's port."""
    return (
        readme_ui().index_url.replace(f":{README_PORT}/", f":{server.base.rsplit(':', 1)[1]}/")
        + query
    )


def _runs_order(values: list[str | None], descending: bool) -> bool:
    """Whether sorted-run figures are in order, tables without them last."""
    present = [int(v) for v in values if v]
    missing = values[len(present) :]
    return all(not v for v in missing) and present == sorted(present, reverse=descending)


def test_browser_index_of_twenty_tables(server: Server, token: str, tmp_path: Path) -> None:
    """The index of the lake in Chromium: a row per table with the model's sorted runs,
    most first; a click on a heading sorts by it (the other way on a second click); byte
    counts carry separators; over/near/ok look different. The screenshot is kept."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_cookies([{"name": "_token", "value": token, "url": server.base}])
            page = context.new_page()
            page.set_default_timeout(15_000)
            response = page.goto(_index_url(server))
            assert response is not None and response.status == 200

            def column(attr: str, conn: str = "lakeops_default") -> list[str | None]:
                return page.locator(f'tr.table-row[data-conn-id="{conn}"]').evaluate_all(
                    f"rows => rows.map(r => r.getAttribute('{attr}'))"
                )

            tables = column("data-table")
            assert sorted(t or "" for t in tables) == sorted(server.lake)
            got = dict(zip(tables, column("data-max-sorted-runs"), strict=True))
            assert got == {t: "" if n is None else str(n) for t, n in server.lake.items()}
            assert _runs_order(column("data-max-sorted-runs"), descending=True)
            assert column("data-table", DB_CONN) == ["db.t"]

            shot = tmp_path / "index.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"index screenshot: {shot}")
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

            # separators: every byte count of the titles, against the row's figure
            cells = page.locator("tr.table-row td[title$=' bytes']")
            assert cells.count() >= 18
            for i in range(cells.count()):
                title = cells.nth(i).get_attribute("title") or ""
                row_bytes = cells.nth(i).evaluate("td => td.parentElement.dataset.bytes")
                assert title == f"{int(row_bytes):,} bytes"
                if int(row_bytes) >= 1000:
                    assert re.fullmatch(r"\d{1,3}(,\d{3})+ bytes", title)

            colours = {
                state: page.locator(f"span.runs.{state}").first.evaluate(
                    "e => getComputedStyle(e).backgroundColor"
                )
                for state in ("ok", "near", "over")
            }
            assert len(set(colours.values())) == 3

            page.get_by_role("link", name="sorted runs").click()
            page.wait_for_load_state()
            assert "sort=runs" in page.url and "order=asc" in page.url
            assert _runs_order(column("data-max-sorted-runs"), descending=False)

            page.get_by_role("link", name="live files").click()
            page.wait_for_load_state()
            files = [int(f or 0) for f in column("data-files")]
            assert files == sorted(files, reverse=True) and files[0] > files[-1]
            page.get_by_role("link", name="table", exact=True).click()
            page.wait_for_load_state()
            names = [t or "" for t in column("data-table")]
            assert names == sorted(names)

            # the wide table's page: a heat map cell per bucket, the worst dozen drawn
            page.get_by_role("link", name="lake.wide").first.click()
            page.wait_for_load_state()
            wide = Catalog(str(server.warehouse)).get_table("lake.wide")
            assert page.locator("td.cell").count() == len(wide.splits()) == 32
            titles = page.locator("td.cell").evaluate_all("cs => cs.map(c => c.title)")
            assert all(" · bucket " in t and ": 2 sorted runs · " in t for t in titles)
            assert page.locator("g.bucket").count() == 12
            heat = tmp_path / "heatmap.png"
            page.screenshot(path=str(heat), full_page=True)
            print(f"heat map screenshot: {heat}")
        finally:
            browser.close()


def test_index_sort_parameters(server: Server, token: str) -> None:
    """An unknown sort column or order falls back to the default order (most sorted runs
    first) rather than failing the page."""
    status, body, _ = _get(_index_url(server, "?sort=nope&order=sideways"), token=token)
    assert status == 200
    assert 'data-sort="runs" aria-sort="descending"' in body
    status, body, _ = _get(_index_url(server, "?sort=bytes&order=sideways"), token=token)
    assert status == 200 and 'data-sort="bytes" aria-sort="descending"' in body


def test_every_index_link_opens(server: Server, token: str) -> None:
    """Every table of the index opens: primary-key tables with their LSM picture, the append
    table with its partitions, the empty table with no data."""
    import html

    status, body, _ = _get(_index_url(server), token=token)
    assert status == 200
    hrefs = [html.unescape(h) for h in re.findall(r'<a class="table" href="([^"]*)"', body)]
    assert len(hrefs) == len(server.lake) + 1  # and db.t of the metadata-database connection
    for href in hrefs:
        status, page, _ = _get(f"{server.base}/lakeops/{href}", token=token)
        assert status == 200, (href, page[-300:])
        if href.endswith("/lake/events"):
            assert "Paimon append table" in page and 'class="partition"' in page
        elif not href.endswith("/lake/empty"):
            assert 'class="bucket"' in page
