"""Schema files written by pypaimon 2.1 and Java Paimon 0.9 (the golden warehouses) read with
:mod:`lakeops.format.schema` and written back: every field keeps its JSON key and value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakeops.errors import CorruptTableError
from lakeops.format.schema import TableSchema
from tests.conftest import GOLDEN

FILES = sorted(p for p in GOLDEN.rglob("schema-*") if p.parent.name == "schema")


def test_the_golden_warehouses_hold_schemas() -> None:
    assert len(FILES) >= 12


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_paimon_schema_round_trips_field_by_field(path: Path) -> None:
    original = json.loads(path.read_text())
    schema = TableSchema.from_json(path.read_text())
    written = json.loads(schema.to_json())
    assert written.keys() == original.keys()
    for key in original:
        if key != "fields":
            assert written[key] == original[key], key
    assert len(written["fields"]) == len(original["fields"])
    for ours, theirs in zip(written["fields"], original["fields"], strict=True):
        assert ours == theirs
    assert TableSchema.from_json(schema.to_json()) == schema


@pytest.mark.parametrize(
    "text", ['{"id": 0', '{"id": 0, "fields": [{"id": 0, "name": "x"}]}', '{"fields": []}']
)
def test_malformed_schema_is_corruption(text: str) -> None:
    with pytest.raises(CorruptTableError, match="malformed schema file"):
        TableSchema.from_json(text)


def test_declared_paimon_types_ride_on_arrow_field_metadata() -> None:
    """Arrow cannot tell TIME(0) from TIME(3), VARCHAR(10) from STRING or MULTISET from MAP: a
    field's ``paimon.type`` metadata (schema JSON) picks the one it means, when it fits the
    field's Arrow type; without it the Arrow mapping stands."""
    import pyarrow as pa

    from lakeops.errors import ConfigurationError
    from lakeops.format.schema import PAIMON_TYPE
    from lakeops.format.types import DataType

    def field(name: str, arrow: pa.DataType, declared: object) -> pa.Field:
        return pa.field(name, arrow, metadata={PAIMON_TYPE: json.dumps(declared)})

    multiset = {"type": "MULTISET", "element": "STRING"}
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            field("t", pa.time32("ms"), "TIME(0)"),
            field("c", pa.string(), "VARCHAR(10)"),
            field("m", DataType.parse(multiset).to_arrow(), multiset),
            pa.field("plain", pa.time32("ms")),
        ]
    )
    got = TableSchema.from_arrow(schema, ["id"])
    assert [f.type.to_json() for f in got.fields] == [
        "BIGINT NOT NULL",
        "TIME(0)",
        "VARCHAR(10)",
        multiset,
        "TIME(3)",
    ]
    wrong = pa.schema([pa.field("id", pa.int64(), False), field("t", pa.int32(), "TIME(0)")])
    with pytest.raises(ConfigurationError, match="'t' declares Paimon type TIME"):
        TableSchema.from_arrow(wrong, ["id"])
