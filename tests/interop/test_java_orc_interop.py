"""ORC data files and per-level formats with Java Paimon 0.9, both ways: lakeops writes every
value type as ORC and Java reads exactly the rows; Java writes ORC and lakeops reads, appends
and compacts it for Java to read back; a table with ORC at level 0 and Parquet above is
compacted by lakeops and read by Java and pypaimon (Avro: test_java_avro_interop)."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_read
from tests.interop.test_java_interop import (
    COLUMNS,
    NS_COLUMNS,
    _create_op,
    _every_type_rows,
    _ns_rows,
)

pytestmark = pytest.mark.interop


# Times before 1970 with a sub-millisecond part cannot go into lakeops' ORC files (Java 0.9's
# ORC reader fails on them; see test_times_java_cannot_read_from_lakeops_orc_are_refused...),
# and Java's own ORC files turn a time in the last second before 1970 into one a second later
# (23:59:59.999 reads back as 00:00:00.999): ORC data holds whole milliseconds before 1970, a
# second away from the epoch
_ORC_SAFE = {
    "ts6": (
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.datetime(1969, 12, 31, 23, 59, 58, 999000),
    ),
    "ltz6": (
        dt.datetime(1955, 5, 5, 5, 5, 5, 50505, tzinfo=dt.UTC),
        dt.datetime(1955, 5, 5, 5, 5, 5, 50000, tzinfo=dt.UTC),
    ),
}


def _rows(ids: list[int], tag: str = "") -> pa.Table:
    """:func:`_every_type_rows` with the times ORC cannot carry to Java replaced (``_ORC_SAFE``)."""
    table = _every_type_rows(ids, tag)
    for name, (bad, good) in _ORC_SAFE.items():
        col = table.column(name)
        fixed = pc.if_else(pc.equal(col, pa.scalar(bad, col.type)), pa.scalar(good, col.type), col)
        index = table.schema.get_field_index(name)
        table = table.set_column(index, table.schema.field(name), fixed)
    return table


def _ns_orc(ids: list[int], java_writes: bool = False) -> pa.Table:
    """:func:`_ns_rows` in whole milliseconds before 1970. When Java writes them, only the rows
    of values 4 and 0 (the n-th row holds value n % 5 and, in its array, value (n + 1) % 5):
    Java's ORC files move value 1 (in the last second before 1970) a second later, and pyarrow's
    ORC reader overflows on value 3 (1677-09-21, near the nanosecond limit) as Java encodes it
    (ArrowInvalid: out of range for nanosecond resolution)."""
    table = _ns_rows(ids, java_readable=True)
    if not java_writes:
        return table
    return table.take([n for n in range(len(ids)) if n % 5 == 4])


def _files(warehouse: Path, table: str, pattern: str = "*") -> list[Path]:
    db, name = table.split(".")
    return sorted((warehouse / f"{db}.db" / name).rglob(f"bucket-*/{pattern}"))


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _model(*tables: pa.Table) -> list[dict]:
    """Rows of the last write of each key, in the oracle's JSON form."""
    rows: dict[int, dict] = {}
    for t in tables:
        rows.update({r["id"]: r for r in json_rows(t)})
    return normalize(list(rows.values()), ["id"])


