"""Compacted, multi-level tables stay readable by pypaimon 2.1; pypaimon's own tables compact."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.compact.test_compaction import SCHEMA, _random_commits, _state
from tests.conftest import GOLDEN
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def test_pypaimon_reads_compacted_multi_level_table(warehouse) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op", "write-only": "true"},
    )
    _random_commits(table, 20)
    table.compact()  # universal
    _random_commits(table, 4, seed=5)
    table.compact(full=True, partitions=[{"dt": "d0"}])  # d0 at the max level, d1 mixed
    _random_commits(table, 2, seed=6)
    levels = {e.file.level for e in table.store.live_entries(table.latest_snapshot())}
    assert 0 in levels and 5 in levels
    assert _sorted(oracle_read(warehouse, "db.t")) == _state(table)


def test_lakeops_compacts_a_pypaimon_table(warehouse) -> None:
    oracle_create(
        warehouse,
        "db.t",
        SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    for seed in range(4):
        rows = [
            {
                "dt": f"d{k % 2}",
                "id": k,
                "v": seed * 100 + k,
                "s": f"s{seed}",
                "op": "+I" if k % 7 else "+U",
            }
            for k in range(seed, 200, seed + 1)
        ]
        oracle_write(warehouse, "db.t", pa.Table.from_pylist(rows, schema=SCHEMA))
    table = Catalog(str(warehouse)).get_table("db.t")
    before = _state(table)
    assert _sorted(oracle_read(warehouse, "db.t")) == before
    assert table.compact(full=True) is not None
    assert _state(table) == before
    assert _sorted(oracle_read(warehouse, "db.t")) == before


def test_golden_first_row_table_readable_after_flush(golden_copy) -> None:
    wh = golden_copy("pypaimon-wh")
    table = Catalog(str(wh)).get_table("db.s6_firstrow")
    assert table.read().num_rows == 0  # pypaimon never compacts: all of it is level 0
    table.flush_level0()
    expected = json.loads((GOLDEN / "expected.json").read_text())["java-compacted-wh"][
        "s6_firstrow"
    ]
    key = next(iter(expected[0]))
    assert sorted(table.read().to_pylist(), key=lambda r: r[key]) == sorted(
        expected, key=lambda r: r[key]
    )
    rows = oracle_read(wh, "db.s6_firstrow").to_pylist()
    assert sorted(rows, key=lambda r: r[key]) == sorted(expected, key=lambda r: r[key])
