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
