"""Append tables lakeops cannot serve exactly (row tracking, data evolution; deletion vectors
for writes) are refused by name, untouched."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        (
            {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
            "an append table with data evolution",
        ),
    ],
)
def test_append_tables_lakeops_cannot_serve_are_refused_and_left_untouched(
    warehouse, options, kind
) -> None:
    oracle_create(warehouse, "db.a", SCHEMA, [], options=options)
    data = pa.table({"id": [1, 2, 2], "v": ["a", "b", "c"]}, schema=SCHEMA)
    oracle_write(warehouse, "db.a", data)
    before = _tree(warehouse)
    catalog = Catalog(str(warehouse))
    with pytest.raises(UnsupportedFeatureError, match=f"no primary key: it is {kind},"):
        catalog.get_table("db.a")
    assert catalog.list_tables("db") == ["a"]
    assert _tree(warehouse) == before
    assert oracle_read(warehouse, "db.a").num_rows == 3


@pytest.mark.parametrize("option", ["deletion-vectors.enabled", "row-tracking.enabled"])
def test_append_table_read_exactly_with_writes_refused(warehouse, option) -> None:
    """Deletion vectors enabled (none written yet) or row tracking: read exactly (values);
    writes, compactions and rollbacks refused naming the option, the table byte-identical."""
    oracle_create(warehouse, "db.a", SCHEMA, [], options={option: "true"})
    data = pa.table({"id": [1, 2, 2], "v": ["a", "b", None]}, schema=SCHEMA)
    oracle_write(warehouse, "db.a", data)
    before = _tree(warehouse)
    table = Catalog(str(warehouse)).get_table("db.a")
    got = table.read().sort_by([("id", "ascending"), ("v", "ascending")])
    assert got.to_pylist() == data.sort_by([("id", "ascending"), ("v", "ascending")]).to_pylist()
    for action in (lambda: table.write(data), lambda: table.compact(full=True)):
        with pytest.raises(UnsupportedFeatureError, match=re.escape(option)):
            action()
    with pytest.raises(UnsupportedFeatureError, match=re.escape(option)):
        table.rollback_to(1)
    assert _tree(warehouse) == before
