"""Reading pyarrow expressions back, and pruning by statistics against pyarrow's own filter.

The oracle is pyarrow: for random rows and random expressions, whenever ``table.filter(expr)``
keeps a row, the statistics of those rows must not let the expression be pruned; and where
the statistics pin every value (one value, no nulls), pruning must be exact for comparisons.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops.read.expression import (
    Call,
    Field,
    Literal,
    Stats,
    bucket_values,
    may_hold,
    parse,
    possible,
    referenced,
)

SCHEMA = pa.schema([("i", pa.int64()), ("s", pa.string()), ("f", pa.float64()), ("d", pa.int32())])
INTS = [-2, 0, 1, 3, 7]
STRS = ["", "a", "ab", "abc", "b", "ba", "c"]
FLOATS = [-1.5, -0.0, 0.0, 2.5, float("nan")]


def _value(rng: random.Random, col: str) -> Any:
    if rng.random() < 0.15:
        return None
    if col in ("i", "d"):
        return rng.choice(INTS)
    if col == "s":
        return rng.choice(STRS)
    return rng.choice(FLOATS)


def _literal(rng: random.Random, col: str) -> Any:
    if rng.random() < 0.05:
        return pa.scalar(None, SCHEMA.field(col).type)
    v = _value(rng, col)
    while v is None:
        v = _value(rng, col)
    if col == "i" and rng.random() < 0.2:
        return float(v)  # an int column against a float literal
    return v


def random_expression(rng: random.Random, depth: int = 0) -> pc.Expression:
    """A random boolean expression over SCHEMA's columns."""
    roll = rng.random()
    if depth < 3 and roll < 0.35:
        a, b = random_expression(rng, depth + 1), random_expression(rng, depth + 1)
        return a & b if rng.random() < 0.5 else a | b
    if depth < 3 and roll < 0.45:
        return ~random_expression(rng, depth + 1)
    col = rng.choice(SCHEMA.names)
    field = pc.field(col)
    kind = rng.random()
    if kind < 0.5:
        lit = _literal(rng, col)
        op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
        ops = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        if rng.random() < 0.2:  # literal first
            return ops[op](pc.scalar(lit), field)
        return ops[op](field, lit)
    if kind < 0.65:
        return field.is_null() if rng.random() < 0.5 else field.is_valid()
    if kind < 0.85:
        values = [_value(rng, col) for _ in range(rng.randint(0, 3))]
        arr = pa.array(values, SCHEMA.field(col).type)
        return field.isin(arr)
    if col == "s":
        return pc.starts_with(field, rng.choice(STRS))
    return field.is_null(nan_is_null=True) if col == "f" else field.is_valid()


def _stats(table: pa.Table) -> dict[str, Stats]:
    out = {}
    for name in table.column_names:
        col = table.column(name)
        values = [v for v in col.to_pylist() if v is not None and v == v]
        lo, hi = (min(values), max(values)) if values else (None, None)
        if name == "f" and any(v != v for v in col.to_pylist() if v is not None):
            lo, hi = lo if lo is not None else float("nan"), float("nan")
        out[name] = Stats(lo, hi, col.null_count, table.num_rows)
    return out


def _rows(rng: random.Random) -> pa.Table:
    n = rng.choice([1, 1, 2, 3, 6])
    return pa.table({c: [_value(rng, c) for _ in range(n)] for c in SCHEMA.names}, schema=SCHEMA)


@pytest.mark.parametrize("seed", range(4))
def test_pruning_never_drops_a_row_pyarrow_keeps(seed: int) -> None:
    rng = random.Random(seed)
    pruned = 0
    for _ in range(700):
        expr = random_expression(rng)
        tree = parse(expr)
        assert tree is not None, expr
        assert referenced(tree) <= set(SCHEMA.names)
        rows = _rows(rng)
        kept = rows.filter(expr).num_rows
        verdict = may_hold(tree, _stats(rows))
        assert verdict or kept == 0, (expr, rows.to_pylist())
        pruned += not verdict
    assert pruned > 50  # the pruning does something


