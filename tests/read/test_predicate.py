"""Row filters (:mod:`lakeops.read.predicate`): the exact expression equals a plain Python
evaluation of the filter, and pruning by value ranges is safe (never skips a range holding a
matching value) and, for the comparisons it can decide, exact."""

from __future__ import annotations

import itertools
import operator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops.errors import ConfigurationError
from lakeops.read.predicate import may_match, normalize, row_filter, to_expression

COLUMNS = ["a", "b"]
DOMAIN = range(-2, 4)
COMPARE = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _holds(op: str, x: Any, value: Any) -> bool:
    """Plain semantics of one condition, as ``pyarrow.parquet`` filters have them: a null
    matches only ``not in`` (its ``is_in`` is false, and the negation true)."""
    if op == "not in":
        return x is None or x not in value
    if x is None:
        return False
    if op == "in":
        return x in value
    return bool(COMPARE[op](x, value))


def _model(dnf: list[list[tuple[str, str, Any]]], row: dict[str, Any]) -> bool:
    return any(all(_holds(o, row[c], v) for c, o, v in conj) for conj in dnf)


CONDITIONS = [
    (col, op, value)
    for col in COLUMNS
    for op, value in [
        *((op, v) for op in COMPARE for v in (0, 2)),
        ("in", [1, 3]),
        ("not in", [0, 1]),
        ("IN", (2,)),
    ]
]
FILTERS: list[Any] = [[c] for c in CONDITIONS[::3]] + [
    [CONDITIONS[0], CONDITIONS[-1]],  # AND
    [[CONDITIONS[2]], [CONDITIONS[-5], CONDITIONS[7]]],  # OR of ANDs
]


@pytest.mark.parametrize("filter", FILTERS, ids=str)
def test_expression_equals_the_plain_evaluation(filter: Any) -> None:
    rows = [{"a": a, "b": b} for a in [*DOMAIN, None] for b in [*DOMAIN, None]]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    dnf = normalize(filter, COLUMNS)
    assert dnf is not None
    got = table.filter(to_expression(dnf)).to_pylist()
    assert got == [r for r in rows if _model(dnf, r)]


@pytest.mark.parametrize("filter", FILTERS, ids=str)
def test_range_pruning_is_safe_and_exact_where_decidable(filter: Any) -> None:
    dnf = normalize(filter, COLUMNS)
    assert dnf is not None
    bounds = [(lo, hi) for lo, hi in itertools.product(DOMAIN, DOMAIN) if lo <= hi]
    for (alo, ahi), (blo, bhi) in itertools.product(bounds, bounds):
        some_row_matches = any(
            _model(dnf, {"a": a, "b": b}) for a in range(alo, ahi + 1) for b in range(blo, bhi + 1)
        )
        pruned = not may_match(dnf, {"a": (alo, ahi), "b": (blo, bhi)})
        assert not (pruned and some_row_matches), (filter, (alo, ahi), (blo, bhi))
        decidable = all(o.lower() != "not in" and o != "!=" for conj in dnf for _, o, _ in conj)
        if decidable and len(dnf) == 1 and len(dnf[0]) == 1:  # one comparison: exact
            assert pruned == (not some_row_matches), (filter, (alo, ahi))


def test_columns_without_a_range_and_nan_bounds_decide_nothing() -> None:
    dnf = normalize([("a", "=", 5)], COLUMNS)
    assert may_match(dnf, {}) is True
    assert may_match(dnf, {"a": (None, None)}) is True
    assert may_match(normalize([("a", "<", 1.0)], COLUMNS), {"a": (2.0, float("nan"))}) is True
    assert may_match(dnf, {"a": (6, 9)}) is False
    assert may_match(normalize([("a", "=", "x")], COLUMNS), {"a": (1, 2)}) is True  # incomparable
    assert may_match(None, {"a": (6, 9)}) is True


def test_normalize_forms() -> None:
    assert normalize(None, COLUMNS) is None
    assert normalize([], COLUMNS) is None
    assert normalize([("a", "IN", (1, 2))], COLUMNS) == [[("a", "in", [1, 2])]]
    assert normalize([[("a", "=", 1)], [("b", ">", 2)]], COLUMNS) == [
        [("a", "=", 1)],
        [("b", ">", 2)],
    ]


@pytest.mark.parametrize(
    ("filter", "message"),
    [
        ([("a", "like", 1)], "operator 'like'"),
        ([("c", "=", 1)], "column 'c' is not in the table"),
        ([("a", "=")], "must be a \\(column, op, value\\) tuple"),
        ([["a", "=", 1]], "must be a \\(column, op, value\\) tuple"),
    ],
)
def test_bad_filters_are_refused(filter: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        normalize(filter, COLUMNS)


@pytest.mark.parametrize(
    ("filter", "message"),
    [
        (pc.field("c") == 1, "cannot be applied"),
        (pc.field("a") + 1, "cannot be applied"),
        ([("c", "=", 1)], "column 'c' is not in the table"),
    ],
)
def test_bad_row_filters_are_refused(filter: Any, message: str) -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    with pytest.raises(ConfigurationError, match=message):
        row_filter(filter, schema)


def test_a_time_zone_mismatch_is_refused_before_any_row_is_read(tmp_path: Any) -> None:
    # Arrow compares a zoned timestamp with a naive one on an empty table, and fails only on
    # rows: the filter is checked on a row of nulls, so the read refuses before it opens a file
    from lakeops import Catalog

    zoned = pa.timestamp("us", tz="UTC")
    schema = pa.schema([pa.field("k", zoned, False), ("v", pa.int64())])
    naive = pc.field("k") == pa.scalar(1, pa.timestamp("us"))
    with pytest.raises(ConfigurationError, match="without timezone"):
        row_filter(naive, schema)
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=schema, primary_keys=["k"])
    table.write(pa.table({"k": pa.array([1, 2], zoned), "v": [1, 2]}, schema=schema))
    with pytest.raises(ConfigurationError, match="cannot be applied"):
        table.read(filter=naive)
    assert table.read(filter=pc.field("k") == pa.scalar(2, zoned)).column("v").to_pylist() == [2]


def test_row_filter_reads_both_forms() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    assert row_filter(None, schema) is None and row_filter([], schema) is None
    rf = row_filter([("b", ">", 2)], schema)
    assert rf is not None and rf.columns == ("b",) and rf.tree is not None
    rf = row_filter(pc.field("a").is_null() | (pc.field("b") == 1), schema)
    assert rf is not None and rf.columns == ("a", "b") and rf.tree is not None
