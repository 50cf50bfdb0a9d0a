"""Golden warehouses written by pypaimon 2.1 and Java Paimon 0.9 read as Java Paimon reads them."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.conftest import GOLDEN

EXPECTED = json.loads((GOLDEN / "expected.json").read_text())
SERVED = ["s1_buckets", "s2_partitioned", "s3_seqfield", "s4_partial", "s5_agg", "s6_firstrow"]


def _rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize("warehouse", ["pypaimon-wh", "java-compacted-wh"])
@pytest.mark.parametrize("name", SERVED)
def test_reads_like_java_paimon(golden_copy, warehouse: str, name: str) -> None:
    catalog = Catalog(str(golden_copy(warehouse)))
    expected = EXPECTED[warehouse][name]
    got = catalog.get_table(f"db.{name}").read()
    assert _rows(got) == sorted(expected, key=lambda r: json.dumps(r, sort_keys=True, default=str))


#: rows appended to each golden table: updates, deletes (rowkind field ``op``), stale and newer
#: sequence values, partial rows, aggregated values, and keys that are new (a new partition too)
CHANGES: dict[str, list[dict]] = {
    "s1_buckets": [
        {"id": 1, "name": "renamed", "score": 9.5, "n": 10, "op": "+U"},
        {"id": 5, "name": None, "score": None, "n": None, "op": "-D"},
        {"id": 5000, "name": "new", "score": 1.0, "n": 1, "op": "+I"},
    ],
    "s2_partitioned": [
        {"dt": "2024-01-01", "k": "k0", "v": -1, "op": "+U"},
        {"dt": "2024-01-02", "k": "kk1", "v": None, "op": "-D"},
        {"dt": "2024-02-01", "k": "k0", "v": 7, "op": "+I"},
    ],
    "s3_seqfield": [
        {"id": 0, "ts": 5, "v": "older"},
        {"id": 1, "ts": 20, "v": "newer"},
        {"id": 1000, "ts": 1, "v": "fresh"},
    ],
    "s4_partial": [
        {"id": 1, "a": None, "b": 99},
        {"id": 2, "a": "w", "b": None},
        {"id": 4, "a": "q", "b": None},
    ],
    "s5_agg": [
        {"id": 1, "total": 5, "mx": 3},
        {"id": 2, "total": None, "mx": 20},
        {"id": 3, "total": 7, "mx": None},
    ],
    "s6_firstrow": [{"id": 0, "v": "late"}, {"id": 500, "v": "new"}],
}
KEYS = {"s2_partitioned": ("dt", "k")}


def _apply(name: str, rows: list[dict], changes: list[dict]) -> list[dict]:
    """A plain model of each table's merge engine: ``rows`` (as Java Paimon reads the table)
    after appending ``changes`` in order."""
    keys = KEYS.get(name, ("id",))
    state = {tuple(r[k] for k in keys): dict(r) for r in rows}
    for change in changes:
        key = tuple(change[k] for k in keys)
        old = state.get(key)
        if name in ("s1_buckets", "s2_partitioned"):  # deduplicate, rowkind field "op"
            if change["op"] in ("-D", "-U"):
                state.pop(key, None)
            else:
                state[key] = dict(change)
        elif name == "s3_seqfield":  # sequence.field "ts": the larger ts wins
            if old is None or change["ts"] > old["ts"]:
                state[key] = dict(change)
        elif name == "s4_partial":  # partial-update: non-null fields overwrite
            state[key] = {**(old or {}), **{f: v for f, v in change.items() if v is not None}}
            state[key] = {f: state[key].get(f) for f in change}
        elif name == "s5_agg":  # sum(total), max(mx), nulls ignored
            if old is None:
                state[key] = dict(change)
            else:
                total = [v for v in (old["total"], change["total"]) if v is not None]
                mx = [v for v in (old["mx"], change["mx"]) if v is not None]
                state[key] = {
                    "id": change["id"],
                    "total": sum(total) if total else None,
                    "mx": max(mx) if mx else None,
                }
        else:  # first-row: the first row of a key stays
            state.setdefault(key, dict(change))
    return list(state.values())


@pytest.mark.parametrize("name", SERVED)
def test_append_to_pypaimon_table(golden_copy, name: str) -> None:
    """Rows appended by lakeops to a pypaimon-written table merge with its rows as the engine's
    plain model says (the starting rows are Java Paimon's reading of the table)."""
    table = Catalog(str(golden_copy("pypaimon-wh"))).get_table(f"db.{name}")
    before = table.latest_snapshot()
    table.write(pa.Table.from_pylist(CHANGES[name], schema=table.arrow_schema))
    kinds = [s.commit_kind for s in table.snapshots() if s.id > before.id]
    assert kinds[0] == "APPEND" and kinds.count("APPEND") == 1  # (first-row also compacts)
    start = EXPECTED["pypaimon-wh"][name]
    if name == "s6_firstrow":  # first-row reads level 0 only once flushed (as Java does)
        start = EXPECTED["java-compacted-wh"][name]
        table.flush_level0()
    expected = _apply(name, start, CHANGES[name])
    assert _rows(table.read()) == _rows(pa.Table.from_pylist(expected))


@pytest.mark.parametrize("warehouse", ["pypaimon-wh", "java-compacted-wh"])
@pytest.mark.parametrize("name", SERVED)
def test_full_compaction_keeps_java_paimons_rows(golden_copy, warehouse: str, name: str) -> None:
    table = Catalog(str(golden_copy(warehouse))).get_table(f"db.{name}")
    table.flush_level0() if name == "s6_firstrow" else table.compact(full=True)
    expected = EXPECTED["java-compacted-wh" if name == "s6_firstrow" else warehouse][name]
    assert _rows(table.read()) == sorted(
        expected, key=lambda r: json.dumps(r, sort_keys=True, default=str)
    )
    assert {e.file.level for e in table.store.live_entries(table.latest_snapshot())} <= {
        1,
        2,
        3,
        4,
        5,
    }
