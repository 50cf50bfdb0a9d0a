"""The application: help texts, global options, error reporting, the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakeops.cli.main import _hoist_flags, app
from lakeops.errors import TableNotFoundError
from tests.cli.conftest import TABLE, Cli

COMMANDS = [
    "databases",
    "tables",
    "create",
    "alter",
    "drop-table",
    "rename-table",
    "drop-database",
    "write",
    "lookup",
    "describe",
    "health",
    "meta",
    "compact",
    "flush",
    "expire",
    "orphans",
    "rollback",
    "check",
    "repair",
]
LAKEOPS = Path(sys.executable).with_name("lakeops")


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.stdout
    assert "--warehouse" in result.stdout and "LAKEOPS_WAREHOUSE" in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.stderr
    assert f"Usage: lakeops {command}" in " ".join(result.stdout.split())
    (callback,) = [
        c.callback
        for c in app.registered_commands
        if c.callback is not None and (c.name or c.callback.__name__.replace("_", "-")) == command
    ]
    doc = callback.__doc__
    assert doc is not None
    first_words = " ".join(doc.split()[:4])
    assert first_words in " ".join(result.stdout.split())


def test_no_arguments_shows_help() -> None:
    result = CliRunner().invoke(app, [])
    assert "Usage: lakeops" in result.stdout


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("lakeops ")


def test_missing_table_is_one_line_naming_it(cli: Cli) -> None:
    cli.warehouse.mkdir(exist_ok=True)
    for command in (["describe", "db.nope"], ["compact", "db.nope"], ["write", "db.nope", "x"]):
        result = cli(*command)
        assert result.exit_code == 1
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: table 'db.nope' does not exist")
        assert "lakeops create db.nope --schema" in lines[0]
        assert "Traceback" not in result.output and result.stdout == ""


def test_debug_reraises(cli: Cli) -> None:
    cli.warehouse.mkdir(exist_ok=True)
    result = cli("--debug", "describe", "db.nope")
    assert isinstance(result.exception, TableNotFoundError)
    assert result.exit_code != 0


def test_flags_after_the_command(cli: Cli, orders: str) -> None:
    assert json.loads(cli.ok("describe", orders, "--json").stdout)["table"] == orders
    assert isinstance(cli("describe", "db.nope", "--debug").exception, TableNotFoundError)


def test_hoist_flags_keeps_order_and_separator() -> None:
    assert _hoist_flags(["-w", "x", "describe", "t", "--json"]) == [
        "--json",
        "-w",
        "x",
        "describe",
        "t",
    ]
    assert _hoist_flags(["lookup", "t", "--", "--json"]) == ["lookup", "t", "--", "--json"]


def test_bad_identifier_and_bad_options(cli: Cli) -> None:
    result = cli("describe", "orders")
    assert result.exit_code == 1 and "'database.table'" in result.stderr
    result = cli("--storage-options", '{"secret": "hunter2"', "tables")
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1
    assert "--storage-options is not valid JSON" in result.stderr
    assert "hunter2" not in result.output
    result = cli("--catalog-options", "[1]", "tables")
    assert result.exit_code == 1 and "must be a JSON object" in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["compact"], "Missing argument 'TABLE'"),
        (["compact", TABLE, "--ful"], "No such option: --ful"),
        (["expire", TABLE, "--retain-min", "x"], "'--retain-min'"),
        (["expire", TABLE, "--retain-min", "0"], "'--retain-min'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
    ],
)
def test_usage_errors_are_one_line_exit_1(cli: Cli, args: list[str], says: str) -> None:
    result = cli(*args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert says in lines[0]
    assert "--help" in lines[0] and "╭" not in result.output and result.stdout == ""


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_help_has_no_type_placeholders(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for placeholder in ("<bool>", "<str>", "<int>", "<list[", "<float>", "<Path>"):
        assert placeholder not in result.stdout, (command, result.stdout)
    assert "╭" in result.stdout  # still the rich help


def test_core_imports_without_typer_or_rich() -> None:
    code = (
        "import sys; sys.modules['typer'] = None; sys.modules['rich'] = None\n"
        "import lakeops, lakeops.health.view, lakeops.compact, lakeops.table.primary_key\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LAKEOPS), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_installed_console_script(tmp_path: Path, schema_file: Path) -> None:
    assert LAKEOPS.is_file(), "run pip install -e '.[cli]' so .venv/bin/lakeops exists"
    env = {"LAKEOPS_WAREHOUSE": str(tmp_path / "wh")}
    done = _run("create", TABLE, "--schema", str(schema_file), env=env)
    assert done.returncode == 0, done.stderr
    done = _run("--json", "tables", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tables"] == [TABLE]
    assert (tmp_path / "wh" / "db.db" / "orders" / "schema" / "schema-0").is_file()

    done = _run("describe", "db.nope", env=env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "db.nope" in done.stderr
    assert "Traceback" not in done.stderr

    done = _run("--debug", "describe", "db.nope", env=env)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "TableNotFoundError" in done.stderr
