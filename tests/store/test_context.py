"""TableContext: one table at one schema, each option family parsed once and only when used."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.format import binary_row
from lakeops.format.schema_change import SetOption
from lakeops.format.types import DataType
from lakeops.store.context import TableContext

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def test_parsed_once_and_shared(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "num-sorted-run.compaction-trigger": "7"},
    )
    ctx = table.context
    assert ctx.options is ctx.options and ctx.engine is ctx.engine
    assert ctx.compaction.trigger == 7
    assert ctx.changelog.producer == "none"
    # the writer, the reader and the compaction of one table share the same parsed values
    write = table.new_write()
    assert write.options is ctx.options and write.engine is ctx.engine
    write.abort()
    assert table.split_reader().engine is ctx.engine


def test_bucket_path_is_paimons_layout(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4"},
    )
    partition = binary_row.serialize(("2024-01-01",), [DataType.parse("STRING")])
    assert table.context.bucket_path(partition, 3) == f"{table.root}/dt=2024-01-01/bucket-3"


def test_a_bad_option_fails_where_it_matters(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"])
    table.write(pa.table({"dt": ["a"], "id": [1], "v": [1]}, schema=SCHEMA))
    # another engine sets a compaction option lakeops cannot parse: the table still opens and
    # reads; compaction names the option
    schema = table.schema
    options = {**schema.options, "num-sorted-run.compaction-trigger": "x"}
    ctx = TableContext(table.store, dataclasses.replace(schema, options=options))
    assert ctx.options.bucket == table.options.bucket  # the table-wide options still parse
    assert TableContext(table.store, schema).compaction.trigger == 5
    with pytest.raises(ConfigurationError, match=r"num-sorted-run\.compaction-trigger"):
        ctx.compaction  # noqa: B018


def test_with_schema_parses_afresh(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"])
    before = table.context
    table.alter(SetOption("num-sorted-run.compaction-trigger", "9"))
    assert table.context is not before
    assert table.context.schema.id == before.schema.id + 1
    assert table.context.compaction.trigger == 9
    assert before.compaction.trigger == 5  # Paimon's default, kept by the old one
