"""Consumers and ``$ro`` across engines: Java Paimon 0.9 and lakeops each write a primary-key
table (a fully compacted first state, then a level-0 write) and register a consumer; each reads
the other's consumer file (Java through ``$consumers``, lakeops by resuming ``read_changes``
from it), and both engines' ``$ro`` equal each other and the plain model (the compacted state).
pypaimon 2.1 (which has ``$consumers``, but no ``$ro`` or ``$binlog``) lists the consumers
lakeops wrote, and lakeops lists the one pypaimon wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.store.consumers import read_next_snapshot
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]


def _kv(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return normalize(rows, ["id"])


def test_consumers_and_ro_between_java_lakeops_and_pypaimon(
    warehouse: Path, java_classpath: str
) -> None:
    first, later = _kv(range(0, 30), "a"), _kv(range(20, 40), "b")
    model = json_rows(first)  # ro: the fully compacted state; the later write is in level 0
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.j",
                "fields": FIELDS,
                "primary_keys": ["id"],
                "options": {"bucket": "2"},
            },
            {"op": "write", "table": "db.j", "rows": json_rows(first)},
            {"op": "compact", "table": "db.j"},
            {"op": "write", "table": "db.j", "rows": json_rows(later)},
            {"op": "consumer", "table": "db.j", "name": "java-job", "next_snapshot": 2},
        ],
    )
    catalog = Catalog(str(warehouse))
    ours = catalog.create_table("db.l", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    assert isinstance(ours, Table)
    ours.write(first)
    ours.compact(full=True)
    ours.write(later)
    # a lakeops consumer: everything read, the next snapshot recorded as Paimon writes it
    assert ours.read_changes(consumer_id="lake-job").num_rows == 30 + 20
    assert read_next_snapshot(ours.store, "lake-job") == 4
    # lakeops resumes Java's consumer: after snapshot 1 (Java's compaction adds no rows)
    java_table = catalog.get_table("db.j")
    assert isinstance(java_table, Table)
    assert java_table.metadata_table("consumers").to_pylist() == [
        {"consumer_id": "java-job", "next_snapshot_id": 2}
    ]
    resumed = java_table.read_changes(consumer_id="java-job")
    assert _rows(json_rows(resumed.drop_columns(["_row_kind"]))) == _rows(json_rows(later))
    assert read_next_snapshot(java_table.store, "java-job") == 4

    java = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "system", "table": "db.j", "name": "consumers"},
            {"op": "system", "table": "db.l", "name": "consumers"},
            {"op": "system", "table": "db.j", "name": "ro"},
            {"op": "system", "table": "db.l", "name": "ro"},
        ],
    )
    # Java reads the consumer files lakeops wrote (its own one rewritten by lakeops)
    assert [f"{f['name']} {f['type']}" for f in java[0]["fields"]] == [
        "consumer_id STRING NOT NULL",
        "next_snapshot_id BIGINT NOT NULL",
    ]
    assert java[0]["rows"] == [{"consumer_id": "java-job", "next_snapshot_id": 4}]
    assert java[1]["rows"] == [{"consumer_id": "lake-job", "next_snapshot_id": 4}]
    # $ro of both tables, by both engines: the compacted state, not the level-0 write
    for table, result in (("db.j", java[2]), ("db.l", java[3])):
        mine = catalog.metadata_table(f"{table}$ro")
        assert [f["name"] for f in result["fields"]] == mine.schema.names
        assert _rows(result["rows"]) == _rows(json_rows(mine)) == _rows(model), table
        optimized = catalog.get_table(table).read(mode="read-optimized")
        assert _rows(json_rows(optimized)) == _rows(result["rows"]), table

    # pypaimon 2.1: reads the consumers lakeops wrote; writes one lakeops lists
    theirs = oracle_script(
        warehouse,
        [
            {"op": "read", "table": "db.l$consumers"},
            {"op": "consumer", "table": "db.l", "name": "py-job", "next_snapshot": 3},
        ],
    )
    assert theirs[0].to_pylist() == [{"consumer_id": "lake-job", "next_snapshot_id": 4}]
    consumer_file = warehouse / "db.db" / "l" / "consumer" / "consumer-py-job"
    assert json.loads(consumer_file.read_text()) == {"nextSnapshot": 3}
    assert catalog.metadata_table("db.l$consumers").to_pylist() == [
        {"consumer_id": "lake-job", "next_snapshot_id": 4},
        {"consumer_id": "py-job", "next_snapshot_id": 3},
    ]
    # lakeops resumes pypaimon's consumer: snapshot 3 (the level-0 write) on
    resumed = ours.read_changes(consumer_id="py-job").drop_columns(["_row_kind"])
    assert _rows(json_rows(resumed)) == _rows(json_rows(later))
    assert read_next_snapshot(ours.store, "py-job") == 4
