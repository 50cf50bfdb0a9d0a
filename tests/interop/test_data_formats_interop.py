"""ORC data files (Paimon's format before 0.9, and ``file.format=orc``) and Avro data files
(``file.format=avro``) written by pypaimon 2.1: lakeops reads them by each file's extension,
appends files of the same format to such a table and compacts it; pypaimon reads the result
back."""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("v", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("ts", pa.timestamp("us")),
        ("day", pa.date32()),
        ("x", pa.float64()),
    ]
)


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_table_written_by_pypaimon_in_format_reads_exactly(warehouse, fmt: str) -> None:
    oracle_create(warehouse, "db.o", SCHEMA, ["id"], options={"bucket": "2", "file.format": fmt})
    first = pa.table(
        {
            "id": [1, 2, 3, 4],
            "v": ["a", None, "ünï", ""],
            "d": [Decimal("1.25"), None, Decimal("-3.10"), Decimal("99999999.99")],
            "ts": [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None, dt.datetime(1960, 1, 1), None],
            "day": [dt.date(2024, 1, 1), None, dt.date(1900, 3, 1), dt.date(9999, 12, 31)],
            "x": [0.5, float("nan"), -0.0, None],
        },
        schema=SCHEMA,
    )
    second = pa.table(
        {
            "id": [2, 5],
            "v": ["b", "e"],
            "d": [Decimal("2"), Decimal("0.01")],
            "ts": [dt.datetime(2000, 1, 1), dt.datetime(2030, 6, 1, 12)],
            "day": [dt.date(2000, 1, 1), dt.date(1970, 1, 1)],
            "x": [1.0, 2.0],
        },
        schema=SCHEMA,
    )
    oracle_write(warehouse, "db.o", first)
    oracle_write(warehouse, "db.o", second)
    assert any(p.suffix == f".{fmt}" for p in warehouse.rglob("data-*"))
    table = Catalog(str(warehouse)).get_table("db.o")
    got = table.read().sort_by("id")
    expected = oracle_read(warehouse, "db.o").sort_by("id")
    assert got.to_pylist()[0] == expected.to_pylist()[0]
    assert got.num_rows == expected.num_rows == 5
    # NaN != NaN: compare the rows with the float column rendered as text
    render = lambda t: [{**r, "x": repr(r["x"])} for r in t.to_pylist()]  # noqa: E731
    assert render(got) == render(expected)
    assert table.lookup(pa.table({"id": pa.array([2], pa.int64())}), columns=["v"]).to_pylist() == [
        {"v": "b"}
    ]

    # lakeops appends files of the same format and compacts; pypaimon reads exactly the model
    third = pa.table(
        {
            "id": [1, 6],
            "v": ["z", None],
            "d": [Decimal("-99999999.99"), None],
            "ts": [dt.datetime(1970, 1, 1), dt.datetime(2262, 4, 11, 0, 0, 0, 1)],
            "day": [None, dt.date(1, 1, 1)],
            "x": [float("inf"), -0.0],
        },
        schema=SCHEMA,
    )
    before = set(_tree(warehouse))
    table.write(third)
    new = [p for p in set(_tree(warehouse)) - before if "/data-" in p]
    assert new and all(p.endswith(f".{fmt}") for p in new)
    model = {r["id"]: r for t in (first, second, third) for r in t.to_pylist()}
    want = [model[k] for k in sorted(model)]
    table.compact(full=True)
    for t in (oracle_read(warehouse, "db.o"), table.read()):
        got_rows = t.sort_by("id").to_pylist()
        assert [{**r, "x": repr(r["x"])} for r in got_rows] == [
            {**r, "x": repr(r["x"])} for r in want
        ]
