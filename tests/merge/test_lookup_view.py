"""Paimon's lookup merge view (``lakeops.merge.lookup_view``) against a plain per-key model:
of each key, every level-0 record and, above level 0, only the record on the lowest-numbered
level count."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from lakeops.format.kv import KIND, SEQ
from lakeops.format.schema import TableSchema
from lakeops.merge import create_merge_engine, sort_merge
from lakeops.merge.engine import MergeEngine
from lakeops.merge.lookup_view import LEVEL, needs_lookup_view, top_records, with_level
from lakeops.merge.ordering import merged_order
from lakeops.options import TableOptions


def _model(rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(key, sequence, level) rows kept, in their order."""
    lowest: dict[int, int] = {}
    for key, _, level in rows:
        if level > 0:
            lowest[key] = min(level, lowest.get(key, level))
    return [r for r in rows if r[2] == 0 or r[2] == lowest[r[0]]]


@pytest.mark.parametrize("seed", range(20))
def test_top_records_keeps_level_zero_and_the_lowest_upper_level(seed: int) -> None:
    rng = random.Random(seed)
    rows = []
    for key in range(rng.randint(1, 30)):
        levels = rng.sample(range(1, 6), rng.randint(0, 4)) + [0] * rng.randint(0, 3)
        rows += [(key, rng.randint(0, 99), level) for level in levels]
    table = pa.table(
        {
            "k": [r[0] for r in rows],
            "seq": [r[1] for r in rows],
            LEVEL: pa.array([r[2] for r in rows], pa.int32()),
        }
    )
    got = top_records(table, ["k"])
    kept = [(r["k"], r["seq"], r[LEVEL]) for r in got.to_pylist()]
    assert kept == _model(rows)


@pytest.mark.parametrize(
    ("needs_lookup", "engine", "vectors", "sequence", "expected"),
    [
        (True, "aggregation", False, False, True),
        (True, "partial-update", False, False, True),
        (True, "deduplicate", False, True, True),
        (True, "deduplicate", False, False, False),  # the top record is the latest anyway
        (True, "first-row", False, False, False),  # Paimon does not wrap first-row
        (True, "aggregation", True, False, False),  # deletion vectors delete the stale ones
        (False, "aggregation", False, False, False),
    ],
)
def test_which_tables_need_the_view(
    needs_lookup: bool, engine: str, vectors: bool, sequence: bool, expected: bool
) -> None:
    assert needs_lookup_view(needs_lookup, engine, vectors, sequence) is expected


def test_with_level_marks_every_record() -> None:
    table = with_level(pa.table({"k": [1, 2]}), 3)
    assert table.column(LEVEL).type == pa.int32()
    assert table.column(LEVEL).to_pylist() == [3, 3]


def _sum_engine() -> MergeEngine:
    schema = TableSchema.from_arrow(
        pa.schema([("k", pa.int64()), ("v", pa.int64())]),
        ["k"],
        [],
        {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    )
    return create_merge_engine(TableOptions.from_schema(schema), schema)


@pytest.mark.parametrize("seed", range(12))
def test_a_merge_with_levels_sums_each_keys_level_zero_and_lowest_upper_record(seed: int) -> None:
    """``sort_merge`` / ``merged_order`` with ``levels``: a sum over each key's level-0
    records and its record on its lowest level above 0 (records in random order; the
    superseded ones may sort first in their key)."""
    rng = random.Random(seed)
    rows: list[dict[str, int]] = []
    for key in range(rng.randint(1, 25)):
        for level in rng.sample(range(1, 6), rng.randint(0, 3)) + [0] * rng.randint(0, 3):
            rows.append({"k": key, "v": rng.randint(-50, 50), "level": level})
    rng.shuffle(rows)
    for seq, row in enumerate(rng.sample(range(len(rows)), len(rows))):
        rows[row]["seq"] = seq
    records = pa.table(
        {
            "_KEY_k": pa.array([r["k"] for r in rows], pa.int64()),
            SEQ: pa.array([r["seq"] for r in rows], pa.int64()),
            KIND: pa.array([0] * len(rows), pa.int8()),
            "v": pa.array([r["v"] for r in rows], pa.int64()),
        }
    )
    levels = np.array([r["level"] for r in rows], np.int32)
    got = sort_merge(records, ["_KEY_k"], _sum_engine(), levels=levels)
    kept = [(r["k"], r["seq"], r["level"]) for r in rows]
    expected: dict[int, int] = {}
    for key, seq, _level in _model(kept):
        expected[key] = expected.get(key, 0) + next(r["v"] for r in rows if r["seq"] == seq)
    assert dict(zip(*(got.column(c).to_pylist() for c in ("_KEY_k", "v")), strict=True)) == (
        expected
    )
    # a picking engine's order skips the superseded records too
    dedupe = merged_order(records, ["_KEY_k"], _dedupe_engine(), levels=levels)
    assert dedupe is not None
    last = {}
    for key, seq, _level in _model(kept):
        last[key] = max(seq, last.get(key, -1))
    assert records.take(dedupe).column(SEQ).to_pylist() == [last[k] for k in sorted(last)]


def _dedupe_engine() -> MergeEngine:
    schema = TableSchema.from_arrow(
        pa.schema([("k", pa.int64()), ("v", pa.int64())]), ["k"], [], {"bucket": "1"}
    )
    return create_merge_engine(TableOptions.from_schema(schema), schema)
