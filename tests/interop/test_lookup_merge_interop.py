"""Tables that need lookup, merged as Paimon merges them (``lakeops.merge.lookup_view``),
judged by Java Paimon 0.9 in both directions.

On a primary-key table with ``changelog-producer = lookup`` (or ``force-lookup``), Paimon's
compaction writes, of each key it lifts from level 0, the key's whole state (merged with the
record a lookup finds below), and its readers merge only a key's lowest level above 0 with its
level-0 records (``LookupMergeFunction``). Before lakeops did the same, an aggregation table
written by both sides was read wrong by each: lakeops summed Java's running total with the
older one below it, and Java read only lakeops' newest partial sum.

The table: a large base, fully compacted into the top level, then small writes of a few keys,
so each lift writes one level below the base (the size ratio keeps the base out).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from tests.interop.java_oracle import run_ops

pytestmark = pytest.mark.interop

BASE = 200_000
SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string())]
)


def _table(warehouse: Path, engine: str, **extra: str):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    options = {
        "bucket": "1",
        "merge-engine": engine,
        "changelog-producer": "lookup",
        "write-buffer-size": "256 kb",
        **extra,
    }
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=options)
    keys = np.arange(BASE, dtype=np.int32)
    table.write(pa.table({"k": keys, "v": keys.astype(np.int64) * 10, "s": ["base"] * BASE}))
    table.compact(full=True)
    return table


def _rows(keys: list[int], values: list[int | None], strings: list[str | None]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int32()), "v": values, "s": strings}, schema=SCHEMA)


def _java_rows(java_classpath: str, warehouse: Path, keys: set[int]) -> dict[int, tuple]:
    (result,) = run_ops(java_classpath, str(warehouse), [{"op": "read", "table": "db.t"}])
    assert len(result["rows"]) == BASE
    return {r["k"]: (r["v"], r["s"]) for r in result["rows"] if r["k"] in keys}


def _lakeops_rows(warehouse: Path, keys: set[int]) -> dict[int, tuple]:
    got = Catalog(str(warehouse)).get_table("db.t").read()
    assert got.num_rows == BASE
    return {
        k: (v, s)
        for k, v, s in zip(*(got.column(c).to_pylist() for c in ("k", "v", "s")), strict=True)
        if k in keys
    }


def _lifted(table) -> bool:  # type: ignore[no-untyped-def]
    """Whether the writes were lifted below the base (which keeps the top level)."""
    levels = sorted(f.level for s in table.splits() for f in s.files)
    return len(levels) >= 2 and levels[-1] == 5 and levels.count(5) == 1


def test_aggregation_lifted_by_lakeops_is_read_by_java(
    warehouse: Path, java_classpath: str
) -> None:
    table = _table(warehouse, "aggregation")
    table.write(_rows([1, 7], [1, 5], ["a", None]))
    table.write(_rows([1], [2], [None]))
    assert _lifted(table)  # the base below still holds keys 1 and 7
    top = min((f for s in table.splits() for f in s.files), key=lambda f: f.level)
    path = next(Path(warehouse).rglob(top.file_name))
    # what the last lift wrote is the key's whole state: everything below merged in
    assert pq.read_table(path, columns=["k", "v"]).to_pylist() == [{"k": 1, "v": 13}]
    expected = {1: (13, "a"), 7: (75, "base"), 8: (80, "base")}
    assert _lakeops_rows(warehouse, set(expected)) == expected
    assert _java_rows(java_classpath, warehouse, set(expected)) == expected


def test_aggregation_lifted_by_java_is_read_by_lakeops(
    warehouse: Path, java_classpath: str
) -> None:
    base = _table(warehouse, "aggregation").latest_snapshot()
    assert base is not None
    ops = [
        {"op": "write", "table": "db.t", "rows": [{"k": 1, "v": 1, "s": "j"}, {"k": 7, "v": 5}]},
        {"op": "write", "table": "db.t", "rows": [{"k": 1, "v": 2, "s": None}]},
    ]
    run_ops(java_classpath, str(warehouse), ops)
    assert _lifted(Catalog(str(warehouse)).get_table("db.t"))
    expected = {1: (13, "j"), 7: (75, "base"), 8: (80, "base")}
    assert _lakeops_rows(warehouse, set(expected)) == expected
    # the net changes between the two merged states (a split read of each)
    diff = Catalog(str(warehouse)).get_table("db.t").read_changes(base.id, mode="diff")
    assert {(r["_row_kind"], r["k"], r["v"]) for r in diff.to_pylist()} == {
        ("-U", 1, 10),
        ("+U", 1, 13),
        ("-U", 7, 70),
        ("+U", 7, 75),
    }
    # lakeops' own compaction and lookups take Java's level as the whole state too
    table = Catalog(str(warehouse)).get_table("db.t")
    looked = table.lookup(pa.table({"k": pa.array([1, 7], pa.int32())}))
    assert looked.select(["k", "v"]).sort_by("k").to_pylist() == [
        {"k": 1, "v": 13},
        {"k": 7, "v": 75},
    ]
    table.write(_rows([1], [100], [None]))
    table.compact(full=True)
    expected[1] = (113, "j")
    assert _lakeops_rows(warehouse, set(expected)) == expected
    assert _java_rows(java_classpath, warehouse, set(expected)) == expected


def test_partial_update_lifted_by_lakeops_is_read_by_java(
    warehouse: Path, java_classpath: str
) -> None:
    table = _table(warehouse, "partial-update")
    table.write(_rows([1], [None], ["new"]))  # v stays the base's 10
    table.write(_rows([2], [-2], [None]))  # s stays "base"
    assert _lifted(table)
    expected = {1: (10, "new"), 2: (-2, "base"), 3: (30, "base")}
    assert _lakeops_rows(warehouse, set(expected)) == expected
    assert _java_rows(java_classpath, warehouse, set(expected)) == expected


def test_force_lookup_without_a_changelog_lifts_whole_states(
    warehouse: Path, java_classpath: str
) -> None:
    """``force-lookup`` makes a table look up without producing a changelog: its level-0
    files are rewritten with the state below, never moved up as they are."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    options = {
        "bucket": "1",
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "force-lookup": "true",
        "write-buffer-size": "256 kb",
    }
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=options)
    keys = np.arange(BASE, dtype=np.int32)
    table.write(pa.table({"k": keys, "v": keys.astype(np.int64) * 10, "s": ["base"] * BASE}))
    table.compact(full=True)
    table.write(_rows([1], [1], [None]))
    table.compact()
    expected = {1: (11, "base"), 2: (20, "base")}
    assert _lakeops_rows(warehouse, set(expected)) == expected
    assert _java_rows(java_classpath, warehouse, set(expected)) == expected


