"""``databases``, ``tables``, ``create``, ``drop-table``, ``rename-table`` and
``drop-database``, checked against the catalog on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from typer.testing import Result

from lakeops import Catalog
from tests.cli.conftest import SCHEMA_DOC, TABLE, Cli


def test_create_builds_the_table_and_its_database(cli: Cli, schema_file: Path) -> None:
    cli.warehouse.rmdir()
    assert not cli.warehouse.exists()  # create makes the warehouse as well
    out = cli.json("create", TABLE, "--schema", str(schema_file))
    assert out["created"] is True
    table = cli.table()
    assert table.arrow_schema == pa.schema(
        [
            pa.field("dt", pa.string(), nullable=False),
            pa.field("id", pa.int64(), nullable=False),
            ("v", pa.float64()),
            ("name", pa.string()),
        ]
    )
    assert list(table.schema.primary_keys) == ["dt", "id"]
    assert list(table.schema.partition_keys) == ["dt"]
    assert table.schema.options == {"bucket": "2", "write-only": "true"}
    assert table.latest_snapshot() is None
    assert out["fields"][1] == {"name": "id", "type": "BIGINT NOT NULL"}


def test_create_types_and_comment(cli: Cli, tmp_path: Path) -> None:
    doc = {
        "fields": [
            {"name": "k", "type": "INT"},
            {"name": "d", "type": "DECIMAL(10, 2)"},
            {"name": "ts", "type": "TIMESTAMP(3)"},
            {"name": "day", "type": "DATE NOT NULL"},
            {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
        ],
        "primary_keys": ["k"],
        "comment": "typed",
    }
    path = tmp_path / "typed.json"
    path.write_text(json.dumps(doc))
    cli.ok("create", "other.typed", "--schema", str(path))
    table = cli.table("other.typed")
    assert [f.type.to_paimon() for f in table.schema.fields] == [
        "INT NOT NULL",
        "DECIMAL(10, 2)",
        "TIMESTAMP(3)",
        "DATE NOT NULL",
        "ARRAY<STRING>",
    ]
    assert table.schema.comment == "typed"


def test_create_twice(cli: Cli, orders: str, schema_file: Path) -> None:
    result = cli("create", orders, "--schema", str(schema_file))
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: table '{orders}' already exists — pass --if-not-exists to accept an existing "
        f"table, or see it with 'lakeops describe {orders}'"
    )
    out = cli.json("create", orders, "--schema", str(schema_file), "--if-not-exists")
    assert out["created"] is False


def test_create_rejects_bad_schemas(cli: Cli, tmp_path: Path) -> None:
    cases = {
        "missing.json": None,
        "not-json.json": "{",
        "bad-type.json": json.dumps(
            {"fields": [{"name": "a", "type": "NOPE"}], "primary_keys": ["a"]}
        ),
        "bad-key.json": json.dumps({**SCHEMA_DOC, "primary_keys": ["zzz"]}),
        "bad-option.json": json.dumps({**SCHEMA_DOC, "options": {"merge-engine": "nope"}}),
        "unknown.json": json.dumps({**SCHEMA_DOC, "primary_key": ["id"]}),
        "typo-option.json": json.dumps({**SCHEMA_DOC, "options": {"merge-engin": "first-row"}}),
        "lance.json": json.dumps({**SCHEMA_DOC, "options": {"file.format": "lance"}}),
    }
    expected = {
        "missing.json": "no such file or directory",
        "not-json.json": "is not valid JSON",
        "bad-type.json": "'NOPE'",
        "bad-key.json": "zzz",
        "bad-option.json": "merge-engine",
        "unknown.json": "unknown key(s) ['primary_key']",
        "typo-option.json": "did you mean 'merge-engine'",
        "lance.json": "option 'file.format' = 'lance'",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        result = cli("create", "db.bad", "--schema", str(path))
        assert result.exit_code == 1, name
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert expected[name] in result.stderr, (name, result.stderr)
    assert not Catalog(str(cli.warehouse)).table_exists("db.bad")


def test_databases_and_tables(cli: Cli, orders: str, schema_file: Path) -> None:
    cli.ok("create", "db.second", "--schema", str(schema_file))
    cli.ok("create", "ops.audit", "--schema", str(schema_file))
    catalog = Catalog(str(cli.warehouse))
    assert cli.json("databases")["databases"] == catalog.list_databases() == ["db", "ops"]
    assert cli.json("tables")["tables"] == ["db.orders", "db.second", "ops.audit"]
    assert cli.json("tables", "ops")["tables"] == ["ops.audit"]
    assert cli.ok("tables", "db").stdout.splitlines() == ["db.orders", "db.second"]
    assert cli.ok("databases").stdout.splitlines() == ["db", "ops"]


def test_tables_of_a_missing_database(cli: Cli) -> None:
    cli.warehouse.mkdir(exist_ok=True)
    result = cli("tables", "nodb")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: database 'nodb' does not exist — list databases with 'lakeops databases'"
    ]


def test_empty_warehouse_lists_nothing(cli: Cli) -> None:
    cli.warehouse.mkdir(exist_ok=True)  # a missing warehouse is an error (tests/cli/test_context)
    assert cli.json("databases")["databases"] == []
    assert cli.json("tables")["tables"] == []


def test_a_missing_warehouse_is_one_line_naming_it(cli: Cli) -> None:
    missing = Cli(cli.warehouse / "typo", cli.runner)
    for command in ("databases", "tables"):
        result = missing(command)
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1
        assert "warehouse" in result.stderr and "typo" in result.stderr
        assert "does not exist" in result.stderr


def test_tables_of_a_mistyped_database(cli: Cli, orders: str) -> None:
    result = cli("tables", "dbb")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["error: database 'dbb' does not exist — did you mean db?"]


def _one_error(result: Result, message: str) -> None:
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_rename_drop_table_and_drop_database(cli: Cli, orders: str, schema_file: Path) -> None:
    catalog = Catalog(str(cli.warehouse))
    # rename (into another database too), checked against the catalog's listing
    assert cli.json("rename-table", orders, "db.sales") == {
        "table": orders,
        "new_table": "db.sales",
    }
    assert catalog.list_tables("db") == ["sales"]
    _one_error(cli("rename-table", orders, "db.x"), "table 'db.orders' does not exist")
    _one_error(cli("rename-table", "db.sales", "other.sales"), "database 'other' does not exist")
    cli.ok("create", "other.keep", "--schema", str(schema_file))
    _one_error(cli("rename-table", "db.sales", "other.keep"), "already exists")
    # drop-table: asks unless --yes, refuses a missing table unless --if-exists
    assert cli("drop-table", "db.sales", input="n\n").exit_code == 1
    assert catalog.table_exists("db.sales")
    assert cli.json("drop-table", "db.sales", "--yes") == {"table": "db.sales", "dropped": True}
    assert catalog.list_tables("db") == []
    _one_error(cli("drop-table", "db.sales", "--yes"), "table 'db.sales' does not exist")
    assert cli.json("drop-table", "db.sales", "--if-exists")["dropped"] is False
    # drop-database: a database with tables needs --cascade
    _one_error(cli("drop-database", "other", "--yes"), "still holds 1 table(s) (keep)")
    assert catalog.list_databases() == ["db", "other"]
    out = cli.json("drop-database", "other", "--cascade", "--yes")
    assert out == {"database": "other", "dropped": True, "tables": ["keep"]}
    cli.ok("drop-database", "db")
    assert catalog.list_databases() == []
    _one_error(cli("drop-database", "db"), "database 'db' does not exist")
    assert cli.json("drop-database", "db", "--if-exists")["dropped"] is False
