"""The native Spark write path writes its own Parquet files without file indexes, so a table
whose ``file-index.*`` options ask for indexes takes the Python writer (which builds them)."""

from __future__ import annotations

import pyarrow as pa

from lakeops import Catalog
from lakeops.spark import native


def test_a_table_with_file_indexes_is_kept_off_the_native_path(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    plain = catalog.create_table(
        "db.plain", schema=schema, primary_keys=["id"], options={"bucket": "2"}
    )
    indexed = catalog.create_table(
        "db.indexed",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "2", "file-index.bloom-filter.columns": "v"},
    )
    types = {"id": "bigint", "v": "string"}
    assert native.refusal(plain, types, "append") is None
    assert native.refusal(indexed, types, "append") == (
        "file-index.* asks for file indexes in every data file"
    )
