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
    DatabaseNotFoundError,
    LakeopsError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
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
        ({"options": {"bucket": "2"}, "primary_keys": []}, "primary_keys is empty"),
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


def test_postpone_bucket_is_refused_clearly(catalog: Catalog) -> None:
    with pytest.raises(UnsupportedFeatureError, match="postpone bucket mode"):
        catalog.create_table("db.pp", schema=SCHEMA, primary_keys=["id"], options={"bucket": "-2"})


def test_dynamic_bucket_is_the_default(catalog: Catalog) -> None:
    table = catalog.create_table("db.dyn", schema=SCHEMA, primary_keys=["id"])
    assert table.options.bucket == -1


def test_errors_share_one_root() -> None:
    for cls in (ConfigurationError, TableNotFoundError, UnsupportedFeatureError):
        assert issubclass(cls, LakeopsError)