def test_java_reads_every_type_lakeops_wrote_as_orc(warehouse: Path, java_classpath: str) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    first = _rows(list(range(9)), "a")
    second = _rows(list(range(0, 12, 2)), "b")
    ns_data = _ns_orc(list(range(10)))
    ns_second = _ns_orc(list(range(0, 15, 3)))[::-1]
    # a table lakeops creates from an Arrow schema, and ones Java creates with every type
    arrow_cols = [c[0] for c in COLUMNS if c[0] not in ("c", "vc", "bn", "vb")]
    own = catalog.create_table(
        "db.own",
        schema=first.select(arrow_cols).schema,
        primary_keys=["id"],
        options={"bucket": "2", "file.format": "orc"},
    )
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.java", COLUMNS, **{"file.format": "orc"}),
            _create_op("db.java_ns", NS_COLUMNS, **{"file.format": "orc"}),
        ],
    )
    own.write(first.select(arrow_cols))
    own.write(second.select(arrow_cols))
    java = catalog.get_table("db.java")
    java.write(first)
    java.write(second)
    # ORC keeps every timestamp precision in one file (no INT96 split as in Parquet)
    java_ns = catalog.get_table("db.java_ns")
    java_ns.write(ns_data)
    java_ns.write(ns_second)
    for t in ("db.own", "db.java", "db.java_ns"):
        names = [p.name for p in _files(warehouse, t)]
        assert names and all(n.startswith("data-") and n.endswith(".orc") for n in names), names

    results = run_ops(
        java_classpath,
        warehouse,
        [{"op": "read", "table": t} for t in ("db.own", "db.java", "db.java_ns")],
    )
    assert normalize(results[0]["rows"], ["id"]) == _model(
        first.select(arrow_cols), second.select(arrow_cols)
    )
    assert normalize(results[1]["rows"], ["id"]) == _model(first, second)
    assert normalize(results[2]["rows"], ["id"]) == _model(ns_data, ns_second)
    # lakeops reads its own ORC files back the same
    assert normalize(json_rows(java.read()), ["id"]) == _model(first, second)


def test_lakeops_appends_to_and_compacts_an_orc_table_java_wrote(
    warehouse: Path, java_classpath: str
) -> None:
    first = _rows(list(range(12)), "java")
    second = _rows(list(range(0, 12, 3)), "again")
    ns_data = _ns_orc(list(range(30)), java_writes=True)
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.t", COLUMNS, **{"file.format": "orc"}),
            _create_op("db.t_ns", NS_COLUMNS, **{"file.format": "orc"}),
            {"op": "write", "table": "db.t", "rows": json_rows(first)},
            {"op": "write", "table": "db.t", "rows": json_rows(second)},
            {"op": "write", "table": "db.t_ns", "rows": json_rows(ns_data)},
        ],
    )
    assert all(p.suffix == ".orc" for p in _files(warehouse, "db.t"))
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.t")
    assert normalize(json_rows(table.read()), ["id"]) == _model(first, second)
    third = _rows(list(range(5, 20)), "lakeops")
    table.write(third)
    table.compact(full=True)
    ns_table = catalog.get_table("db.t_ns")
    ns_more = _ns_orc(list(range(20, 40)), java_writes=True)
    ns_table.write(ns_more)
    ns_table.compact(full=True)
    results = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.t"},
            {"op": "read", "table": "db.t_ns"},
            {"op": "write", "table": "db.t", "rows": json_rows(first.slice(0, 3))},
            {"op": "compact", "table": "db.t"},
            {"op": "read", "table": "db.t"},
        ],
    )
    assert normalize(results[0]["rows"], ["id"]) == _model(first, second, third)
    assert normalize(results[1]["rows"], ["id"]) == _model(ns_data, ns_more)
    assert normalize(results[4]["rows"], ["id"]) == _model(first, second, third, first.slice(0, 3))
    assert all(p.suffix == ".orc" for p in _files(warehouse, "db.t", "data-*"))
    # lakeops reads Java's compaction of what it wrote
    got = catalog.get_table("db.t").read()
    assert normalize(json_rows(got), ["id"]) == _model(first, second, third, first.slice(0, 3))


