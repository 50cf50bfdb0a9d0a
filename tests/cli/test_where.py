"""``parse_where``: the ``--where`` language against a plain Python evaluation of the same
expression (SQL three-valued logic), its literal casting and its error messages."""

from __future__ import annotations

import datetime as dt
import decimal
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeops.cli.errors import CliError
from lakeops.cli.where import MAX_DEPTH, compile_where, parse_where

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("i", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("b", pa.bool_()),
        pa.field("select", pa.int32()),  # a keyword-ish name, quoted in the text
    ]
)

STRINGS = ["a", "b", "it's", 'say "hi"', "", "a,b"]
DATES = [dt.date(2024, 1, d) for d in (1, 2, 3)]

ROWS: list[dict[str, Any]] = [
    {
        "k": n,
        "i": None if n % 5 == 0 else n % 4 - 1,
        "f": None if n % 7 == 3 else (n % 6) * 0.5 - 1.0,
        "s": None if n % 6 == 1 else STRINGS[n % len(STRINGS)],
        "d": None if n % 8 == 2 else DATES[n % 3],
        "b": None if n % 9 == 4 else n % 2 == 0,
        "select": n % 3,
    }
    for n in range(40)
]
TABLE = pa.Table.from_pylist(ROWS, schema=SCHEMA)

Row = dict[str, Any]
Truth = bool | None


def kept(text: str) -> list[int]:
    """The ``k`` of the rows the compiled expression keeps."""
    return TABLE.filter(parse_where(text, SCHEMA)).column("k").to_pylist()


def model(predicate: Callable[[Row], Truth]) -> list[int]:
    """The ``k`` of the rows a plain predicate holds TRUE for."""
    return [r["k"] for r in ROWS if predicate(r) is True]


# ------------------------------------------------------------- three-valued logic, plainly
def _and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a: Truth) -> Truth:
    return None if a is None else not a


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _compare(column: str, op: str, value: Any) -> Callable[[Row], Truth]:
    def holds(row: Row) -> Truth:
        x = row[column]
        return None if x is None else _OPS[op](x, value)

    return holds


# -------------------------------------------------------------------------- unit cases
@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        ("i = 1", _compare("i", "=", 1)),
        ("i == 1", _compare("i", "=", 1)),
        ("i != 1", _compare("i", "!=", 1)),
        ("i <> 1", _compare("i", "!=", 1)),
        ("i < 1", _compare("i", "<", 1)),
        ("i <= 1", _compare("i", "<=", 1)),
        ("i > 0", _compare("i", ">", 0)),
        ("i >= -1", _compare("i", ">=", -1)),
        ("f > -0.5", _compare("f", ">", -0.5)),
        ("f <= 1", _compare("f", "<=", 1.0)),  # an integer against a DOUBLE column
        ("f < 2.5e-1", _compare("f", "<", 0.25)),
        ("s = 'it''s'", _compare("s", "=", "it's")),
        ("s = 'say \"hi\"'", _compare("s", "=", 'say "hi"')),
        ("s = ''", _compare("s", "=", "")),
        ("s = 'a,b'", _compare("s", "=", "a,b")),
        ("s > 'a'", _compare("s", ">", "a")),
        ("d = '2024-01-02'", _compare("d", "=", dt.date(2024, 1, 2))),
        ("d >= '2024-01-02'", _compare("d", ">=", dt.date(2024, 1, 2))),
        ("b = TRUE", _compare("b", "=", True)),
        ("b = false", _compare("b", "=", False)),
        ('"select" = 2', _compare("select", "=", 2)),
        ("i IS NULL", lambda r: r["i"] is None),
        ("i is not null", lambda r: r["i"] is not None),
        ("s IN ('a', 'it''s')", lambda r: None if r["s"] is None else r["s"] in ("a", "it's")),
        ("k IN (1, 2, 3)", lambda r: r["k"] in (1, 2, 3)),
        ("k NOT IN (1, 2, 3)", lambda r: r["k"] not in (1, 2, 3)),
        # SQL: a null is neither in nor not in a list
        ("i NOT IN (0, 1)", lambda r: None if r["i"] is None else r["i"] not in (0, 1)),
        ("NOT i IN (0, 1)", lambda r: None if r["i"] is None else r["i"] not in (0, 1)),
        ("NOT (i = 1)", lambda r: _not(_compare("i", "=", 1)(r))),
        (
            "i = 1 OR s IS NULL AND b = TRUE",  # AND binds tighter than OR
            lambda r: _or(
                _compare("i", "=", 1)(r),
                _and(r["s"] is None, _compare("b", "=", True)(r)),
            ),
        ),
        (
            "(i = 1 OR s IS NULL) AND b = TRUE",
            lambda r: _and(_or(_compare("i", "=", 1)(r), r["s"] is None), r["b"] is True),
        ),
        ("NOT NOT i = 0", _compare("i", "=", 0)),
    ],
)
def test_expression_keeps_what_sql_keeps(text: str, predicate: Callable[[Row], Truth]) -> None:
    expected = model(predicate)
    assert kept(text) == expected
    assert expected or "IS NULL" not in text  # the table has rows for every case above


