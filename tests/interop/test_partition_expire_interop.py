"""pypaimon 2.1 and Java Paimon 0.9 read a table after lakeops expired or dropped partitions:
exactly the model's rows, and the snapshot before the drop still reads every row."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_read

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
DAYS = ["2024-03-01", "2024-03-05", "2024-03-09", "2024-03-10", "not-a-date"]


def _rows(data: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in data.select(["id", "dt", "v"]).to_pylist())


def test_pypaimon_reads_after_partition_expiry(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "1", "partition.expiration-time": "2 d"},
    )
    rows = [{"id": i, "dt": d, "v": f"v{i}"} for i, d in enumerate(DAYS)]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    before = table.store.latest_snapshot_id()
    result = table.expire_partitions(now=dt.datetime(2024, 3, 10, 12))
    assert [p["dt"] for p in result.partitions] == ["2024-03-01", "2024-03-05"]

    model = sorted((r["id"], r["dt"], r["v"]) for r in rows if r["dt"] not in DAYS[:2])
    assert _rows(oracle_read(warehouse, "db.t")) == model
    assert _rows(oracle_read(warehouse, "db.t", snapshot_id=before)) == sorted(
        (r["id"], r["dt"], r["v"]) for r in rows
    )


def test_lakeops_expires_a_java_table_and_java_reads_it(
    warehouse: Path, java_classpath: str
) -> None:
    from tests.interop.java_oracle import normalize, run_ops

    options = {
        "bucket": "1",
        "partition.expiration-time": "2 h",
        "partition.timestamp-pattern": "$dt $hour:00:00",
        "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
    }
    fields = [
        {"name": "dt", "type": "STRING NOT NULL"},
        {"name": "hour", "type": "STRING NOT NULL"},
        {"name": "k", "type": "BIGINT NOT NULL"},
    ]
    rows = [
        {"dt": "20240310", "hour": "09", "k": 1},
        {"dt": "20240310", "hour": "11", "k": 2},
        {"dt": "20240309", "hour": "23", "k": 3},
    ]
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.j",
                "fields": fields,
                "primary_keys": ["dt", "hour", "k"],
                "partition_keys": ["dt", "hour"],
                "options": options,
            },
            {"op": "write", "table": "db.j", "rows": rows},
        ],
    )
    table = Catalog(str(warehouse)).get_table("db.j")
    result = table.expire_partitions(now=dt.datetime(2024, 3, 10, 12))
    assert sorted(p["hour"] for p in result.partitions) == ["09", "23"]
    read = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.j"}])
    assert normalize(read[0]["rows"], ["k"]) == [rows[1]]


def test_lakeops_drops_partitions_of_a_java_table_and_both_oracles_read_it(
    warehouse: Path, java_classpath: str
) -> None:
    """Java writes three days, two hours each; lakeops drops one whole day (a partial spec)
    and one hour of another day; Java reads the rest. (pypaimon 2.1 cannot read Java 0.9's
    manifests at all: it wants _VALUE_STATS_COLS.)"""
    from tests.interop.java_oracle import normalize, run_ops

    fields = [
        {"name": "dt", "type": "STRING NOT NULL"},
        {"name": "hour", "type": "INT NOT NULL"},
        {"name": "k", "type": "BIGINT NOT NULL"},
    ]
    rows = [
        {"dt": d, "hour": h, "k": i * 2 + h}
        for i, d in enumerate(["20240308", "20240309", "20240310"])
        for h in (0, 1)
    ]
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.j",
                "fields": fields,
                "primary_keys": ["dt", "hour", "k"],
                "partition_keys": ["dt", "hour"],
                "options": {"bucket": "1"},
            },
            {"op": "write", "table": "db.j", "rows": rows},
        ],
    )
    table = Catalog(str(warehouse)).get_table("db.j")
    result = table.drop_partitions([{"dt": "20240309"}, {"dt": "20240310", "hour": "1"}])
    assert sorted((p["dt"], p["hour"]) for p in result.partitions) == [
        ("20240309", 0),
        ("20240309", 1),
        ("20240310", 1),
    ]
    kept = [r for r in rows if r["dt"] == "20240308" or (r["dt"] == "20240310" and r["hour"] == 0)]
    read = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.j"}])
    assert normalize(read[0]["rows"], ["k"]) == sorted(kept, key=lambda r: r["k"])


def test_pypaimon_reads_after_a_drop(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"]
    )
    rows = [{"id": i, "dt": d, "v": f"v{i}"} for i, d in enumerate(DAYS)]
    table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    before = table.store.latest_snapshot_id()
    table.drop_partitions([{"dt": DAYS[1]}, {"dt": DAYS[4]}])
    model = sorted((r["id"], r["dt"], r["v"]) for r in rows if r["dt"] not in (DAYS[1], DAYS[4]))
    assert _rows(oracle_read(warehouse, "db.t")) == model
    assert _rows(oracle_read(warehouse, "db.t", snapshot_id=before)) == sorted(
        (r["id"], r["dt"], r["v"]) for r in rows
    )
