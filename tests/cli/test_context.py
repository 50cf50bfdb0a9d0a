"""The invocation state: a missing warehouse or table is one line naming the way out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lakeops.cli.context import table_hint
from lakeops.cli.main import app
from tests.cli.conftest import Cli


def test_table_hint_prefers_the_closest_names() -> None:
    existing = ["db.orders", "db.customers", "sales.orders"]
    assert table_hint("db.ordrs", existing) == "did you mean db.orders?"
    assert table_hint("x.orders", existing) == "did you mean db.orders or sales.orders?"
    assert table_hint("db.custmers", existing) == "did you mean db.customers?"
    assert table_hint("db.zzz", existing).startswith("list the tables with 'lakeops tables'")
    assert table_hint("db.zzz", []) == "create it with 'lakeops create db.zzz --schema schema.json'"


def test_missing_warehouse_fails_naming_the_path(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "no" / "such" / "dir", CliRunner())
    for command in (["tables"], ["databases"], ["describe", "db.orders"], ["compact", "db.o"]):
        result = cli(*command)
        assert result.exit_code == 1, (command, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"error: warehouse {cli.warehouse} does not exist")
        assert "--warehouse" in lines[0] and result.stdout == ""
    assert not cli.warehouse.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["describe"],
        ["health"],
        ["compact"],
        ["flush"],
        ["expire"],
        ["check"],
        ["repair"],
        ["orphans"],
        ["rollback", "1", "--yes"],
        ["alter", "--set", "a=b"],
        ["write", "x.parquet"],
        ["lookup", "--", "id=1"],
    ],
)
def test_missing_table_suggests_the_closest(cli: Cli, orders: str, command: list[str]) -> None:
    result = cli(command[0], "db.ordrs", *command[1:])
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "table 'db.ordrs' does not exist" in lines[0]
    assert lines[0].endswith("did you mean db.orders?")
    assert "lakeops create" not in lines[0]


def test_storage_errors_keep_their_own_line(tmp_path: Path) -> None:
    """A missing bucket names the bucket and endpoint (not the generic --warehouse line); an
    unreachable endpoint says so; neither shows the secret."""
    import json

    from tests.io.servers import free_port, moto_server, s3_options

    def run(endpoint: str, bucket: str, *command: str) -> str:
        options = {**s3_options(endpoint), "secret": "hidden-secret"}
        result = CliRunner().invoke(
            app,
            ["-w", f"s3://{bucket}/wh", "--storage-options", json.dumps(options), *command],
        )
        assert result.exit_code == 1, result.output
        assert "hidden-secret" not in result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        return lines[0]

    with moto_server() as endpoint:
        for command in (["databases"], ["describe", "db.orders"]):
            line = run(endpoint, "no-such-bucket", *command)
            assert "bucket 'no-such-bucket'" in line and endpoint in line, line
    closed = f"http://127.0.0.1:{free_port()}"
    line = run(closed, "some-bucket", "databases")
    assert "unreachable" in line and closed in line, line