def test_literals_take_the_column_type() -> None:
    schema = pa.schema(
        [
            ("amount", pa.decimal128(10, 2)),
            ("at", pa.timestamp("us")),
            ("utc", pa.timestamp("us", tz="UTC")),
            ("t", pa.time32("ms")),
            ("small", pa.int8()),
            ("raw", pa.binary()),
        ]
    )
    data = pa.Table.from_pylist(
        [
            {
                "amount": decimal.Decimal("1.50"),
                "at": dt.datetime(2024, 1, 1, 10, 30),
                "utc": dt.datetime(2024, 1, 1, 8, 0, tzinfo=dt.UTC),
                "t": dt.time(10, 30),
                "small": 7,
                "raw": b"xy",
            }
        ],
        schema=schema,
    )
    for text in (
        "amount = 1.5",
        "amount = '1.50'",
        "amount > 1",
        "at = '2024-01-01 10:30:00'",
        "at > '2024-01-01'",
        "utc = '2024-01-01T10:00:00+02:00'",
        "t = '10:30'",
        "small = 7.0",
        "raw = 'xy'",
    ):
        assert data.filter(parse_where(text, schema)).num_rows == 1, text
    for text in ("amount < 1.5", "at > '2024-01-01 10:30:00'", "utc > '2024-01-01T08:00:00Z'"):
        assert data.filter(parse_where(text, schema)).num_rows == 0, text


def test_columns_are_reported_in_order() -> None:
    clause = compile_where("s = 'x' AND (i > 1 OR s IS NULL) AND \"select\" = 1", SCHEMA)
    assert clause.columns == ("s", "i", "select")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", ["empty expression"]),
        ("   ", ["empty expression"]),
        ("nope = 1", ["position 1", "unknown column 'nope'", "the columns: k, i, f, s"]),
        ("ii = 1", ["did you mean 'i'?"]),
        ("i = 1 AND zz IS NULL", ["position 11", "unknown column 'zz'"]),
        ("i", ["end of the expression", "IS NULL or IS NOT NULL"]),
        ("i = ", ["expected a value", "end of the expression"]),
        ("i = NULL", ["position 5", "IS NULL or IS NOT NULL"]),
        ("i != null", ["NULL cannot follow !="]),
        ("i IN (1, NULL)", ["NULL cannot follow IN"]),
        ("s = 'abc", ["position 5", "unterminated string"]),
        ('"s = 1', ["position 1", "unterminated quoted column name"]),
        ("i = 1 && i = 2", ["position 7", "unexpected character '&'"]),
        ("i = 1 i = 2", ["position 7", "AND, OR"]),
        ("(i = 1", ["expected ')'"]),
        ("i = 1)", ["position 6", "without its '('"]),
        ("i IN 1", ["expected '('"]),
        ("i IN (1 2)", ["position 9", "expected ',' or ')'"]),
        ("i IS 1", ["expected NULL"]),
        ("i NOT 1", ["expected IN"]),
        ("AND i = 1", ["position 1", "expected a column name"]),
        ("1 = i", ["position 1", "expected a column name"]),
        ("i = 'x'", ["position 5", "'x' does not fit column 'i'", "an integer"]),
        ("i = 2.5", ["2.5 does not fit column 'i'", "truncated"]),
        ("i = 99999999999999999999", ["does not fit column 'i'", "out of range"]),
        ("s = 5", ["5 does not fit column 's'", "numeric column", "'quoted string'"]),
        ("d = '2024-02-30'", ["does not fit column 'd'", "'YYYY-MM-DD'"]),
        ("d = 20240101", ["does not fit column 'd'"]),
        ("b = 1", ["does not fit column 'b'", "TRUE or FALSE"]),
        ("i = TRUE", ["does not fit column 'i'", "BOOLEAN"]),
        ("NOT " * (MAX_DEPTH + 1) + "i = 1", ["nested too deeply"]),
    ],
)
def test_bad_expressions_say_where_and_what(text: str, says: list[str]) -> None:
    with pytest.raises(CliError) as raised:
        parse_where(text, SCHEMA)
    message = str(raised.value)
    assert message.startswith("--where: ") and "\n" not in message
    for part in says:
        assert part in message, (part, message)


