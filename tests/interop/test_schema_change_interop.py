"""The schema pypaimon 2.1 writes for a list of changes equals :func:`apply_changes`'s.

pypaimon's ``SchemaManager.commit_changes`` follows Paimon's field-id rules (``++highestFieldId``
for a new column, nested ROW fields numbered after it, children first), so it checks the ids,
``highestFieldId``, positions, renames, drops and type updates of the next ``schema-N``.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import (
    AddColumn,
    DropColumn,
    Position,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
)
from lakeops.format.types import DataType
from tests.interop.oracle import ORACLE_TIMEOUT_S, require_oracle

pytestmark = pytest.mark.interop

ALTER = textwrap.dedent(
    """
    import sys
    from pypaimon import CatalogFactory
    from pypaimon.schema.data_types import DataTypeParser
    from pypaimon.schema.schema_change import Move, SchemaChange

    P = DataTypeParser.parse_data_type
    nested = {"type": "ROW", "fields": [
        {"id": 0, "name": "a", "type": "INT"},
        {"id": 0, "name": "b", "type": {"type": "ROW", "fields": [
            {"id": 0, "name": "c", "type": "STRING"}]}},
        {"id": 0, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL",
            "value": {"type": "ROW", "fields": [{"id": 0, "name": "x", "type": "INT"}]}}},
    ]}
    changes = [
        SchemaChange.add_column("r", P(nested), "nested", Move.after("r", "k")),
        SchemaChange.add_column("first", P("STRING"), None, Move.first("first")),
        SchemaChange.rename_column("s", "s2"),
        SchemaChange.drop_column("w"),
        SchemaChange.add_column("w", P("BIGINT")),
        SchemaChange.update_column_type("v", P("BIGINT")),
        SchemaChange.update_column_comment("v", "value"),
        SchemaChange.update_column_position(Move.before("s2", "v")),
        SchemaChange.set_option("snapshot.num-retained.max", "7"),
        SchemaChange.update_comment("altered"),
    ]
    CatalogFactory.create({"warehouse": sys.argv[1]}).alter_table("db.t", changes)
    """
)

NESTED = DataType.parse(
    {
        "type": "ROW",
        "fields": [
            {"id": 0, "name": "a", "type": "INT"},
            {
                "id": 0,
                "name": "b",
                "type": {"type": "ROW", "fields": [{"id": 0, "name": "c", "type": "STRING"}]},
            },
            {
                "id": 0,
                "name": "m",
                "type": {
                    "type": "MAP",
                    "key": "STRING NOT NULL",
                    "value": {"type": "ROW", "fields": [{"id": 0, "name": "x", "type": "INT"}]},
                },
            },
        ],
    }
)
CHANGES = [
    AddColumn("r", NESTED, "nested", Position.after("k")),
    AddColumn("first", DataType.parse("STRING"), None, Position.FIRST),
    RenameColumn("s", "s2"),
    DropColumn("w"),
    AddColumn("w", DataType.parse("BIGINT")),
    UpdateColumnType("v", DataType.parse("BIGINT")),
    UpdateColumnComment("v", "value"),
    UpdateColumnPosition("s2", Position.before("v")),
    SetOption("snapshot.num-retained.max", "7"),
    UpdateComment("altered"),
]


def _doc(schema: TableSchema) -> dict[str, Any]:
    doc = json.loads(schema.to_json())
    doc.pop("timeMillis")
    return doc


def test_pypaimon_alter_writes_the_schema_apply_changes_computes(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    arrow = pa.schema(
        [("k", pa.int32()), ("v", pa.int32()), ("s", pa.string()), ("w", pa.string())]
    )
    catalog.create_table("db.t", schema=arrow, primary_keys=["k"], options={"bucket": "1"})
    schema_dir = warehouse / "db.db" / "t" / "schema"
    before = TableSchema.from_json((schema_dir / "schema-0").read_text())
    proc = subprocess.run(
        [str(require_oracle()), "-c", ALTER, str(warehouse)],
        capture_output=True,
        text=True,
        timeout=ORACLE_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    theirs = TableSchema.from_json((schema_dir / "schema-1").read_text())
    ours = apply_changes(before, CHANGES, has_snapshots=False)
    assert _doc(ours) == _doc(theirs)
    # k v s w = 0..3; r = 4 with a 5, c 6, b 7, x 8, m 9; first = 10; the re-added w = 11
    assert ours.highest_field_id == 11
    assert [f.id for f in ours.fields] == [10, 0, 4, 2, 1, 11]
