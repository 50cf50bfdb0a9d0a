"""Catalog operations on an object store (moto S3): a new warehouse in an existing bucket is
empty, a missing bucket is an error, tables and databases drop, and renames are refused (S3
cannot rename a directory atomically) with the table left as it was."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops import Catalog, UnsupportedFeatureError, WarehouseNotFoundError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def test_catalog_operations_on_s3(s3_warehouse: tuple[str, dict]) -> None:
    uri, options = s3_warehouse
    catalog = Catalog(uri, storage_options=options)
    assert catalog.list_databases() == []  # the bucket exists: a new, empty warehouse
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    catalog.create_table("db.u", schema=SCHEMA, primary_keys=["id"])
    with pytest.raises(UnsupportedFeatureError, match="atomically"):
        catalog.rename_table("db.t", "db.t2")
    assert catalog.list_tables("db") == ["t", "u"]
    assert catalog.get_table("db.t").read().num_rows == 2
    catalog.drop_table("db.t")
    assert catalog.list_tables("db", pattern="*") == ["u"]
    assert not catalog.file_io.fs.find(f"{catalog.warehouse}/db.db/t")
    catalog.drop_database("db", cascade=True)
    assert catalog.list_databases() == []
    assert not catalog.file_io.fs.find(catalog.warehouse)

    missing = Catalog("s3://no-such-bucket-lakeops/wh", storage_options=options)
    with pytest.raises(WarehouseNotFoundError, match="no-such-bucket-lakeops"):
        missing.list_databases()
