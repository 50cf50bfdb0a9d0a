"""What lakeops refuses of append tables Paimon 1.x writes: a data-evolution table is read
exactly, and ``read_changes`` (its updates are not appended rows) is refused by name, the table
untouched. (Deletion vectors are served: test_append_deletion_vectors_interop; row tracking and
data evolution are written and compacted: test_row_tracking_write_interop.)"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


#: table -> (options, what lakeops' refusal of read_changes names)
CASES = {
    "db.evolution": (
        {"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
        "an append table with data evolution",
    ),
}


def test_append_tables_lakeops_cannot_serve_fully_are_refused_and_left_untouched(
    warehouse,
) -> None:
    """Data evolution: read exactly (values); read_changes refused naming the kind; a
    compaction of its one file finds nothing to do. The table stays byte-identical and
    pypaimon still reads it. (Their writes: test_row_tracking_write_interop.)"""
    data = pa.table({"id": [1, 2, 2], "v": ["a", "b", None]}, schema=SCHEMA)
    ops: list[dict] = []
    for name, (options, _) in CASES.items():
        ops.append(
            {
                "op": "create",
                "table": name,
                "schema": SCHEMA,
                "primary_keys": [],
                "options": options,
            }
        )
        ops.append({"op": "write", "table": name, "data": data})
    oracle_script(warehouse, ops)
    before = _tree(warehouse)
    catalog = Catalog(str(warehouse))
    for name, (_, refusal) in CASES.items():
        table = catalog.get_table(name)
        got = table.read().sort_by([("id", "ascending"), ("v", "ascending")])
        want = data.sort_by([("id", "ascending"), ("v", "ascending")])
        assert got.to_pylist() == want.to_pylist(), name
        assert table.compact(full=True) is None
        with pytest.raises(UnsupportedFeatureError, match=re.escape(refusal)):
            table.read_changes(0)
    assert sorted(catalog.list_tables("db")) == ["evolution"]
    assert _tree(warehouse) == before
    reads = oracle_script(warehouse, [{"op": "read", "table": n} for n in CASES])
    assert [r.num_rows for r in reads] == [3]
