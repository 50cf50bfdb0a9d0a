"""Interoperability with Java Paimon 0.9 (the oracle of tests/interop/java_oracle.py), both ways:
every value type written by lakeops and read by Java and the reverse, the Parquet layout of
lakeops' data files against Java's, and compaction by either side of the other's table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
from tests.interop import java_oracle
from tests.interop.java_oracle import json_rows, normalize, run_ops

pytestmark = pytest.mark.interop

UTC = dt.UTC

# (name, Paimon type as Java creates it, Arrow type lakeops reads and writes it as)
ROW_TYPE: dict[str, Any] = {
    "type": "ROW",
    "fields": [
        {"id": 100, "name": "x", "type": "INT"},
        {"id": 101, "name": "y", "type": "STRING"},
        {"id": 102, "name": "z", "type": {"type": "ARRAY", "element": "BIGINT"}},
        {"id": 103, "name": "t", "type": "TIMESTAMP(3)"},
    ],
}
ROW_ARROW = pa.struct(
    [
        ("x", pa.int32()),
        ("y", pa.string()),
        ("z", pa.list_(pa.field("element", pa.int64()))),
        ("t", pa.timestamp("ms")),
    ]
)
COLUMNS: list[tuple[str, Any, pa.DataType]] = [
    ("id", "BIGINT NOT NULL", pa.int64()),
    ("ti", "TINYINT", pa.int8()),
    ("si", "SMALLINT", pa.int16()),
    ("i", "INT", pa.int32()),
    ("bi", "BIGINT", pa.int64()),
    ("f", "FLOAT", pa.float32()),
    ("d", "DOUBLE", pa.float64()),
    ("b", "BOOLEAN", pa.bool_()),
    ("d5", "DECIMAL(5, 2)", pa.decimal128(5, 2)),
    ("d15", "DECIMAL(15, 4)", pa.decimal128(15, 4)),
    ("d25", "DECIMAL(25, 6)", pa.decimal128(25, 6)),
    ("d38", "DECIMAL(38, 10)", pa.decimal128(38, 10)),
    ("c", "CHAR(5)", pa.string()),
    ("vc", "VARCHAR(20)", pa.string()),
    ("s", "STRING", pa.string()),
    ("bn", "BINARY(4)", pa.binary()),
    ("vb", "VARBINARY(10)", pa.binary()),
    ("by", "BYTES", pa.binary()),
    ("dt", "DATE", pa.date32()),
    ("ts0", "TIMESTAMP(0)", pa.timestamp("s")),
    ("ts3", "TIMESTAMP(3)", pa.timestamp("ms")),
    ("ts6", "TIMESTAMP(6)", pa.timestamp("us")),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
    ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ("arr", {"type": "ARRAY", "element": "INT"}, pa.list_(pa.field("element", pa.int32()))),
    (
        "arr_s",
        {"type": "ARRAY", "element": "STRING"},
        pa.list_(pa.field("element", pa.string())),
    ),
    (
        "m",
        {"type": "MAP", "key": "STRING NOT NULL", "value": "DECIMAL(10, 2)"},
        pa.map_(pa.string(), pa.decimal128(10, 2)),
    ),
    ("r", ROW_TYPE, ROW_ARROW),
    (
        "deep",
        {
            "type": "ARRAY",
            "element": {
                "type": "ROW",
                "fields": [
                    # (Java 0.9 cannot read a DECIMAL in a ROW in an ARRAY, even its own:
                    # ClassCastException ParquetDecimalVector in NestedColumnReader.readRow)
                    {"id": 110, "name": "k", "type": "BIGINT"},
                    {
                        "id": 111,
                        "name": "m",
                        "type": {
                            "type": "MAP",
                            "key": "INT NOT NULL",
                            "value": {"type": "ARRAY", "element": "STRING"},
                        },
                    },
                ],
            },
        },
        pa.list_(
            pa.field(
                "element",
                pa.struct(
                    [
                        ("k", pa.int64()),
                        ("m", pa.map_(pa.int32(), pa.list_(pa.field("element", pa.string())))),
                    ]
                ),
            )
        ),
    ),
]
#: timestamps of precision 7..9 (INT96 in Paimon's files) live in a table of their own
NS_COLUMNS: list[tuple[str, Any, pa.DataType]] = [
    ("id", "BIGINT NOT NULL", pa.int64()),
    ("ts7", "TIMESTAMP(7)", pa.timestamp("ns")),
    ("ts9", "TIMESTAMP(9)", pa.timestamp("ns")),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE", pa.timestamp("ns", tz="UTC")),
    (
        "arr9",
        {"type": "ARRAY", "element": "TIMESTAMP(9)"},
        pa.list_(pa.field("element", pa.timestamp("ns"))),
    ),
]


def _ns(text: str) -> int:
    """Epoch nanoseconds of an ISO wall-clock time with up to 9 fractional digits."""
    whole, _, frac = text.partition(".")
    delta = dt.datetime.fromisoformat(whole) - dt.datetime(1970, 1, 1)
    seconds = delta.days * 86_400 + delta.seconds
    return seconds * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


def _every_type_rows(ids: list[int], tag: str = "") -> pa.Table:
    """Three kinds of rows per id triple: minimum-ish values, maximum-ish values, all NULL."""
    low = {
        "ti": -128,
        "si": -32768,
        "i": -(2**31),
        "bi": -(2**63),
        "f": -1.5,
        "d": -2.25e300,
        "b": False,
        "d5": Decimal("-999.99"),
        "d15": Decimal("-12345678901.2345"),
        "d25": Decimal("-1234567890123456789.123456"),
        "d38": Decimal("-1234567890123456789012345678.0123456789"),
        "c": "abcde",
        "vc": "",
        "s": "héllo wörld " + tag,
        "bn": b"\x00\x01\x02\x03",
        "vb": b"",
        "by": b"\x00\xff" + tag.encode(),
        "dt": dt.date(1969, 12, 31),
        "ts0": dt.datetime(1969, 7, 20, 20, 17, 40),
        "ts3": dt.datetime(1900, 1, 1, 0, 0, 0, 1000),
        "ts6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        "ltz3": dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
        "ltz6": dt.datetime(1955, 5, 5, 5, 5, 5, 50505, tzinfo=UTC),
        "arr": [1, None, -3],
        "arr_s": ["", None, "x"],
        "m": [("a", Decimal("1.50")), ("b", None)],
        "r": {"x": -1, "y": None, "z": [], "t": dt.datetime(2000, 2, 29, 1, 2, 3, 4000)},
        "deep": [{"k": -(2**40), "m": [(1, ["a", None]), (2, None)]}, None],
    }
    high = {
        "ti": 127,
        "si": 32767,
        "i": 2**31 - 1,
        "bi": 2**63 - 1,
        "f": 3.4028234663852886e38,
        "d": 1.7976931348623157e308,
        "b": True,
        "d5": Decimal("999.99"),
        "d15": Decimal("99999999999.9999"),
        "d25": Decimal("9999999999999999999.999999"),
        "d38": Decimal("9999999999999999999999999999.9999999999"),
        "c": "zzzzz",
        "vc": "twenty chars exactly",
        "s": "𝄞 " * 50,
        "bn": b"\xff\xfe\xfd\xfc",
        "vb": b"0123456789",
        "by": bytes(range(256)),
        "dt": dt.date(9999, 12, 31),
        "ts0": dt.datetime(2262, 4, 11, 23, 47, 16),
        "ts3": dt.datetime(2024, 2, 29, 23, 59, 59, 999000),
        "ts6": dt.datetime(2038, 1, 19, 3, 14, 8, 123456),
        "ltz3": dt.datetime(2024, 6, 30, 12, 0, 0, 123000, tzinfo=UTC),
        "ltz6": dt.datetime(2100, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        "arr": [],
        "arr_s": ["many", "strings", "here " + tag],
        "m": [],
        "r": {"x": 2**31 - 1, "y": "nested " + tag, "z": [2**63 - 1, None], "t": None},
        "deep": [{"k": None, "m": []}, {"k": 7, "m": None}],
    }
    rows: list[dict[str, Any]] = []
    for n, i in enumerate(ids):
        base: dict[str, Any] = low if n % 3 == 0 else high if n % 3 == 1 else {}
        rows.append({"id": i, **base})
    schema = pa.schema(
        [
            pa.field(n, t, not p.endswith("NOT NULL") if isinstance(p, str) else True)
            for n, p, t in COLUMNS
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _ns_rows(ids: list[int], java_readable: bool = False) -> pa.Table:
    """Rows of NS_COLUMNS. Java Paimon 0.9 writes a time before 1970 with a sub-millisecond
    part as INT96 with a negative nanos-of-day, which lakeops reads right but Java's own reader
    rejects (IllegalArgumentException in Timestamp.fromEpochMillis); ``java_readable`` keeps
    such times out of data Java must read back from its own files."""
    values = [
        "1970-01-01T00:00:00.000000001",
        "1969-12-31T23:59:59.999000000" if java_readable else "1969-12-31T23:59:59.999999999",
        "2262-04-11T23:47:16.854775807",
        "1677-09-21T00:12:43.146000000" if java_readable else "1677-09-21T00:12:43.145224300",
        "2024-01-01T12:34:56.123456700",
    ]
    cols: dict[str, list[Any]] = {"id": ids, "ts7": [], "ts9": [], "ltz9": [], "arr9": []}
    for n in range(len(ids)):
        v = _ns(values[n % len(values)])
        seven = v // 100 * 100  # TIMESTAMP(7) holds 100 ns steps
        cols["ts7"].append(None if n % 4 == 3 else seven)
        cols["ts9"].append(None if n % 4 == 2 else v)
        cols["ltz9"].append(v)
        cols["arr9"].append([v, None, _ns(values[(n + 1) % len(values)])])
    schema = pa.schema([pa.field(n, t, n != "id") for n, _, t in NS_COLUMNS])
    arrays = [
        pa.array(cols["id"], pa.int64()),
        pa.array(cols["ts7"], pa.int64()).cast(pa.timestamp("ns")),
        pa.array(cols["ts9"], pa.int64()).cast(pa.timestamp("ns")),
        pa.array(cols["ltz9"], pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
        pa.array(cols["arr9"], pa.list_(pa.int64())).cast(schema.field("arr9").type),
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _create_op(table: str, columns: list[tuple[str, Any, pa.DataType]], **options: str) -> dict:
    return {
        "op": "create",
        "table": table,
        "fields": [{"name": n, "type": p} for n, p, _ in columns],
        "primary_keys": ["id"],
        "options": {"bucket": "2", **options},
    }


def _leaf_layout(path: Path) -> dict[str, tuple[str, str, int, int]]:
    """Per leaf column: physical type, logical type, max definition and repetition levels."""
    schema = pq.ParquetFile(path).schema
    return {
        schema.column(i).path: (
            schema.column(i).physical_type,
            str(schema.column(i).logical_type),
            schema.column(i).max_definition_level,
            schema.column(i).max_repetition_level,
        )
        for i in range(len(schema))
    }


def _data_files(warehouse: Path, table: str) -> list[Path]:
    db, name = table.split(".")
    return sorted((warehouse / f"{db}.db" / name).glob("bucket-*/data-*.parquet"))


def _lakeops_rows(table: Any) -> list[dict[str, Any]]:
    return normalize(json_rows(table.read()), ["id"])


# ------------------------------------------------------------------------------------- tests
def test_java_reads_every_type_lakeops_wrote(warehouse: Path, java_classpath: str) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    data = _every_type_rows(list(range(9)))
    ns_data = _ns_rows(list(range(10)))
    # tables lakeops creates from Arrow schemas (no CHAR/VARCHAR(n)/BINARY(n) there) ...
    arrow_cols = [c for c in COLUMNS if c[0] not in ("c", "vc", "bn", "vb")]
    own = catalog.create_table(
        "db.own",
        schema=data.select([c[0] for c in arrow_cols]).schema,
        primary_keys=["id"],
        options={"bucket": "2"},
    )
    own_ns = catalog.create_table(
        "db.own_ns", schema=ns_data.schema, primary_keys=["id"], options={"bucket": "2"}
    )
    # ... and tables Java creates with every type, which lakeops writes and Java writes alike
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.java", COLUMNS),
            _create_op("db.java_ns", NS_COLUMNS),
            _create_op("db.layout", COLUMNS),
            _create_op("db.layout_ns", NS_COLUMNS),
            {"op": "write", "table": "db.layout", "rows": json_rows(data)},
            {"op": "write", "table": "db.layout_ns", "rows": json_rows(ns_data)},
        ],
    )
    own.write(data.select(own.arrow_schema.names))
    own_ns.write(ns_data)
    java = catalog.get_table("db.java")
    java.write(data)
    java_ns = catalog.get_table("db.java_ns")
    java_ns.write(ns_data)

    # the Parquet layout of lakeops' files is exactly Java's, column by column
    for ours, theirs in (("db.java", "db.layout"), ("db.java_ns", "db.layout_ns")):
        expected = _leaf_layout(_data_files(warehouse, theirs)[0])
        for f in _data_files(warehouse, ours):
            assert _leaf_layout(f) == expected, f

    results = run_ops(
        java_classpath,
        warehouse,
        [{"op": "read", "table": t} for t in ("db.own", "db.own_ns", "db.java", "db.java_ns")],
    )
    assert normalize(results[0]["rows"], ["id"]) == normalize(
        json_rows(data.select(own.arrow_schema.names)), ["id"]
    )
    assert normalize(results[1]["rows"], ["id"]) == normalize(json_rows(ns_data), ["id"])
    assert normalize(results[2]["rows"], ["id"]) == normalize(json_rows(data), ["id"])
    assert normalize(results[3]["rows"], ["id"]) == normalize(json_rows(ns_data), ["id"])


def test_lakeops_reads_every_type_java_wrote(warehouse: Path, java_classpath: str) -> None:
    data = _every_type_rows(list(range(12)), "java")
    ns_data = _ns_rows(list(range(10)))
    run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.t", COLUMNS),
            _create_op("db.t_ns", NS_COLUMNS),
            {"op": "write", "table": "db.t", "rows": json_rows(data.slice(0, 7))},
            {"op": "write", "table": "db.t", "rows": json_rows(data.slice(7))},
            {"op": "write", "table": "db.t_ns", "rows": json_rows(ns_data)},
        ],
    )
    catalog = Catalog(str(warehouse))
    table = catalog.get_table("db.t")
    ours = table.read()
    assert ours.schema == data.schema.remove_metadata()
    assert ours.sort_by("id").equals(data)
    ours_ns = catalog.get_table("db.t_ns").read()
    assert ours_ns.sort_by("id").equals(ns_data)
    # point lookups read the same files through their own path
    keys = pa.table({"id": pa.array([10, 3, 99, 0], pa.int64())})
    looked = table.lookup(keys).sort_by("id")
    assert looked.equals(data.filter(pc.is_in(data["id"], keys["id"])))
    looked_ns = catalog.get_table("db.t_ns").lookup(keys).sort_by("id")
    assert looked_ns.equals(ns_data.filter(pc.is_in(ns_data["id"], keys["id"])))
    # Java's files really hold Paimon's layout (what lakeops must read)
    layout = _leaf_layout(_data_files(warehouse, "db.t")[0])
    assert layout["d5"][0] == "INT32" and layout["d15"][0] == "INT64"
    assert layout["d25"][0] == layout["d38"][0] == "FIXED_LEN_BYTE_ARRAY"
    ns_layout = _leaf_layout(_data_files(warehouse, "db.t_ns")[0])
    assert ns_layout["ts9"][0] == ns_layout["ltz9"][0] == "INT96"


def test_filters_and_lookups_on_nanosecond_keys_java_wrote(
    warehouse: Path, java_classpath: str
) -> None:
    # Java's key statistics hold the nanoseconds (millis + nano-of-millisecond): lakeops prunes
    # by them exactly, so every filter and lookup finds what the rows Java wrote hold
    base = _ns("2024-01-01T12:34:56.123456700")
    schema = pa.schema([pa.field("k", pa.timestamp("ns"), False), ("v", pa.int64())])

    def rows(offsets: list[int], values: list[int]) -> pa.Table:
        keys = pa.array([base + o for o in offsets], pa.int64()).cast(pa.timestamp("ns"))
        return pa.table({"k": keys, "v": pa.array(values, pa.int64())}, schema=schema)

    first, second = rows([1, 2, 3, 5], [1, 2, 3, 5]), rows([2, 4], [20, 40])
    create = {
        "op": "create",
        "table": "db.k_ns",
        "fields": [{"name": "k", "type": "TIMESTAMP(9) NOT NULL"}, {"name": "v", "type": "BIGINT"}],
        "primary_keys": ["k"],
        "options": {"bucket": "1"},
    }
    run_ops(
        java_classpath,
        warehouse,
        [
            create,
            {"op": "write", "table": "db.k_ns", "rows": json_rows(first)},
            {"op": "write", "table": "db.k_ns", "rows": json_rows(second)},
        ],
    )
    model = pa.Table.from_pylist(
        list({r["k"]: r for r in first.to_pylist() + second.to_pylist()}.values()), schema=schema
    )
    table = Catalog(str(warehouse)).get_table("db.k_ns")
    for f in (
        pc.field("k") == pa.scalar(base + 1, pa.timestamp("ns")),
        pc.field("k") >= pa.scalar(base + 5, pa.timestamp("ns")),
        pc.field("k") < pa.scalar(base + 2, pa.timestamp("ns")),
        pc.field("k") > pa.scalar(base + 3, pa.timestamp("ns")),
    ):
        assert table.read(filter=f).sort_by("k").equals(model.filter(f).sort_by("k")), f
    sought = pa.table({"k": pa.array([base + 1, base + 4, base + 9], pa.int64())}).cast(
        pa.schema([pa.field("k", pa.timestamp("ns"), False)])
    )
    looked = table.lookup(sought).sort_by("k")
    assert looked.column("v").to_pylist() == [1, 40]


def test_compaction_by_either_side_keeps_what_both_read(
    warehouse: Path, java_classpath: str
) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    kinds_schema = _every_type_rows([0]).schema
    # lakeops' table: three commits with updates and deletes, compacted by Java
    ours = catalog.create_table(
        "db.ours",
        schema=kinds_schema.append(pa.field("op", pa.string())),
        primary_keys=["id"],
        options={"bucket": "2", "rowkind.field": "op"},
    )

    def with_op(table: pa.Table, op: str) -> pa.Table:
        return table.append_column(pa.field("op", pa.string()), pa.array([op] * table.num_rows))

    first = _every_type_rows(list(range(30)), "a")
    second = _every_type_rows(list(range(0, 30, 4)), "b")
    deletes = first.take(list(range(1, 30, 5)))
    ours.write(with_op(first, "+I"))
    ours.write(with_op(second, "+U"))
    ours.write(with_op(deletes, "-D"))
    expected_ours = ours.read().drop_columns(["op"])
    # INT96 timestamps: two commits, the second replacing some keys
    ns_first = _ns_rows(list(range(12)), java_readable=True)
    ns_second = _ns_rows(list(range(0, 24, 3)), java_readable=True)[::-1]
    ns_want = normalize(
        list({r["id"]: r for r in json_rows(ns_first) + json_rows(ns_second)}.values()), ["id"]
    )
    ours_ns = catalog.create_table(
        "db.ours_ns", schema=ns_first.schema, primary_keys=["id"], options={"bucket": "2"}
    )
    ours_ns.write(ns_first)
    ours_ns.write(ns_second)
    # partitioned: every (partition, bucket) is compacted
    parted_schema = pa.schema(
        [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int32())]
    )
    parted_first = pa.table(
        {"dt": ["a", "b", "c"] * 10, "id": list(range(30)), "v": list(range(30))},
        schema=parted_schema,
    )
    parted_second = pa.table(
        {"dt": ["a", "b", "c"] * 4, "id": list(range(0, 36, 3)), "v": [None] * 12},
        schema=parted_schema,
    )
    parted_want = normalize(
        list(
            {
                (r["dt"], r["id"]): r for r in json_rows(parted_first) + json_rows(parted_second)
            }.values()
        ),
        ["dt", "id"],
    )
    ours_parted = catalog.create_table(
        "db.ours_parted",
        schema=parted_schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    ours_parted.write(parted_first)
    ours_parted.write(parted_second)
    create_parted = {
        "op": "create",
        "table": "db.theirs_parted",
        "fields": [
            {"name": "dt", "type": "STRING NOT NULL"},
            {"name": "id", "type": "BIGINT NOT NULL"},
            {"name": "v", "type": "INT"},
        ],
        "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"],
        "options": {"bucket": "2"},
    }
    # Java's table: the same story written by Java, compacted by lakeops
    java_ops = [
        _create_op("db.theirs", COLUMNS),
        {"op": "write", "table": "db.theirs", "rows": json_rows(first)},
        {"op": "write", "table": "db.theirs", "rows": json_rows(second)},
        {
            "op": "write",
            "table": "db.theirs",
            "rows": json_rows(deletes, ["-D"] * deletes.num_rows),
        },
        _create_op("db.theirs_ns", NS_COLUMNS),
        {"op": "write", "table": "db.theirs_ns", "rows": json_rows(ns_first)},
        {"op": "write", "table": "db.theirs_ns", "rows": json_rows(ns_second)},
        create_parted,
        {"op": "write", "table": "db.theirs_parted", "rows": json_rows(parted_first)},
        {"op": "write", "table": "db.theirs_parted", "rows": json_rows(parted_second)},
        {"op": "compact", "table": "db.ours_parted"},
        {"op": "read", "table": "db.ours_parted"},
        {"op": "compact", "table": "db.ours_ns"},
        {"op": "read", "table": "db.ours_ns"},
        {"op": "compact", "table": "db.ours"},
        {"op": "read", "table": "db.ours"},
    ]
    results = run_ops(java_classpath, warehouse, java_ops)
    assert normalize(results[-3]["rows"], ["id"]) == ns_want
    assert results[-6]["buckets"] == 6
    assert normalize(results[-5]["rows"], ["dt", "id"]) == parted_want
    model = {r["id"]: r for r in json_rows(first)}
    model.update({r["id"]: r for r in json_rows(second)})
    for r in json_rows(deletes):
        model.pop(r["id"])
    want = normalize(list(model.values()), ["id"])
    ours_rows = [dict(r) for r in results[-1]["rows"]]
    for r in ours_rows:
        r.pop("op")
    assert normalize(ours_rows, ["id"]) == want
    assert normalize(json_rows(expected_ours), ["id"]) == want
    # lakeops reads Java's compaction of its table and fully compacts Java's table
    ours = catalog.get_table("db.ours")
    assert ours.latest_snapshot().commit_kind == "COMPACT"
    assert normalize(json_rows(ours.read().drop_columns(["op"])), ["id"]) == want
    theirs = catalog.get_table("db.theirs")
    assert normalize(json_rows(theirs.read()), ["id"]) == want
    snapshot = theirs.compact(full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    assert normalize(json_rows(theirs.read()), ["id"]) == want
    assert normalize(json_rows(catalog.get_table("db.ours_ns").read()), ["id"]) == ns_want
    theirs_ns = catalog.get_table("db.theirs_ns")
    assert theirs_ns.compact(full=True) is not None
    assert normalize(json_rows(theirs_ns.read()), ["id"]) == ns_want
    assert normalize(json_rows(catalog.get_table("db.ours_parted").read()), ["dt", "id"]) == (
        parted_want
    )
    theirs_parted = catalog.get_table("db.theirs_parted")
    assert theirs_parted.compact(full=True) is not None
    assert normalize(json_rows(theirs_parted.read()), ["dt", "id"]) == parted_want
    # Java reads lakeops' compaction output
    results = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.theirs"},
            {"op": "read", "table": "db.theirs_ns"},
            {"op": "read", "table": "db.theirs_parted"},
        ],
    )
    assert normalize(results[0]["rows"], ["id"]) == want
    assert normalize(results[1]["rows"], ["id"]) == ns_want
    assert normalize(results[2]["rows"], ["dt", "id"]) == parted_want


def test_mixed_timestamp_layouts_are_refused_before_writing(
    warehouse: Path, java_classpath: str
) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("a", pa.timestamp("ns")), ("b", pa.timestamp("ms"))])
    with pytest.raises(UnsupportedFeatureError, match="INT96"):
        catalog.create_table("db.mixed", schema=schema, primary_keys=["id"])
    assert not catalog.table_exists("db.mixed")
    # a table Java created and wrote: lakeops reads it, but refuses to write or compact it
    rows = [{"id": 1, "a": "2024-01-01T00:00:00.123456789", "b": "2024-01-01T00:00:00.123000000"}]
    run_ops(
        java_classpath,
        warehouse,
        [
            {
                "op": "create",
                "table": "db.java_mixed",
                "fields": [
                    {"name": "id", "type": "BIGINT NOT NULL"},
                    {"name": "a", "type": "TIMESTAMP(9)"},
                    {"name": "b", "type": "TIMESTAMP(3)"},
                ],
                "primary_keys": ["id"],
                "options": {"bucket": "1"},
            },
            {"op": "write", "table": "db.java_mixed", "rows": rows},
            {"op": "write", "table": "db.java_mixed", "rows": rows},
        ],
    )
    table = catalog.get_table("db.java_mixed")
    assert normalize(json_rows(table.read()), ["id"]) == normalize(rows, ["id"])
    root = warehouse / "db.db" / "java_mixed"
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    data = pa.table(
        {"id": [2], "a": [0], "b": [0]},
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), False),
                ("a", pa.timestamp("ns")),
                ("b", pa.timestamp("ms")),
            ]
        ),
    )
    with pytest.raises(UnsupportedFeatureError, match="b"):
        table.write(data)
    with pytest.raises(UnsupportedFeatureError, match="compact"):
        table.compact(full=True)
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before


def test_lakeops_reads_a_table_java_extended(warehouse: Path, java_classpath: str) -> None:
    """Java adds columns (at a position, with a comment) and sets an option between writes;
    lakeops reads what Java reads (older files give NULL for the added columns)."""
    results = run_ops(
        java_classpath,
        warehouse,
        [
            _create_op("db.t", COLUMNS[:3]),
            {"op": "write", "table": "db.t", "rows": [{"id": 1, "ti": 1, "si": 2}, {"id": 2}]},
            {
                "op": "alter",
                "table": "db.t",
                "changes": [
                    {"change": "addColumn", "name": "first", "type": "STRING", "position": "first"},
                    {
                        "change": "addColumn",
                        "name": "mid",
                        "type": "DECIMAL(12, 3)",
                        "position": "after",
                        "reference": "id",
                        "comment": "added",
                    },
                    {"change": "updateColumnComment", "name": "ti", "comment": "tiny"},
                    {"change": "setOption", "key": "snapshot.num-retained.min", "value": "20"},
                ],
            },
            {
                "op": "write",
                "table": "db.t",
                "rows": [{"id": 2, "first": "x", "mid": "-1.500"}, {"id": 3, "mid": "7.000"}],
            },
            {"op": "read", "table": "db.t"},
            {"op": "schema", "table": "db.t"},
        ],
    )
    assert [f["name"] for f in results[-1]["fields"]] == ["first", "id", "mid", "ti", "si"]
    assert results[-1]["schema_id"] == 1
    java_rows = normalize(results[-2]["rows"], ["id"])
    assert java_rows == [
        {"first": None, "id": 1, "mid": None, "ti": 1, "si": 2},
        {"first": "x", "id": 2, "mid": "-1.500", "ti": None, "si": None},
        {"first": None, "id": 3, "mid": "7.000", "ti": None, "si": None},
    ]
    table = Catalog(str(warehouse)).get_table("db.t")
    assert table.arrow_schema.names == ["first", "id", "mid", "ti", "si"]
    assert normalize(json_rows(table.read()), ["id"]) == java_rows


def test_a_missing_oracle_jar_fails_loudly_naming_the_setup_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(java_oracle, "BRIDGE_JAR", tmp_path / "absent.jar")
    with pytest.raises(RuntimeError, match=r"scripts/setup\.sh --oracle"):
        java_oracle.require_java_oracle()