def test_nested_columns_take_only_null_tests() -> None:
    schema = pa.schema([("tags", pa.list_(pa.string()))])
    data = pa.table({"tags": [["a"], None]}, schema=schema)
    assert data.filter(parse_where("tags IS NOT NULL", schema)).num_rows == 1
    with pytest.raises(CliError, match="nested column"):
        parse_where("tags = 'a'", schema)


def test_no_python_is_evaluated() -> None:
    for text in ("__import__('os').system('true')", "i = 1; import os", "i = 1 or exit()"):
        with pytest.raises(CliError):
            parse_where(text, SCHEMA)


# ---------------------------------------------------------------- property: random trees
@dataclass(frozen=True)
class Expr:
    """A random expression: its text and its plain three-valued evaluation."""

    text: str
    holds: Callable[[Row], Truth]


def _literal_text(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'"
    return repr(value)


_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "k": st.integers(-1, 41),
    "i": st.integers(-2, 3),
    "f": st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.5, 3]),
    "s": st.sampled_from([*STRINGS, "zz", "A"]),
    "d": st.sampled_from([dt.date(2023, 12, 31), *DATES]),
    "b": st.booleans(),
    "select": st.integers(0, 3),
}


def _name(column: str) -> str:
    return f'"{column}"' if column == "select" else column


@st.composite
def comparisons(draw: st.DrawFn) -> Expr:
    column = draw(st.sampled_from(sorted(_VALUES)))
    op = draw(st.sampled_from(sorted(_OPS)))
    value = draw(_VALUES[column])
    compared = float(value) if column == "f" else value
    return Expr(f"{_name(column)} {op} {_literal_text(value)}", _compare(column, op, compared))


@st.composite
def memberships(draw: st.DrawFn) -> Expr:
    column = draw(st.sampled_from(sorted(_VALUES)))
    values = draw(st.lists(_VALUES[column], min_size=1, max_size=4))
    negated = draw(st.booleans())
    listed = ", ".join(_literal_text(v) for v in values)
    text = f"{_name(column)} {'NOT IN' if negated else 'IN'} ({listed})"

    def holds(row: Row) -> Truth:
        x = row[column]
        if x is None:
            return None
        return (x in values) != negated

    return Expr(text, holds)


@st.composite
def null_tests(draw: st.DrawFn) -> Expr:
    column = draw(st.sampled_from(sorted(_VALUES)))
    negated = draw(st.booleans())
    text = f"{_name(column)} IS {'NOT ' if negated else ''}NULL"
    return Expr(text, lambda row: (row[column] is None) != negated)


def _combine(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    def both(op: str, a: Expr, b: Expr) -> Expr:
        join = _and if op.upper() == "AND" else _or
        return Expr(f"({a.text}) {op} ({b.text})", lambda r: join(a.holds(r), b.holds(r)))

    negations = children.map(lambda e: Expr(f"NOT ({e.text})", lambda r: _not(e.holds(r))))
    pairs = st.builds(both, st.sampled_from(["AND", "OR", "and", "Or"]), children, children)
    return negations | pairs


EXPRESSIONS = st.recursive(comparisons() | memberships() | null_tests(), _combine, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(EXPRESSIONS)
def test_random_expressions_match_plain_evaluation(expr: Expr) -> None:
    assert kept(expr.text) == model(expr.holds), expr.text


LEAVES = comparisons() | memberships() | null_tests()


@settings(max_examples=150, deadline=None)
@given(LEAVES, LEAVES, LEAVES)
def test_precedence_without_parentheses(a: Expr, b: Expr, c: Expr) -> None:
    """``a OR b AND NOT c`` is ``a OR (b AND (NOT c))``: NOT binds tighter than AND, AND
    tighter than OR."""
    text = f"{a.text} OR {b.text} AND NOT {c.text}"
    expected = model(lambda r: _or(a.holds(r), _and(b.holds(r), _not(c.holds(r)))))
    assert kept(text) == expected, text
