"""Value statistics of lakeops' append files against Java Paimon 0.9's.

Java and lakeops each write the same rows, one commit of one file per table, into tables with
the same options (the default ``truncate(16)``, per-field modes, every data format); Java's
``$files`` system table (``null_value_counts``, ``min_value_stats``, ``max_value_stats``, as
Java renders the manifest's value statistics) must be the same for both tables' files. Then a
filter read by lakeops prunes its own files by those statistics and still returns exactly the
model's rows.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import json_rows, run_ops

pytestmark = pytest.mark.interop

#: (name, Paimon type, Arrow type)
COLUMNS = [
    ("i", "INT", pa.int32()),
    ("ti", "TINYINT", pa.int8()),
    ("si", "SMALLINT", pa.int16()),
    ("bi", "BIGINT", pa.int64()),
    ("s", "STRING", pa.string()),
    ("d", "DOUBLE", pa.float64()),
    ("f", "FLOAT", pa.float32()),
    ("b", "BOOLEAN", pa.bool_()),
    ("dec", "DECIMAL(10, 2)", pa.decimal128(10, 2)),
    ("big", "DECIMAL(38, 4)", pa.decimal128(38, 4)),
    ("ts", "TIMESTAMP(3)", pa.timestamp("ms")),
    ("ts6", "TIMESTAMP(6)", pa.timestamp("us")),
    ("bin", "BYTES", pa.binary()),
    ("day", "DATE", pa.date32()),
    ("arr", {"type": "ARRAY", "element": "INT"}, pa.list_(pa.field("element", pa.int32()))),
    ("empty", "INT", pa.int32()),
    ("k", "BIGINT", pa.int64()),
    ("name", "STRING", pa.string()),
]
SCHEMA = pa.schema([(n, t) for n, _, t in COLUMNS])
FIELDS = [{"name": n, "type": p} for n, p, _ in COLUMNS]

#: table suffix -> options
CASES: dict[str, dict[str, str]] = {
    "default": {},
    "modes": {
        "metadata.stats-mode": "full",
        "fields.s.stats-mode": "truncate(3)",
        "fields.i.stats-mode": "none",
        "fields.bi.stats-mode": "counts",
        "fields.arr.stats-mode": "counts",
    },
    "avro": {"file.format": "avro"},
    "orc": {"file.format": "orc"},
}


def _batch(seed: int) -> pa.Table:
    n = 5
    base = dt.datetime(2024, 1, 1, 12, 0, 0)

    def pick(values: list[Any]) -> list[Any]:
        return [values[(seed + j) % len(values)] for j in range(n)]

    return pa.table(
        {
            "i": pick([seed * 10 + 1, None, -7, 3, 2**31 - 1]),
            "ti": pick([-128, 5, None, 127, 0]),
            "si": pick([300, -300, None, 1, 2]),
            "bi": pick([None, -(2**63), 42, seed, 7]),
            "s": pick(
                ["é😀" * 12, "", None, "x" * 20 + str(seed), "zz\U0010ffff", "\U0010ffff" * 17]
            ),
            "d": pick([0.0, -0.0, 1.5, None, -2.25 - seed]),
            "f": pick([-0.0, 0.5, None, 3.25, float(seed)]),
            "b": pick([True, None, True, True, bool(seed % 2)]),
            "dec": pick([Decimal("1.25"), None, Decimal("-3.00"), Decimal(seed), Decimal("0.01")]),
            "big": pick([Decimal("12345678901234567890.1234"), Decimal("-1.0001"), None, None]),
            "ts": pick([base, None, base + dt.timedelta(days=seed, milliseconds=7)]),
            "ts6": pick(
                [base + dt.timedelta(microseconds=seed), None, base - dt.timedelta(days=1)]
            ),
            "bin": pick([b"a", None, b"\xff" * 20]),
            "day": pick([dt.date(2020, 2, 29), None, dt.date(1969, 12, 31 - seed)]),
            "arr": pick([[1, 2], None, []]),
            "empty": [None] * n,
            "k": [seed * 100 + j for j in range(n)],
            "name": [f"{seed}-a-name-longer-than-16-{j}" for j in range(n)],
        },
        schema=SCHEMA,
    )


def _stats(rows: list[dict[str, Any]], case: str) -> list[tuple[Any, ...]]:
    def bounds(text: str) -> str:
        if case == "orc":  # lakeops keeps no timestamp bounds in ORC files (lakeops.kv.stats)
            text = re.sub(r"ts=[^,]*, ts6=[^}]*}$", "ts=null, ts6=null}", text)
        return text

    return sorted(
        (
            r["record_count"],
            r["null_value_counts"],
            bounds(r["min_value_stats"]),
            bounds(r["max_value_stats"]),
        )
        for r in rows
    )


def test_append_value_stats_equal_java_and_prune(tmp_path: Path, java_classpath: str) -> None:
    batches = [_batch(s) for s in range(3)]
    wh = str(tmp_path)
    catalog = Catalog(wh)
    catalog.create_database("db")
    ops: list[dict[str, Any]] = []
    for case, options in CASES.items():
        ops.append(
            {
                "op": "create",
                "table": f"db.j_{case}",
                "fields": FIELDS,
                "partition_keys": [],
                "options": options,
            }
        )
        ops += [{"op": "write", "table": f"db.j_{case}", "rows": json_rows(b)} for b in batches]
        table = catalog.create_table(f"db.l_{case}", schema=SCHEMA, options=options)
        for b in batches:
            table.write(b)
    # one JVM: Java's writes, then its $files of both sides' tables
    ops += [
        {"op": "system", "table": f"db.{side}_{case}", "name": "files"}
        for case in CASES
        for side in ("j", "l")
    ]
    results = run_ops(java_classpath, wh, ops)[-2 * len(CASES) :]
    for k, case in enumerate(CASES):
        java, ours = results[2 * k]["rows"], results[2 * k + 1]["rows"]
        assert len(java) == len(ours) == len(batches), case
        assert _stats(ours, case) == _stats(java, case), case

    # a filter read of lakeops' own files prunes them by these statistics, and returns exactly
    # the model's rows
    model = pa.concat_tables(batches)
    for case, wanted in [
        ("default", pc.field("k") == 102),
        ("default", pc.field("name") >= "2"),  # truncated, rounded-up max
        ("modes", pc.field("name") < "1"),
        ("avro", pc.field("k") > 150),
        ("orc", pc.field("k") < 5),
    ]:
        table = catalog.get_table(f"db.l_{case}")
        read = sum(len(s.files) for s in table.splits(filter=wanted))
        assert read == 1, (case, wanted)
        got = table.read(filter=wanted)
        assert json_rows(got) == json_rows(model.filter(wanted)), (case, wanted)
