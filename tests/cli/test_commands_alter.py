"""``lakeops alter``: Paimon schema changes from the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from lakeops import Catalog
from tests.cli.conftest import Cli, rows


def test_alter_renames_adds_widens_and_sets_in_one_schema(
    cli: Cli, loaded: str, parquet: Callable[[str, pa.Table], Path]
) -> None:
    before = cli.table(loaded).read().sort_by([("dt", "ascending"), ("id", "ascending")])
    out = cli.json(
        "alter",
        loaded,
        "--rename",
        "v=value",
        "--add",
        "note STRING AFTER value",
        "--add",
        "tag INT FIRST",
        "--set",
        "snapshot.num-retained.max=50",
        "--comment",
        "name=customer name",
    )
    assert out["schema_id"] == 1 and out["changes"] == 5
    assert [f["name"] for f in out["fields"]] == ["tag", "dt", "id", "value", "note", "name"]
    schema_doc = json.loads(
        (cli.warehouse / "db.db" / "orders" / "schema" / "schema-1").read_text()
    )
    # Paimon's field ids: existing fields keep theirs, new ones take highestFieldId + 1, + 2
    assert [(f["name"], f["id"]) for f in schema_doc["fields"]] == [
        ("tag", 5),
        ("dt", 0),
        ("id", 1),
        ("value", 2),
        ("note", 4),
        ("name", 3),
    ]
    assert schema_doc["highestFieldId"] == 5
    assert schema_doc["options"]["snapshot.num-retained.max"] == "50"
    assert schema_doc["fields"][5]["description"] == "customer name"

    after = cli.table(loaded).read().sort_by([("dt", "ascending"), ("id", "ascending")])
    assert after.column("value").to_pylist() == before.column("v").to_pylist()
    assert after.column("note").null_count == after.num_rows
    data = rows("2024-01-01", range(2), 0.5).rename_columns(["dt", "id", "value", "name"])
    data = data.append_column("tag", pa.array([1, 2], pa.int32()))
    data = data.append_column("note", pa.array(["x", None], pa.string()))
    cli.ok("write", loaded, str(parquet("new.parquet", data)))
    got = cli.table(loaded).read(filter=[("dt", "=", "2024-01-01"), ("id", "<", 2)])
    assert sorted(got.column("value").to_pylist()) == [0.5, 1.5]


def test_alter_refusals_are_one_line_and_write_nothing(cli: Cli, loaded: str) -> None:
    schema_dir = cli.warehouse / "db.db" / "orders" / "schema"
    cases = {
        ("--drop", "id"): "primary key",
        ("--rename", "dt=day"): "partition",
        ("--type", "v=INT"): "v",
        ("--add", "x INT NOT NULL"): "NOT NULL",
        ("--set", "merge-engin=first-row"): "did you mean 'merge-engine'",
        ("--set", "merge-engine=first-row"): "merge-engine",
        ("--rename", "v"): "is not NAME=VALUE",
        ("--add", "justaname"): "is not 'NAME TYPE",
        (): "nothing to change",
    }
    for args, needle in cases.items():
        result = cli("alter", loaded, *args)
        assert result.exit_code == 1, (args, result.stdout)
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert needle in result.stderr, (args, result.stderr)
        assert sorted(p.name for p in schema_dir.iterdir()) == ["schema-0"]


def test_alter_names_a_renamed_column_by_its_old_name_in_any_order(cli: Cli, loaded: str) -> None:
    """``--add … AFTER v`` given before ``--rename v=value``: the column goes after the renamed
    one (the renames apply first, and a column may be named as it was before the command)."""
    out = cli.json(
        "alter",
        loaded,
        "--add",
        "note STRING AFTER v",
        "--type",
        "v=DOUBLE",
        "--comment",
        "v=the value",
        "--rename",
        "v=value",
    )
    assert [f["name"] for f in out["fields"]] == ["dt", "id", "value", "note", "name"]
    schema_doc = json.loads(
        (cli.warehouse / "db.db" / "orders" / "schema" / "schema-1").read_text()
    )
    value = next(f for f in schema_doc["fields"] if f["name"] == "value")
    assert value["description"] == "the value"


def test_alter_changes_nested_fields_by_dotted_path(cli: Cli) -> None:
    addr = pa.struct([("city", pa.string()), ("zip", pa.int32()), ("a.b", pa.int32())])
    schema = pa.schema([pa.field("id", pa.int64(), False), ("addr", addr)])
    api = Catalog(str(cli.warehouse))
    api.create_database("db", ignore_if_exists=True)
    table = api.create_table("db.nested", schema=schema, primary_keys=["id"])
    table.write(pa.table({"id": [1], "addr": [{"city": "x", "zip": 7, "a.b": 3}]}, schema=schema))
    out = cli.json(
        "alter",
        "db.nested",
        "--rename",
        "addr.zip=postcode",
        "--drop",
        "addr.city",
        "--add",
        "addr.street STRING AFTER postcode",
        "--type",
        "addr.`a.b`=BIGINT",
    )
    assert out["fields"][1]["type"] == "ROW<`postcode` INT, `street` STRING, `a.b` BIGINT>"
    got = cli.table("db.nested").read().to_pylist()
    assert got == [{"id": 1, "addr": {"postcode": 7, "street": None, "a.b": 3}}]
    for bad, needle in {"addr.": "dotted path", "addr.`x`y": "expected '.'"}.items():
        result = cli("alter", "db.nested", "--drop", bad)
        assert result.exit_code == 1 and needle in result.stderr, result.stderr
    result = cli("alter", "db.nested", "--drop", "addr.nope")
    assert result.exit_code == 1 and "'addr.nope' does not exist" in result.stderr
