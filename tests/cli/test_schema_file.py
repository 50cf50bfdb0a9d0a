"""The schema file of ``lakeops create``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakeops.cli.errors import CliError
from lakeops.cli.schema_file import parse_schema


def test_parse_schema() -> None:
    spec = parse_schema(
        {
            "fields": [
                {"name": "id", "type": "BIGINT NOT NULL"},
                {"name": "amount", "type": "DECIMAL(12, 3)"},
                {"name": "at", "type": "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
            ],
            "primary_keys": ["id"],
            "options": {"bucket": 4, "write-only": False, "target-file-size": "64 mb"},
        }
    )
    assert spec.schema == pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("amount", pa.decimal128(12, 3)),
            ("at", pa.timestamp("us", tz="UTC")),
        ]
    )
    assert spec.primary_keys == ["id"] and spec.partition_keys == [] and spec.comment is None
    assert spec.options == {"bucket": "4", "write-only": "false", "target-file-size": "64 mb"}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "expected a JSON object"),
        ({"fields": []}, "'fields' must be a non-empty list"),
        ({"fields": [{"name": "a"}]}, r"fields\[0\] must be"),
        ({"fields": [{"name": "a", "type": "INT", "x": 1}]}, r"unknown key\(s\) \['x'\]"),
        ({"fields": [{"name": "a", "type": "INT"}], "primary_keys": "a"}, "list of column names"),
        ({"fields": [{"name": "a", "type": "INT"}], "options": []}, "'options' must be"),
        ({"fields": [{"name": "a", "type": "INT"}], "options": {"b": [1]}}, "option 'b'"),
        ({"fields": [{"name": "a", "type": "INT"}], "comment": 1}, "'comment' must be"),
        ({"fields": [{"name": "a", "type": "WHAT"}]}, "field 'a': Paimon type 'WHAT'"),
    ],
)
def test_bad_schemas(doc: Any, message: str) -> None:
    with pytest.raises(CliError, match=message):
        parse_schema(doc)


def test_declared_types_survive_the_arrow_schema() -> None:
    """TIME(0), VARCHAR(10) and MULTISET in a schema file become those types, not the ones their
    Arrow types would map back to (TIME(3), STRING, MAP)."""
    from lakeops.format.schema import TableSchema

    multiset = {"type": "MULTISET", "element": "INT"}
    spec = parse_schema(
        {
            "fields": [
                {"name": "id", "type": "BIGINT NOT NULL"},
                {"name": "t", "type": "TIME(0)"},
                {"name": "c", "type": "VARCHAR(10) NOT NULL"},
                {"name": "m", "type": multiset},
            ],
            "primary_keys": ["id"],
        }
    )
    schema = TableSchema.from_arrow(spec.schema, spec.primary_keys)
    assert [f.type.to_json() for f in schema.fields] == [
        "BIGINT NOT NULL",
        "TIME(0)",
        "VARCHAR(10) NOT NULL",
        multiset,
    ]
