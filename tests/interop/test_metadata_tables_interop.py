"""lakeops' metadata tables against Java Paimon 0.9's system tables (``db.t$snapshots`` …
read by ``Catalog.getTable`` and a ReadBuilder) on one table with commits from both engines,
partitions, a full compaction, a schema change, a retraction, and tags from both engines.

Both sides run in a non-UTC zone (the system tables show local wall-clock times). What
legitimately differs, and how the comparison treats it:

- row order: Paimon lists files, partitions and rows in its scan order, lakeops sorted; both
  are compared as sorted lists;
- ``tags.create_time``: a ``TIMESTAMP(3)`` column, but Java keeps the ``LocalDateTime``'s
  microseconds in the row; compared at millisecond precision;
- ``schemas.options``: a JSON object whose key order is the map's; compared as parsed JSON.

``buckets`` is not a user-facing system table in Paimon 0.9: it is checked against the
aggregation of Java's ``$files`` per (partition, bucket), and against pypaimon 2.1's
``$buckets``; pypaimon's other system tables are compared too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.table.system_tables import SYSTEM_TABLES
from tests.interop.java_oracle import json_rows, run_ops
from tests.interop.oracle import oracle_script

pytestmark = pytest.mark.interop

FIELDS = [
    {"name": "id", "type": "BIGINT NOT NULL"},
    {"name": "dt", "type": "STRING NOT NULL"},
    {"name": "v", "type": "DOUBLE"},
    {"name": "n", "type": "INT"},
]
JAVA_NAMES = [n for n in SYSTEM_TABLES if n not in ("buckets", "binlog")]  # later Paimon's


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run in UTC-03:00 (no daylight saving), this process and the JVM it starts."""
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


_PAIMON_TYPES = {
    pa.int64(): "BIGINT",
    pa.int32(): "INT",
    pa.string(): "STRING",
    pa.float64(): "DOUBLE",
    pa.timestamp("ms"): "TIMESTAMP(3)",
}


def _paimon_type(field: pa.Field) -> str:
    """``name TYPE [NOT NULL]`` as Java's ``DataField`` name and ``DataType.toString``."""
    return f"{field.name} {_PAIMON_TYPES[field.type]}" + ("" if field.nullable else " NOT NULL")


def _row(i: int, dt: str, v: float | None, n: int | None, kind: str = "+I") -> dict[str, Any]:
    return {"id": i, "dt": dt, "v": v, "n": n, "__kind__": kind}


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _normalized(name: str, rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for row in rows:
        row = dict(row)
        if name == "tags" and row["create_time"] is not None:
            row["create_time"] = row["create_time"][:23]  # milliseconds (see the docstring)
        if name == "schemas":
            row["options"] = json.loads(row["options"])
        out.append(row)
    return _sorted(out)


def test_metadata_tables_match_java_system_tables(
    zone: None, catalog: Catalog, warehouse: Path, java_classpath: str
) -> None:
    t = {"table": "db.t"}
    a = {"table": "db.a"}
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                **t,
                "fields": FIELDS,
                "primary_keys": ["id", "dt"],
                "partition_keys": ["dt"],
                "options": {"bucket": "2"},
            },
            {
                "op": "write",
                **t,
                "rows": [_row(i, "a" if i % 3 else "b", i / 2, i) for i in range(12)],
            },
            {"op": "write", **t, "rows": [_row(1, "a", None, 7), _row(20, "c", 1.25, None)]},
            {"op": "compact", **t},
            {
                "op": "alter",
                **t,
                "changes": [{"change": "addColumn", "name": "note", "type": "STRING"}],
            },
            {
                "op": "write",
                **t,
                "rows": [
                    {**_row(2, "a", -0.5, 3), "note": "x"},
                    _row(4, "a", None, None, "-D"),
                ],
            },
            {"op": "tag", **t, "name": "java-tag"},
            # an append table (no primary key): every table but audit_log serves it too
            {
                "op": "create",
                **a,
                "fields": FIELDS,
                "primary_keys": [],
                "partition_keys": ["dt"],
                "options": {},
            },
            {
                "op": "write",
                **a,
                "rows": [_row(i, "a" if i % 2 else "b", i * 1.5, None) for i in range(6)],
            },
            {"op": "write", **a, "rows": [_row(9, "a", None, 9)]},
        ],
    )
    table = catalog.get_table("db.t")
    table.write(
        pa.table(
            {"id": [5, 30], "dt": ["a", "d"], "v": [9.0, 2.0], "n": [1, 2], "note": ["y", None]},
            schema=table.arrow_schema,
        )
    )
    table.create_tag("kept", 2, time_retained="3 d")
    append_names = list(JAVA_NAMES)  # audit_log too: every row of an append table, +I
    java = run_ops(
        java_classpath,
        warehouse,
        [{"op": "system", **t, "name": n} for n in JAVA_NAMES]
        + [{"op": "system", **a, "name": n} for n in append_names],
    )
    compared = [("db.t", n) for n in JAVA_NAMES] + [("db.a", n) for n in append_names]
    for (identifier, name), result in zip(compared, java, strict=True):
        ours = catalog.metadata_table(f"{identifier}${name}")
        if identifier == "db.t":
            assert table.metadata_table(name).equals(ours)
        assert [_paimon_type(f) for f in ours.schema] == [
            f"{f['name']} {f['type']}" for f in result["fields"]
        ], name
        assert _normalized(name, json_rows(ours)) == _normalized(name, result["rows"]), (
            identifier,
            name,
        )
    append_files = catalog.metadata_table("db.a$files")
    assert append_files.num_rows == 3  # two partitions, two commits
    assert set(append_files.column("min_key").to_pylist()) == {None}  # no key
    assert all("id=" in s for s in append_files.column("min_value_stats").to_pylist())
    assert set(catalog.metadata_table("db.a$audit_log").column("rowkind").to_pylist()) == {"+I"}
    # what the comparison covers: both engines' files, old and new schema, stats, retraction
    files = catalog.metadata_table("db.t$files")
    assert set(files.column("schema_id").to_pylist()) == {0, 1}
    assert "{}" in files.column("min_value_stats").to_pylist()  # lakeops' file: no stats
    assert any("v=-0.5" in s for s in files.column("min_value_stats").to_pylist())
    audit = catalog.metadata_table("db.t$audit_log")
    assert "-D" in audit.column("rowkind").to_pylist()
    assert catalog.metadata_table("db.t$tags").column("tag_name").to_pylist() == [
        "kept",
        "java-tag",
    ]
    # buckets: the aggregation of Java's $files per (partition, bucket)
    java_files = java[JAVA_NAMES.index("files")]["rows"]
    model: dict[tuple[str, int], list[int]] = {}
    for f in java_files:
        acc = model.setdefault((f["partition"], f["bucket"]), [0, 0, 0])
        acc[0] += f["record_count"]
        acc[1] += f["file_size_in_bytes"]
        acc[2] += 1
    buckets = catalog.metadata_table("db.t$buckets").to_pylist()
    assert {
        (b["partition"], b["bucket"]): [b["record_count"], b["file_size_in_bytes"], b["file_count"]]
        for b in buckets
    } == model


