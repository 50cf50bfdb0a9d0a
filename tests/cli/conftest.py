"""Fixtures for the CLI tests: a tmp warehouse, a runner bound to it, schema and data files."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from lakeops import Catalog, Table
from lakeops.cli.main import app

SCHEMA_DOC: dict[str, Any] = {
    "fields": [
        {"name": "dt", "type": "STRING"},
        {"name": "id", "type": "BIGINT"},
        {"name": "v", "type": "DOUBLE"},
        {"name": "name", "type": "STRING"},
    ],
    "primary_keys": ["dt", "id"],
    "partition_keys": ["dt"],
    "options": {"bucket": 2, "write-only": True},
}
TABLE = "db.orders"


@dataclass
class Cli:
    """Runs ``lakeops -w <warehouse> …`` in-process and opens the warehouse's tables."""

    warehouse: Path
    runner: CliRunner

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(app, ["-w", str(self.warehouse), *args], input=input)

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result

    def json(self, *args: str) -> Any:
        result = self.ok("--json", *args)
        return json.loads(result.stdout)

    def table(self, identifier: str = TABLE) -> Table:
        return Catalog(str(self.warehouse)).get_table(identifier)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    (tmp_path / "wh").mkdir()  # an empty warehouse (a missing one is an error)
    # a wide terminal: rich wraps at 80 columns, and a long temporary path (a --basetemp)
    # would wrap mid-word
    return Cli(tmp_path / "wh", CliRunner(env={"COLUMNS": "200"}))


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA_DOC))
    return path


def rows(dt: str, ids: range, v: float = 0.0) -> pa.Table:
    """Rows of ``dt`` for ``ids``: ``v = id + v``, ``name = 'n<id>'``."""
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": pa.array(list(ids), pa.int64()),
            "v": [float(i) + v for i in ids],
            "name": [f"n{i}" for i in ids],
        }
    )


@pytest.fixture
def parquet(tmp_path: Path) -> Callable[[str, pa.Table], Path]:
    """Write a table to ``<tmp>/<name>`` as Parquet and return the path."""

    def write(name: str, data: pa.Table) -> Path:
        path = tmp_path / name
        pq.write_table(data, path)
        return path

    return write


@pytest.fixture
def orders(cli: Cli, schema_file: Path) -> str:
    """``db.orders`` created through the CLI (empty)."""
    cli.ok("create", TABLE, "--schema", str(schema_file))
    return TABLE


def sorted_rows(data: pa.Table) -> list[dict[str, Any]]:
    """Rows ordered by (dt, id), for comparisons independent of file order."""
    return data.sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


@pytest.fixture
def loaded(cli: Cli, orders: str, parquet: Callable[[str, pa.Table], Path]) -> str:
    """``db.orders`` after three overlapping writes (three APPEND snapshots, write-only)."""
    for i in range(3):
        data = pa.concat_tables(
            [rows("2024-01-01", range(i * 50, i * 50 + 100), i), rows("2024-01-02", range(30), i)]
        )
        cli.ok("write", orders, str(parquet(f"part-{i}.parquet", data)))
    return orders
