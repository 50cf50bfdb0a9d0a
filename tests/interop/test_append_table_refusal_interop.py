"""Tables without a primary key (Paimon append tables) are refused by name, untouched."""

from __future__ import annotations

import hashlib
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
        ({}, "an append table"),
        ({"bucket": "2", "bucket-key": "id"}, "a bucketed append table"),
        ({"deletion-vectors.enabled": "true"}, "an append table with deletion vectors"),
    ],
)
def test_append_tables_are_refused_and_left_untouched(warehouse, options, kind) -> None:
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
