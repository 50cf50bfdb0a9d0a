"""Point lookups read unit by unit (:mod:`lakeops.read.lookup_files`): files written here with
row groups of a few dozen rows, so a lookup meets many units per file. Every lookup is judged
against a plain model (a dict of the rows written); which units a lookup reads is judged
against the files' own row groups as pyarrow reads them, not as lakeops does."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog, Table
from lakeops.kv.reader import KeyValueReader
from lakeops.read.lookup_files import UNIT_CACHE, UnitCache
from lakeops.read.lookup_local import LocalSettings
from lakeops.read.scan import table_deletion_files

#: rows per Parquet row group of the files these tests write
ROWS = 40
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), False), ("v", pa.int64()), ("s", pa.string()), ("op", pa.string())]
)
VARIANTS = {
    "fixed": {"bucket": "2"},
    "dynamic": {"bucket": "-1"},
    "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "lookup-changelog": {"bucket": "2", "changelog-producer": "lookup"},
    "orc": {"bucket": "2", "file.format": "orc"},
    "avro": {"bucket": "2", "file.format": "avro"},
    "partial-update": {"bucket": "2", "merge-engine": "partial-update"},
}


@pytest.fixture(autouse=True)
def no_local_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests judge the unit path: local lookup files off
    (tests/read/test_lookup_local.py judges those)."""
    off = LocalSettings(None, 0.0, 0)
    monkeypatch.setattr("lakeops.read.lookup.local_settings", lambda _o: off)