def _pypaimon_partition(text: str) -> str:
    """Our ``[a]`` (Paimon 0.9's spelling) as pypaimon spells a ``dt`` partition: ``dt=a``."""
    return "dt=" + text[1:-1]


def test_metadata_tables_match_pypaimon_system_tables(catalog: Catalog, warehouse: Path) -> None:
    """pypaimon 2.1's system tables (later Paimon's: more columns, ours are their first ones)
    equal lakeops' on a table lakeops wrote, compacted and tagged — ``buckets`` included, which
    Java Paimon 0.9 lacks. Legitimate differences: pypaimon spells partitions ``dt=a``, renders
    value statistics as JSON (not compared), and keeps only seconds of the file times."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.float64())]
    )
    table = catalog.create_table(
        "db.p",
        schema=schema,
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    table.write(
        pa.table(
            {"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [1.0, None, 2.5, 3.0]},
            schema=schema,
        )
    )
    table.write(pa.table({"id": [1, 5], "dt": ["a", "c"], "v": [9.0, 4.0]}, schema=schema))
    table.compact(full=True)
    table.write(pa.table({"id": [6], "dt": ["a"], "v": [0.5]}, schema=schema))
    table.create_tag("t2", 2, time_retained="1 d")
    table.create_branch("b1", from_tag="t2")
    # pypaimon 2.1 has no audit_log, binlog or ro
    names = [n for n in SYSTEM_TABLES if n not in ("audit_log", "binlog", "ro")]
    theirs = oracle_script(warehouse, [{"op": "read", "table": f"db.p${n}"} for n in names])
    for name, their in zip(names, theirs, strict=True):
        ours = table.metadata_table(name)
        if name == "branches":  # pypaimon has later Paimon's columns: the ones both have
            ours = ours.select([c for c in ours.schema.names if c in their.schema.names])
        their = their.select(ours.schema.names)
        assert their.schema.types == ours.schema.types, name
        mine, other = ours.to_pylist(), their.to_pylist()
        for row in mine:
            if "partition" in row:
                row["partition"] = _pypaimon_partition(row["partition"])
            for key in ("creation_time", "last_update_time"):
                if name in ("files", "buckets") and row.get(key) is not None:
                    row[key] = row[key].replace(microsecond=0)
            if name == "files":
                for key in ("null_value_counts", "min_value_stats", "max_value_stats"):
                    row[key] = None
        for row in other:
            if name == "files":
                for key in ("null_value_counts", "min_value_stats", "max_value_stats"):
                    row[key] = None
        assert _sorted(mine) == _sorted(other), name
