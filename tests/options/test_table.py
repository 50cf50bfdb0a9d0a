"""``TableOptions``' gates: a table keyed by nanosecond timestamps, where pandas is missing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lakeops import Catalog
from tests.without_pandas import run_without_pandas

BASE = 1_700_000_000_000_000_000

#: what a process without pandas does with the table (``tests.without_pandas``)
_WITHOUT_PANDAS = """
import sys
import pyarrow as pa
from lakeops import Catalog
from lakeops.errors import UnsupportedFeatureError
table = Catalog(sys.argv[1]).get_table("db.t")
ks = pa.array([BASE + 2], pa.timestamp("ns"))
for name, action in [
    ("read", lambda: table.read()),
    ("write", lambda: table.write(pa.table({"k": ks, "v": pa.array([9], pa.int64())},
                                           schema=table.arrow_schema))),
    ("lookup", lambda: table.lookup(pa.table({"k": ks}))),
    ("compact", lambda: table.compact(full=True)),
]:
    try:
        action()
        print(name, "ran")
    except UnsupportedFeatureError as exc:
        print(name, "refused:", exc)
print(len(table.snapshots()))
""".replace("BASE", str(BASE))


def test_nanosecond_keys_without_pandas_are_refused(tmp_path: Path) -> None:
    # keys 1 ns apart: a write, a lookup or a compaction takes key values into Python and is
    # refused up front, naming the column and the fix; a read compares the files' key ranges,
    # which hold nanoseconds, and is refused when it meets them (lakeops.format.binary_row)
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.timestamp("ns"), False), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["k"])
    keys = pa.array([BASE + 1, BASE + 2, BASE + 3], pa.timestamp("ns"))
    table.write(pa.table({"k": keys, "v": pa.array([1, 2, 3], pa.int64())}, schema=schema))
    lines = run_without_pandas(_WITHOUT_PANDAS, str(tmp_path))
    for line, action in zip(lines[:4], ("read", "write", "lookup", "compact"), strict=True):
        assert line.startswith(f"{action} refused:"), line
        assert "pip install 'lakeops[pandas]'" in line
        assert action == "read" or "['k']" in line
    assert lines[4] == "1"  # nothing was committed
    # with pandas the same write runs, exactly
    table.write(pa.table({"k": keys[1:2], "v": pa.array([9], pa.int64())}, schema=schema))
    got = table.read().sort_by("k")
    assert got.column("v").to_pylist() == [1, 9, 3]