@pytest.fixture(autouse=True)
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Parquet files written with row groups of :data:`ROWS` rows, and a cold cache."""
    original = pq.ParquetWriter.write_table

    def write_table(self: pq.ParquetWriter, table: pa.Table, row_group_size: Any = None) -> None:
        original(self, table, row_group_size=ROWS)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    UNIT_CACHE.clear()
    yield
    UNIT_CACHE.clear()


def _data_files(root: Path) -> list[Path]:
    return sorted(root.glob("bucket-*/data-*.parquet"))


def _apply(model: dict[int, dict[str, Any]], rows: list[dict[str, Any]], partial: bool) -> None:
    for r in rows:
        if r["op"] == "-D":
            model.pop(r["id"], None)
        elif partial and r["id"] in model:
            old = model[r["id"]]
            model[r["id"]] = {k: (old[k] if v is None else v) for k, v in r.items()}
        else:
            model[r["id"]] = dict(r)


def _written(table: Table, seed: int, partial: bool) -> dict[int, dict[str, Any]]:
    """Writes even ids 0..2998 in one commit, then updates, deletes and inserts; the model."""
    rng = random.Random(seed)
    model: dict[int, dict[str, Any]] = {}
    first = [{"id": i, "v": i, "s": f"s{i}", "op": "+I"} for i in range(0, 3000, 2)]
    batches = [first]
    for _ in range(3):
        rows = []
        for i in rng.sample(range(3200), 150):
            op = rng.choice(["+I", "+U", "-D"]) if not partial else "+U"
            v = None if partial and rng.random() < 0.5 else rng.randrange(10**6)
            rows.append({"id": i, "v": v, "s": f"t{i}", "op": op})
        batches.append(rows)
    for rows in batches:
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        _apply(model, rows, partial)
    table.flush_level0()  # lookup tables see levels >= 1 only
    return model


def _looked_up(table: Table, ids: list[int]) -> dict[int, dict[str, Any]]:
    got = table.lookup(pa.table({"id": pa.array(ids, pa.int64())}))
    assert got.schema.names == SCHEMA.names
    rows = got.to_pylist()
    assert len(rows) == len({r["id"] for r in rows})  # one row per key
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_lookups_across_many_units_return_the_models_rows(catalog: Catalog, variant: str) -> None:
    partial = variant == "partial-update"
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"rowkind.field": "op", **VARIANTS[variant]},
    )
    model = _written(table, seed=len(variant), partial=partial)
    root = Path(table.store.root)
    if VARIANTS[variant].get("file.format") is None:
        assert any(pq.ParquetFile(p).metadata.num_row_groups > 3 for p in _data_files(root))
    if variant == "deletion-vectors":
        ctx = table.context
        assert table_deletion_files(ctx, table.store.latest_snapshot())  # vectors exercised
    rng = random.Random(1)
    asks = [
        [0],
        [2998, 2999, 3000, 3199, 5000, -1],  # last key, absent keys inside and past the range
        rng.sample(range(-10, 3300), 25),  # cold units
        rng.sample(range(-10, 3300), 25),  # some units cached by now
        rng.sample(range(-10, 3300), 400),
        list(range(-10, 3300)),  # every key: every unit of every file
    ]
    for ids in asks:
        want = {i: model[i] for i in ids if i in model}
        assert _looked_up(table, ids) == want


def _units_of(path: Path) -> list[list[int]]:
    """The ids of each row group of a data file, read by pyarrow."""
    pf = pq.ParquetFile(path)
    return [
        pf.read_row_group(rg, columns=["_KEY_id"]).column(0).to_pylist()
        for rg in range(pf.metadata.num_row_groups)
    ]


def test_a_lookup_reads_only_the_units_that_hold_its_keys(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"}
    )
    model = {i: {"id": i, "v": i, "s": f"s{i}", "op": "+I"} for i in range(0, 2000, 2)}
    table.write(pa.Table.from_pylist(list(model.values()), schema=SCHEMA))
    table.compact(full=True)
    (path,) = _data_files(Path(table.store.root))
    units = _units_of(path)
    assert len(units) > 10
    reads: list[tuple[int, tuple[str, ...]]] = []
    original = KeyValueReader.read_unit_columns

    def spy(self: KeyValueReader, p: str, f: Any, unit: int, columns: list[str]) -> pa.Table:
        reads.append((unit, tuple(columns)))
        return original(self, p, f, unit, columns)

    monkeypatch.setattr(KeyValueReader, "read_unit_columns", spy)
    present, absent = units[7][3], units[9][3] + 1  # an odd id inside unit 9's range
    assert _looked_up(table, [present, absent]) == {present: model[present]}
    # the key column of both units the statistics admit; the rest only of the one holding a key
    assert sorted(reads) == [
        (7, ("_KEY_id",)),
        (7, ("_SEQUENCE_NUMBER", "_VALUE_KIND", "v", "s", "op")),
        (9, ("_KEY_id",)),
    ]
    reads.clear()
    assert _looked_up(table, [present, absent]) == {present: model[present]}
    assert reads == []  # warm: all from the cache
    other = units[2][0]
    assert _looked_up(table, [other, present]) == {other: model[other], present: model[present]}
    assert sorted(reads) == [
        (2, ("_KEY_id",)),
        (2, ("_SEQUENCE_NUMBER", "_VALUE_KIND", "v", "s", "op")),
    ]


def test_deleted_rows_are_dropped_by_position_in_any_unit(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op", "deletion-vectors.enabled": "true"},
    )
    model = {i: {"id": i, "v": i, "s": f"s{i}", "op": "+I"} for i in range(1000)}
    table.write(pa.Table.from_pylist(list(model.values()), schema=SCHEMA))
    table.compact(full=True)
    # one key per unit deleted, one updated: the big file keeps its rows, marked deleted
    changes = [{"id": i, "v": None, "s": None, "op": "-D"} for i in range(5, 1000, ROWS)]
    changes += [{"id": i, "v": -i, "s": "new", "op": "+U"} for i in range(7, 1000, ROWS)]
    table.write(pa.Table.from_pylist(changes, schema=SCHEMA))
    _apply(model, changes, partial=False)
    assert table_deletion_files(table.context, table.store.latest_snapshot())
    ids = [i for j in range(0, 1000, ROWS) for i in (j + 4, j + 5, j + 7)]
    assert _looked_up(table, ids) == {i: model[i] for i in ids if i in model}
    assert _looked_up(table, list(range(1000))) == model


@pytest.mark.parametrize("order", [["k", "x"], ["x", "k"]])
def test_composite_string_and_float_keys(catalog: Catalog, order: list[str]) -> None:
    """A float first key has no statistics (they leave NaN out): no unit is pruned."""
    schema = pa.schema(
        [pa.field("k", pa.string(), False), pa.field("x", pa.float64(), False), ("v", pa.int64())]
    )
    table = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=order,
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    xs = [-1.5, 0.25, 2.0, math.inf, math.nan]
    rows = [
        {"k": f"k{i:03d}", "x": x, "v": i * 10 + j} for i in range(60) for j, x in enumerate(xs)
    ]
    table.write(pa.Table.from_pylist(rows, schema=schema))
    table.compact(full=True)

    def key(k: str, x: float) -> tuple[str, Any]:
        return (k, "NaN" if math.isnan(x) else x)

    model = {key(r["k"], r["x"]): r["v"] for r in rows}
    asked = [("k007", math.nan), ("k007", 0.25), ("k059", math.inf), ("k030", 3.0), ("k999", 2.0)]
    got = table.lookup(
        pa.table({"k": [k for k, _ in asked], "x": pa.array([x for _, x in asked], pa.float64())})
    )
    found = {key(r["k"], r["x"]): r["v"] for r in got.to_pylist()}
    assert found == {key(*a): model[key(*a)] for a in asked if key(*a) in model}


def test_the_cache_stays_within_its_budget(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "rowkind.field": "op", "lookup.cache-max-memory-size": "16 kb"},
    )
    model = _written(table, seed=3, partial=False)
    rng = random.Random(2)
    for _ in range(6):
        ids = rng.sample(range(3200), 60)
        assert _looked_up(table, ids) == {i: model[i] for i in ids if i in model}
        assert 0 < UNIT_CACHE.size <= 16 * 1024


def test_unit_cache_keeps_the_most_recently_used_columns() -> None:
    cache = UnitCache(budget_bytes=3 * (8 * 100 + 256))
    loads: list[tuple[int, tuple[str, ...]]] = []

    def load(unit: int):  # type: ignore[no-untyped-def]
        def read(names: list[str]) -> pa.Table:
            loads.append((unit, tuple(names)))
            return pa.table({n: pa.array(range(unit, unit + 100), pa.int64()) for n in names})

        return read

    f = ("file", "/t/data-1.parquet", 123)
    assert cache.columns(f, 0, ["a", "b"], load(0))["b"].to_pylist() == list(range(100))
    cache.columns(f, 1, ["a"], load(1))
    cache.columns(f, 0, ["a"], load(0))  # unit 0's "a" used last: unit 0's "b" goes first
    cache.columns(f, 2, ["a"], load(2))
    assert loads == [(0, ("a", "b")), (1, ("a",)), (2, ("a",))]
    got = cache.columns(f, 0, ["a", "b"], load(0))  # "b" was evicted, "a" was kept
    assert loads[-1] == (0, ("b",))
    assert got["a"].to_pylist() == got["b"].to_pylist() == list(range(100))
    assert cache.size <= cache.budget
    cache.resize(0)
    assert cache.size == 0


def test_large_key_sets_are_pruned_by_the_range_of_the_first_key(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op", "write-only": "true"},
    )
    model: dict[int, dict[str, Any]] = {}
    for c in range(3):  # three files with disjoint key ranges, of many units each
        rows = [{"id": c * 10**6 + i, "v": i, "s": "x", "op": "+I"} for i in range(0, 12000, 2)]
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
        _apply(model, rows, partial=False)
    opened: set[str] = set()
    original = KeyValueReader.read_unit_columns

    def spy(self: KeyValueReader, p: str, f: Any, unit: int, columns: list[str]) -> pa.Table:
        opened.add(p)
        return original(self, p, f, unit, columns)

    monkeypatch.setattr(KeyValueReader, "read_unit_columns", spy)
    (second,) = [p for p in _data_files(Path(table.store.root)) if _units_of(p)[0][0] == 10**6]
    # 6100 keys (more than are pruned one by one) from the last key of the file's first unit
    start = _units_of(second)[0][-1]
    ids = list(range(start, start + 6100))
    assert _looked_up(table, ids) == {i: model[i] for i in ids if i in model}
    assert len(opened) == 1  # only the second file's range overlaps theirs
    everything = [i for c in range(3) for i in range(c * 10**6 - 3, c * 10**6 + 12003)]
    assert _looked_up(table, everything) == {i: model[i] for i in everything if i in model}
    assert len(opened) == 3


def test_large_key_sets_of_float_keys(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("x", pa.float64(), False), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["x"], options={"bucket": "1"})
    xs = [i / 4 for i in range(-6000, 6000)] + [math.inf, -math.inf, math.nan]
    table.write(pa.table({"x": xs, "v": list(range(len(xs)))}, schema=schema))
    table.compact(full=True)
    model = {("NaN" if math.isnan(x) else x): v for v, x in enumerate(xs)}
    asked = [i / 8 for i in range(-2000, 12000)] + [math.nan, math.inf]
    got = table.lookup(pa.table({"x": pa.array(asked, pa.float64())}))
    found = {("NaN" if math.isnan(r["x"]) else r["x"]): r["v"] for r in got.to_pylist()}
    want_keys = {("NaN" if math.isnan(x) else x) for x in asked}
    assert found == {k: v for k, v in model.items() if k in want_keys}
