"""Catalog: databases, tables, schema files, and configuration errors before any write."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import (
    Catalog,
    ConfigurationError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    LakeopsError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    WarehouseNotFoundError,
)

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64())])


def test_create_and_list(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    assert catalog.list_databases() == ["db"]
    assert catalog.list_tables("db") == ["t"]
    doc = json.loads((warehouse / "db.db" / "t" / "schema" / "schema-0").read_text())
    assert doc["version"] == 3 and doc["primaryKeys"] == ["dt", "id"]
    assert [f["type"] for f in doc["fields"]] == ["STRING NOT NULL", "BIGINT NOT NULL", "DOUBLE"]
    assert doc["options"] == {"bucket": "2"}
    assert table.latest_snapshot() is None and table.read().num_rows == 0
    assert table.arrow_schema.field("id").nullable is False


def test_a_single_key_name_is_one_column_and_none_is_no_keys(
    catalog: Catalog, warehouse: Path
) -> None:
    # "dt" is the column dt, not the columns d and t
    catalog.create_table("db.one", schema=SCHEMA, primary_keys="id", partition_keys="dt")
    doc = json.loads((warehouse / "db.db" / "one" / "schema" / "schema-0").read_text())
    assert doc["primaryKeys"] == ["id"] and doc["partitionKeys"] == ["dt"]
    table = catalog.create_table("db.none", schema=SCHEMA, primary_keys=None)
    doc = json.loads((warehouse / "db.db" / "none" / "schema" / "schema-0").read_text())
    assert doc["primaryKeys"] == [] and doc["partitionKeys"] == []
    assert type(table).__name__ == "AppendTable"


def test_database_errors(catalog: Catalog) -> None:
    with pytest.raises(DatabaseAlreadyExistsError):
        catalog.create_database("db")
    catalog.create_database("db", ignore_if_exists=True)
    with pytest.raises(DatabaseNotFoundError, match="create_database"):
        catalog.create_table("nodb.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})


def test_table_errors(catalog: Catalog) -> None:
    catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    assert catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}, ignore_if_exists=True
    )
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.missing")
    with pytest.raises(ConfigurationError, match=r"database\.table"):
        catalog.get_table("nodot")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"options": {"bucket": "0"}}, "'bucket' = '0' is invalid"),
        ({"options": {"bucket": "x"}}, "'bucket' = 'x' is invalid: it must be an integer"),
        ({"options": {"bucket": "2", "merge-engine": "nope"}}, "merge-engine"),
        ({"options": {"bucket": "2", "sequence.field": "zz"}}, "unknown column 'zz'"),
        ({"options": {"bucket": "2", "sequence.field": "id"}}, "primary-key column 'id'"),
        ({"options": {"bucket": "2", "rowkind.field": "v"}}, "must be a STRING"),
        ({"options": {"bucket": "2", "write-buffer-size": "lots"}}, "write-buffer-size"),
        ({"options": {"bucket": "2"}, "primary_keys": ["nope"]}, "not in the schema"),
        ({"options": {"bucket": "2"}, "primary_keys": []}, "needs option 'bucket-key'"),
        ({"options": {"bucket-key": "v"}, "primary_keys": []}, "cannot be used with bucket = -1"),
        (
            {"options": {"bucket": "2", "bucket-key": "zz"}, "primary_keys": []},
            "unknown column 'zz'",
        ),
        ({"options": {"bucket": "2"}, "partition_keys": ["id"]}, "not a partition key"),
    ],
)
def test_bad_configuration_writes_nothing(
    catalog: Catalog, warehouse: Path, kwargs: dict, message: str
) -> None:
    args = {"schema": SCHEMA, "primary_keys": ["id"], **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        catalog.create_table("db.bad", **args)
    assert not (warehouse / "db.db" / "bad").exists()


def test_postpone_buckets_need_a_primary_key(catalog: Catalog, warehouse: Path) -> None:
    """Paimon allows bucket = -2 only on primary-key tables; a primary-key table is created."""
    with pytest.raises(ConfigurationError, match="postpone buckets"):
        catalog.create_table("db.pa", schema=SCHEMA, options={"bucket": "-2"})
    assert not (warehouse / "db.db" / "pa").exists()
    table = catalog.create_table(
        "db.pp", schema=SCHEMA, primary_keys=["id"], options={"bucket": "-2"}
    )
    assert table.schema.options["bucket"] == "-2"


def test_dynamic_bucket_is_the_default(catalog: Catalog) -> None:
    table = catalog.create_table("db.dyn", schema=SCHEMA, primary_keys=["id"])
    assert table.options.bucket == -1


def test_errors_share_one_root() -> None:
    for cls in (ConfigurationError, TableNotFoundError, UnsupportedFeatureError):
        assert issubclass(cls, LakeopsError)


# ------------------------------------------------------------- drop, rename, patterns (issue 18)
def _table(catalog: Catalog, identifier: str) -> None:
    t = catalog.create_table(identifier, schema=SCHEMA, primary_keys=["dt", "id"])
    t.write(pa.table({"dt": ["a"], "id": [1], "v": [1.0]}, schema=SCHEMA))


def test_drop_table_removes_its_directory(catalog: Catalog, warehouse: Path) -> None:
    _table(catalog, "db.t")
    _table(catalog, "db.u")
    catalog.get_table("db.t").create_tag("kept")
    catalog.drop_table("db.t")
    assert not (warehouse / "db.db" / "t").exists()
    assert catalog.list_tables("db") == ["u"]
    with pytest.raises(TableNotFoundError):
        catalog.drop_table("db.t")
    catalog.drop_table("db.t", ignore_if_not_exists=True)
    # the name can be used again, for a new, empty table
    catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"])
    assert catalog.get_table("db.t").read().num_rows == 0


def test_rename_table_moves_the_directory(catalog: Catalog, warehouse: Path) -> None:
    _table(catalog, "db.t")
    catalog.create_database("other")
    renamed = catalog.rename_table("db.t", "other.t2")
    assert renamed.identifier == "other.t2"
    assert renamed.read().to_pylist() == [{"dt": "a", "id": 1, "v": 1.0}]
    assert not (warehouse / "db.db" / "t").exists()
    assert catalog.list_tables("db") == [] and catalog.list_tables("other") == ["t2"]
    _table(catalog, "db.x")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table("db.x", "other.t2")
    with pytest.raises(TableNotFoundError):
        catalog.rename_table("db.missing", "db.y")
    with pytest.raises(DatabaseNotFoundError):
        catalog.rename_table("db.x", "nope.x")
    assert catalog.list_tables("db") == ["x"]


def test_drop_database(catalog: Catalog, warehouse: Path) -> None:
    _table(catalog, "db.t")
    catalog.create_database("empty")
    catalog.drop_database("empty")
    assert catalog.list_databases() == ["db"]
    with pytest.raises(DatabaseNotEmptyError, match=r"\(t\)"):
        catalog.drop_database("db")
    assert catalog.table_exists("db.t")
    catalog.drop_database("db", cascade=True)
    assert catalog.list_databases() == [] and not (warehouse / "db.db").exists()
    with pytest.raises(DatabaseNotFoundError):
        catalog.drop_database("db")
    catalog.drop_database("db", ignore_if_not_exists=True)


def test_list_with_patterns(catalog: Catalog) -> None:
    for name in ("orders", "orders_eu", "Orders_us", "items"):
        catalog.create_table(f"db.{name}", schema=SCHEMA, primary_keys=["dt", "id"])
    catalog.create_database("db2")
    catalog.create_database("sales")
    assert catalog.list_tables("db", pattern="orders*") == ["orders", "orders_eu"]
    assert catalog.list_tables("db", pattern="*_??") == ["Orders_us", "orders_eu"]
    assert catalog.list_tables("db", pattern="nothing") == []
    assert catalog.list_databases(pattern="db*") == ["db", "db2"]
    assert catalog.list_databases(pattern="[s]*") == ["sales"]


def test_a_missing_warehouse_is_an_error_not_an_empty_one(tmp_path: Path) -> None:
    missing = Catalog(str(tmp_path / "typo"))
    asks = [
        missing.list_databases,
        lambda: missing.list_tables("db"),
        lambda: missing.get_table("db.t"),
        lambda: missing.drop_table("db.t"),
        lambda: missing.drop_database("db"),
    ]
    for ask in asks:
        with pytest.raises(WarehouseNotFoundError, match="typo"):
            ask()
    assert not (tmp_path / "typo").exists()
    # creating a database creates a new warehouse
    missing.create_database("db")
    assert missing.list_databases() == ["db"]