def test_sequence_field_lifted_by_lakeops_keeps_the_later_record_below(
    warehouse: Path, java_classpath: str
) -> None:
    """Deduplicate by ``sequence.field``: a lifted record older (by its field) than the key's
    record below must not land on top of it, since Paimon's readers take the top one."""
    table = _table(warehouse, "deduplicate", **{"sequence.field": "v"})
    table.write(_rows([1, 2], [5, 500], ["late", "new"]))  # base: v = 10, 20
    assert _lifted(table)
    # the lift wrote each key's state: key 1's later record from below, not its "late" one
    # (Paimon 0.9's reader takes a key's latest record above level 0, which hides the
    # difference; Paimon 1.x's takes the one on the lowest level)
    top = min((f for s in table.splits() for f in s.files), key=lambda f: f.level)
    path = next(Path(warehouse).rglob(top.file_name))
    assert pq.read_table(path, columns=["k", "v", "s"]).to_pylist() == [
        {"k": 1, "v": 10, "s": "base"},
        {"k": 2, "v": 500, "s": "new"},
    ]
    expected = {1: (10, "base"), 2: (500, "new"), 3: (30, "base")}
    assert _lakeops_rows(warehouse, set(expected)) == expected
    assert _java_rows(java_classpath, warehouse, set(expected)) == expected
