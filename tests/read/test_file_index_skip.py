"""Reads of an append table skip files whose embedded index rules out an equality / IN
filter, and never change a result: every filtered read equals the model (pyarrow's filter over
all rows written); ``file-index.read.enabled`` = false skips nothing."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import SetOption

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.float64())])


def _batch(lo: int, hi: int) -> pa.Table:
    """Ids ``lo``..``hi`` keyed ``k<id>``, and two rows keyed ``a`` and ``z`` that give every
    file the same min/max statistics of ``s`` (so statistics cannot prune by ``s``)."""
    ids = list(range(lo, hi))
    keys = [f"k{i}" for i in ids] + ["a", "z"]
    ids += [-lo - 1, -lo - 2]
    return pa.table({"id": ids, "s": keys, "d": [i / 3 for i in ids]}, schema=SCHEMA)


def _files(table, filter) -> int:  # type: ignore[no-untyped-def]
    return sum(len(s.files) for s in table.splits(filter=filter))


def _rows(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.mark.parametrize("kind", ["bloom-filter", "bitmap", "bitmap-v2"])
def test_files_the_index_rules_out_are_skipped_and_results_match_the_model(
    catalog: Catalog, kind: str
) -> None:
    version = {"file-index.bitmap.s.version": "2"} if kind == "bitmap-v2" else {}
    kind = kind.removesuffix("-v2")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        options={
            "bucket": "-1",
            **version,
            f"file-index.{kind}.columns": "s",
            **({"file-index.bloom-filter.s.items": "100"} if kind == "bloom-filter" else {}),
            "file-index.in-manifest-threshold": "64 kb",
        },
    )
    # every file holds the keys k<id> of its own range only
    batches = [_batch(0, 10), _batch(10, 20), _batch(20, 30)]
    for b in batches:
        table.write(b)
    everything = pa.concat_tables(batches)
    assert _files(table, None) == 3
    assert _files(table, [("s", "=", "a")]) == 3
    assert _files(table, [("s", "=", "k5")]) == 1
    assert _files(table, [("s", "in", ["k5", "k15"])]) == 2
    assert _files(table, [("s", "=", "nope")]) == 0
    rng = random.Random(3)
    for _ in range(25):
        keys = [f"k{rng.randrange(60)}" for _ in range(rng.randrange(1, 4))]
        got = table.read(filter=[("s", "in", keys)])
        model = everything.filter(pc.is_in(everything.column("s"), pa.array(keys)))
        assert _rows(got) == _rows(model), keys
        expr = (pc.field("s") == keys[0]) | (pc.field("id") > 25)
        assert _rows(table.read(filter=expr)) == _rows(everything.filter(expr))

    table.alter(SetOption("file-index.read.enabled", "false"))
    table = catalog.get_table("db.t")
    assert _files(table, [("s", "=", "k5")]) == 3


def test_range_bitmap_bounds_skip_files_for_range_filters(catalog: Catalog) -> None:
    """Strings sharing a 16-character prefix: value statistics (truncated to 16 characters)
    cannot tell the files apart, a range-bitmap's exact min and max can. Each file holds its own
    range of keys; the files a range / equality filter keeps are those whose range of keys can
    satisfy it (the model), and every read equals pyarrow's filter over all rows."""
    prefix = "p" * 16
    table = catalog.create_table(
        "db.r",
        schema=SCHEMA,
        options={
            "bucket": "-1",
            "file-index.range-bitmap.columns": "s,id",
            "file-index.in-manifest-threshold": "64 kb",
        },
    )
    batches = []
    for lo in (0, 10, 20):
        ids = list(range(lo, lo + 10))
        keys = [f"{prefix}{i:03d}" for i in ids]
        batches.append(pa.table({"id": ids, "s": keys, "d": [None] * 10}, schema=SCHEMA))
        table.write(batches[-1])
    everything = pa.concat_tables(batches)
    key = f"{prefix}015"
    cases = {
        ("s", "<", key): 2,
        ("s", "<=", f"{prefix}009"): 1,
        ("s", ">", key): 2,
        ("s", ">=", f"{prefix}020"): 1,
        ("s", "=", key): 1,
        ("s", ">", f"{prefix}999"): 0,
    }
    for condition, files in cases.items():
        assert _files(table, [condition]) == files, condition
    ops = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
    rng = random.Random(5)
    for _ in range(20):
        op = rng.choice(list(ops))
        value = f"{prefix}{rng.randrange(-5, 35):03d}"
        got = table.read(filter=[("s", op, value)])
        model = everything.filter(ops[op](everything.column("s"), value))
        assert _rows(got) == _rows(model), (op, value)
    table.alter(SetOption("file-index.read.enabled", "false"))
    assert _files(catalog.get_table("db.r"), [("s", "=", key)]) == 3