def test_exact_values_prune_exactly() -> None:
    rng = random.Random(7)
    for _ in range(500):
        col = rng.choice(["i", "s", "d"])
        value = _value(rng, col)
        if value is None:
            continue
        expr = random_expression(rng)
        if referenced(parse(expr) or Field("x")) != {col}:
            continue
        tree = parse(expr)
        assert tree is not None
        row = pa.table({c: [value if c == col else None] for c in SCHEMA.names}, schema=SCHEMA)
        kept = row.filter(expr).num_rows
        truth = possible(tree, {col: Stats.exact(value)})
        assert (True in truth) or kept == 0, expr
        if "is_in" not in str(expr) and "starts_with" not in str(expr):
            # comparisons, null tests and their and/or/not on one known value are exact
            assert (True in truth) == bool(kept), (expr, value)


def test_parse_reads_calls_fields_literals_and_options() -> None:
    tree = parse((pc.field("i") > 3) & pc.field("s").isin(["a", "b"]))
    assert isinstance(tree, Call) and tree.name == "and_kleene"
    left, right = tree.args
    assert left == Call("greater", (Field("i"), Literal(pa.scalar(3))), None)
    assert isinstance(right, Call) and right.name == "is_in" and right.options is not None
    assert right.options["value_set"].as_py() == ["a", "b"]
    assert parse(pc.field("weird: 'name'\nwith lines") == 1) == Call(
        "equal", (Field("weird: 'name'\nwith lines"), Literal(pa.scalar(1))), None
    )
    nested = parse(pc.field("a", "b") == 1)  # a nested field: not a table column
    assert nested is None


def test_unknown_calls_and_missing_stats_decide_nothing() -> None:
    tree = parse(pc.utf8_length(pc.field("s")) > 100)
    assert tree is not None and may_hold(tree, {"s": Stats("a", "b", 0, 5)})
    assert may_hold(parse(pc.field("i") == 1), {})
    assert may_hold(parse(pc.field("i") == "x"), {"i": Stats(2, 3, 0, 4)})  # incomparable
    assert not may_hold(parse(pc.field("i") == 1), {"i": Stats(2, 3, 0, 4)})
    assert not may_hold(parse(pc.field("i").is_null()), {"i": Stats(2, 3, 0, 4)})
    assert not may_hold(parse(pc.field("i") > 1), {"i": Stats(None, None, 4, 4)})  # all null
    assert not may_hold(parse(pc.starts_with(pc.field("s"), "x")), {"s": Stats("a", "b", 0, 9)})
    assert may_hold(parse(pc.starts_with(pc.field("s"), "ab")), {"s": Stats("a", "b", 0, 9)})


def test_bucket_values_pin_equality_and_in() -> None:
    cols = [("k", pa.int32()), ("t", pa.string())]
    expr = ((pc.field("k") == 1) | pc.field("k").isin([2, 3])) & (pc.field("t") == "x")
    got = bucket_values(parse(expr), cols)
    assert got is not None
    assert sorted(zip(got[0].to_pylist(), got[1].to_pylist(), strict=True)) == [
        (1, "x"),
        (2, "x"),
        (3, "x"),
    ]
    assert bucket_values(parse(pc.field("k") == 1), cols) is None  # t not pinned
    assert bucket_values(parse((pc.field("k") == 1) | (pc.field("t") == "x")), cols) is None
    assert bucket_values(parse((pc.field("k") == 1.5) & (pc.field("t") == "x")), cols) is None
    assert bucket_values(parse((pc.field("k") == 2**40) & (pc.field("t") == "x")), cols) is None
    with_null = pc.field("k").isin(pa.array([1, None])) & (pc.field("t") == "x")
    assert bucket_values(parse(with_null), cols) is None
    none = bucket_values(
        parse((pc.field("k") == pa.scalar(None, pa.int32())) & (pc.field("t") == "x")), cols
    )
    assert none is not None and len(none[0]) == 0  # == null keeps no row