def test_per_level_formats_compacted_by_lakeops_read_by_java_and_pypaimon(
    warehouse: Path, java_classpath: str
) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            ("v", pa.string()),
            ("x", pa.float64()),
            ("ts", pa.timestamp("us")),
            ("n", pa.decimal128(20, 3)),
        ]
    )

    def rows(ids: range, tag: str) -> pa.Table:
        return pa.table(
            {
                "id": list(ids),
                "v": [f"{tag}-{i}" if i % 4 else None for i in ids],
                "x": [i / 3 if i % 5 else float("-0.0") for i in ids],
                "ts": [i * 1_000_003 if i % 6 else None for i in ids],
                "n": [None if i % 7 == 0 else i * 1001 for i in ids],
            },
            schema=schema,
        )

    options = {
        "bucket": "2",
        "file.format.per.level": "0:orc",
        "file.compression.per.level": "0:lz4",
    }
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table("db.p", schema=schema, primary_keys=["id"], options=options)
    a, b, c = rows(range(0, 40), "a"), rows(range(10, 30), "b"), rows(range(35, 60), "c")
    table.write(a)
    table.write(b)
    # level 0 holds ORC files, nothing else yet
    assert {p.suffix for p in _files(warehouse, "db.p")} == {".orc"}
    table.compact(full=True)
    # the full compaction's output (the highest level) is Parquet, the table's default
    assert {p.suffix for p in _files(warehouse, "db.p")} >= {".parquet"}
    live = table.read()
    assert normalize(json_rows(live), ["id"]) == _model(a, b)
    table.write(c)  # a new level-0 ORC file beside the Parquet ones

    results = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.p"}])
    assert normalize(results[0]["rows"], ["id"]) == _model(a, b, c)
    theirs = oracle_read(warehouse, "db.p")
    assert normalize(json_rows(theirs.select(schema.names)), ["id"]) == _model(a, b, c)

    # Java writes level 0 (ORC by the same option), lakeops compacts, Java reads it back
    d = rows(range(50, 70), "d")
    run_ops(java_classpath, warehouse, [{"op": "write", "table": "db.p", "rows": json_rows(d)}])
    catalog.get_table("db.p").compact(full=True)
    results = run_ops(
        java_classpath,
        warehouse,
        [{"op": "compact", "table": "db.p"}, {"op": "read", "table": "db.p"}],
    )
    assert normalize(results[1]["rows"], ["id"]) == _model(a, b, c, d)
    assert normalize(json_rows(catalog.get_table("db.p").read()), ["id"]) == _model(a, b, c, d)


def test_times_java_cannot_read_from_lakeops_orc_are_refused_byte_identical(
    warehouse: Path, java_classpath: str
) -> None:
    # Java 0.9 reads its own ORC file with such a time, but not the one pyarrow's writer makes
    fields = [
        ("id", "BIGINT NOT NULL", pa.int64()),
        ("t", "TIMESTAMP(6)", pa.timestamp("us")),
        ("a", {"type": "ARRAY", "element": "TIMESTAMP(9)"}, pa.list_(pa.timestamp("ns"))),
    ]
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.o", fields, **{"file.format": "orc"}),
            {
                "op": "write",
                "table": "db.o",
                "rows": [{"id": 1, "t": "1955-05-05T05:05:05.050505000", "a": None}],
            },
            # a second file, so that a full compaction rewrites the first
            {"op": "write", "table": "db.o", "rows": [{"id": 4, "t": None, "a": []}]},
        ],
    )
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.o")
    schema = pa.schema([pa.field(n, t, n != "id") for n, _, t in fields])
    fine = pa.table(
        {"id": [2], "t": [dt.datetime(1955, 5, 5, 5, 5, 5, 50000)], "a": [[0, -1_000_000]]},
        schema=schema,
    )
    nested = pa.table({"id": [3], "t": [None], "a": [[5, -1_000_001]]}, schema=schema)
    before = _tree(warehouse)
    with pytest.raises(UnsupportedFeatureError, match="before 1970"):
        table.write(pa.concat_tables([fine, nested]))
    # compacting Java's file would rewrite its time into a file Java cannot read
    with pytest.raises(UnsupportedFeatureError, match="before 1970"):
        table.compact(full=True)
    assert _tree(warehouse) == before
    table.write(fine)  # whole milliseconds before 1970 are fine
    rows = run_ops(java_classpath, warehouse, [{"op": "read", "table": "db.o"}])[0]["rows"]
    assert normalize(rows, ["id"]) == normalize(
        [
            {"id": 1, "t": "1955-05-05T05:05:05.050505000", "a": None},
            {"id": 4, "t": None, "a": []},
            *json_rows(fine),
        ],
        ["id"],
    )
