"""``--where``: a small, safe filter language for the command line, compiled to a
``pyarrow.compute.Expression`` (nothing is evaluated as Python).

Grammar (keywords are case-insensitive)::

    expression := disjunct (OR disjunct)*
    disjunct   := negation (AND negation)*
    negation   := NOT negation | '(' expression ')' | predicate
    predicate  := column ( op value
                         | [NOT] IN '(' value (',' value)* ')'
                         | IS [NOT] NULL )
    op         := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
    value      := integer | float | 'string' | TRUE | FALSE

* A column is a name (``[A-Za-z_][A-Za-z0-9_$]*``) or a double-quoted name (``"order id"``,
  ``""`` for a ``"`` inside, needed for names that are keywords); it must be a column of the
  table's Arrow schema, and is always on the left of its comparison.
* Strings are single-quoted, ``''`` for a quote inside (``'it''s'``). A number is an integer
  or a float (``-3``, ``2.5``, ``1e6``).
* Every value is cast to its column's type first, so the filter compares like with like (and
  can prune partitions, buckets and files): numbers against numeric columns (a DECIMAL from
  the literal's exact digits; an integer column refuses ``2.5`` and values out of its range),
  ``TRUE`` / ``FALSE`` against boolean columns, and a quoted string against any column whose
  type it parses as: the text itself for STRING, an ISO date / time / timestamp for DATE,
  TIME, TIMESTAMP (``'2024-01-01'``, ``'2024-01-01 10:30:00'``; a TIMESTAMP WITH LOCAL TIME
  ZONE needs an offset: ``'2024-01-01T10:30:00+00:00'``), ``'1.50'`` for DECIMAL, and so on.
* ``NULL`` appears only in ``IS NULL`` / ``IS NOT NULL``: ``col = NULL`` is refused.

Semantics are SQL's three-valued logic: a comparison with a null value is unknown (null), so
is ``col IN (…)`` for a null ``col``; ``NOT`` of unknown is unknown, ``AND`` / ``OR`` are
Kleene's; a row is kept only when the whole expression is TRUE (``NOT (x = 1)`` and
``x NOT IN (1, 2)`` keep no row where ``x`` is null). Floats compare as IEEE doubles (NaN
compares false). Precedence: ``NOT`` binds tighter than ``AND``, ``AND`` than ``OR``.

A malformed expression, an unknown column or a value that does not fit its column is a
:class:`~lakeops.cli.errors.CliError` naming the 1-based character position and what is
allowed there.
"""

from __future__ import annotations

import datetime as dt
import decimal
import difflib
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.cli.errors import CliError

__all__ = ["WhereClause", "compile_where", "parse_where"]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<number>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*")
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<punct>[(),])
    """,
    re.VERBOSE,
)

_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE"})

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

#: how deeply NOT and parentheses may nest
MAX_DEPTH = 100

_VALUES = "a number, a 'quoted string', TRUE or FALSE"
_AFTER_COLUMN = "=, !=, <, <=, >, >=, IN (…), NOT IN (…), IS NULL or IS NOT NULL"
_PRIMARY = "a column name, NOT or '('"
_CONNECT = "conditions are joined by AND and OR"

_NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))


@dataclass(frozen=True)
class _Token:
    """One lexical unit: ``kind`` is ``number``, ``string``, ``bool``, ``column`` (a name or
    a quoted name), ``keyword`` (upper-cased in ``value``), ``op``, ``punct`` or ``end``;
    ``text`` is the source text and ``pos`` its 0-based offset."""

    kind: str
    text: str
    value: Any
    pos: int


@dataclass(frozen=True)
class WhereClause:
    """A compiled ``--where``: the ``expression`` and the ``columns`` it reads, in the order
    the text first names them."""

    expression: pc.Expression
    columns: tuple[str, ...]


def parse_where(text: str, schema: pa.Schema) -> pc.Expression:
    """``text`` (see the module docstring) as a boolean ``pyarrow.compute.Expression`` over
    the columns of ``schema``; raises :class:`~lakeops.cli.errors.CliError` naming the
    position and what is allowed when the text is malformed, names an unknown column or has a
    value that does not fit its column."""
    return compile_where(text, schema).expression


def compile_where(text: str, schema: pa.Schema) -> WhereClause:
    """As :func:`parse_where`, with the columns the expression reads."""
    parser = _Parser(text, schema)
    expression = parser.parse()
    return WhereClause(expression, tuple(parser.columns))


def _number(text: str) -> int | float:
    """A number token's value: an ``int`` unless it has a point or an exponent."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return float(text)


def _word(text: str, pos: int) -> _Token:
    upper = text.upper()
    if upper in ("TRUE", "FALSE"):
        return _Token("bool", text, upper == "TRUE", pos)
    if upper in _KEYWORDS:
        return _Token("keyword", text, upper, pos)
    return _Token("column", text, text, pos)


def _tokenize(text: str) -> list[_Token]:
    """The tokens of ``text``, ended by an ``end`` token; an unexpected character or an
    unterminated quote is a :class:`CliError`."""
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            char = text[pos]
            if char in "'\"":
                what = "string" if char == "'" else "quoted column name"
                _fail(text, pos, f"unterminated {what}", f"close it with {char}")
            _fail(text, pos, f"unexpected character {char!r}", f"expected {_PRIMARY}")
        kind, raw = match.lastgroup or "", match.group()
        if kind == "number":
            tokens.append(_Token("number", raw, _number(raw), pos))
        elif kind == "string":
            tokens.append(_Token("string", raw, raw[1:-1].replace("''", "'"), pos))
        elif kind == "quoted":
            tokens.append(_Token("column", raw, raw[1:-1].replace('""', '"'), pos))
        elif kind == "word":
            tokens.append(_word(raw, pos))
        elif kind != "space":
            tokens.append(_Token(kind, raw, raw, pos))
        pos = match.end()
    tokens.append(_Token("end", "", None, len(text)))
    return tokens


def _fail(text: str, pos: int, problem: str, allowed: str) -> NoReturn:
    """Raise the :class:`CliError` for ``problem`` at offset ``pos`` of ``text``."""
    if pos >= len(text):
        where = "at the end of the expression"
    else:
        snippet = text[pos : pos + 20] + ("…" if len(text) > pos + 20 else "")
        where = f"at position {pos + 1} ({snippet!r})"
    raise CliError(f"--where: {where}: {problem}; {allowed}")


def _describe(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the expression"
    return f"{token.text!r}"


class _Parser:
    """Recursive descent over the tokens of one ``--where`` text."""

    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.tokens = _tokenize(text)
        self.at = 0
        self.depth = 0
        self.columns: list[str] = []

    # ------------------------------------------------------------------ tokens
    @property
    def token(self) -> _Token:
        return self.tokens[self.at]

    def _advance(self) -> _Token:
        token = self.tokens[self.at]
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def _keyword(self, *words: str) -> bool:
        """Consume the current token if it is one of the keywords ``words``."""
        if self.token.kind == "keyword" and self.token.value in words:
            self._advance()
            return True
        return False

    def _punct(self, char: str) -> bool:
        """Consume the current token if it is the punctuation ``char``."""
        if self.token.kind == "punct" and self.token.value == char:
            self._advance()
            return True
        return False

    def _expect(self, ok: bool, problem: str, allowed: str) -> None:
        if not ok:
            _fail(self.text, self.token.pos, problem, allowed)

    # ----------------------------------------------------------------- grammar
    def parse(self) -> pc.Expression:
        if self.token.kind == "end":
            _fail(self.text, 0, "empty expression", f"expected {_PRIMARY}")
        expression = self._or()
        if self.token.kind != "end":
            closing = self.token.kind == "punct" and self.token.value == ")"
            found = "a ')' without its '('" if closing else _describe(self.token)
            ends = "AND, OR or the end of the expression"
            _fail(self.text, self.token.pos, f"expected {ends} but found {found}", _CONNECT)
        return expression

    def _or(self) -> pc.Expression:
        expression = self._and()
        while self._keyword("OR"):
            expression = expression | self._and()
        return expression

    def _and(self) -> pc.Expression:
        expression = self._not()
        while self._keyword("AND"):
            expression = expression & self._not()
        return expression

    def _not(self) -> pc.Expression:
        start = self.token
        if self.depth >= MAX_DEPTH:
            _fail(
                self.text,
                start.pos,
                "nested too deeply",
                f"at most {MAX_DEPTH} levels of NOT and '('",
            )
        self.depth += 1
        try:
            if self._keyword("NOT"):
                return ~self._not()
            if self._punct("("):
                expression = self._or()
                found = _describe(self.token)
                self._expect(self._punct(")"), f"expected ')' but found {found}", "close the '('")
                return expression
            if start.kind == "column":
                return self._predicate(self._advance())
            problem = f"expected {_PRIMARY} but found {_describe(start)}"
            _fail(self.text, start.pos, problem, "a condition starts with a column name")
        finally:
            self.depth -= 1

    def _predicate(self, column: _Token) -> pc.Expression:
        field = self._field(column)
        name = field.name
        ref = pc.field(name)
        token = self.token
        if token.kind == "op":
            self._advance()
            value = self._value(field, token.text)
            return _COMPARISONS[token.text](ref, pc.scalar(value))
        if self._keyword("IS"):
            negated = self._keyword("NOT")
            found = _describe(self.token)
            self._expect(self._keyword("NULL"), f"expected NULL but found {found}", "IS [NOT] NULL")
            return ref.is_valid() if negated else ref.is_null()
        if self._keyword("NOT"):
            found = _describe(self.token)
            self._expect(self._keyword("IN"), f"expected IN but found {found}", "NOT IN (…)")
            return ~self._in_list(field)
        if self._keyword("IN"):
            return self._in_list(field)
        _fail(
            self.text,
            token.pos,
            f"expected an operator after column {name!r} but found {_describe(token)}",
            f"a column is followed by {_AFTER_COLUMN}",
        )

    def _field(self, token: _Token) -> pa.Field:
        name = str(token.value)
        index = self.schema.get_field_index(name)
        if index < 0:
            close = difflib.get_close_matches(name, self.schema.names, n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
            _fail(
                self.text,
                token.pos,
                f"unknown column {name!r}",
                f"{hint}the columns: {', '.join(self.schema.names)}",
            )
        if name not in self.columns:
            self.columns.append(name)
        return self.schema.field(index)

    def _in_list(self, field: pa.Field) -> pc.Expression:
        found = _describe(self.token)
        self._expect(self._punct("("), f"expected '(' but found {found}", "IN (value, …)")
        values = [self._value(field, "IN")]
        while self._punct(","):
            values.append(self._value(field, "IN"))
        found = _describe(self.token)
        self._expect(self._punct(")"), f"expected ',' or ')' but found {found}", "IN (value, …)")
        ref = pc.field(field.name)
        found_in = ref.isin(pa.array([v.as_py() for v in values], type=field.type))
        if not field.nullable:
            return found_in
        # is_in is false, not null, for a null value: make it unknown, as SQL has it
        return found_in | (ref.is_null() & _NULL_BOOL)

    def _value(self, field: pa.Field, after: str) -> pa.Scalar:
        token = self._advance()
        if token.kind == "keyword" and token.value == "NULL":
            _fail(
                self.text,
                token.pos,
                f"NULL cannot follow {after}",
                "test for nulls with IS NULL or IS NOT NULL",
            )
        if token.kind not in ("number", "string", "bool"):
            found = _describe(token)
            _fail(
                self.text, token.pos, f"expected a value but found {found}", f"a value is {_VALUES}"
            )
        try:
            return _literal(token, field.type)
        except _Mismatch as exc:
            problem = f"{token.text} does not fit column {field.name!r} ({field.type}): {exc}"
            _fail(self.text, token.pos, problem, f"it takes {_takes(field.type)}")


class _Mismatch(Exception):
    """A literal that does not fit its column; the message says why."""


def _takes(to: pa.DataType) -> str:
    """The literals a column of type ``to`` takes, for error messages."""
    if pa.types.is_boolean(to):
        return "TRUE or FALSE"
    if pa.types.is_integer(to):
        return "an integer in its range"
    if pa.types.is_floating(to):
        return "a number"
    if pa.types.is_decimal(to):
        return f"a number with at most {to.scale} decimal(s) and {to.precision} digits"
    if pa.types.is_string(to) or pa.types.is_large_string(to) or pa.types.is_binary(to):
        return "a 'quoted string'"
    if pa.types.is_date(to):
        return "a date as 'YYYY-MM-DD'"
    if pa.types.is_timestamp(to) and to.tz is not None:
        return "a timestamp with an offset, as '2024-01-01T10:30:00+00:00'"
    if pa.types.is_timestamp(to):
        return "a timestamp as 'YYYY-MM-DD HH:MM:SS[.ffffff]'"
    if pa.types.is_time(to):
        return "a time as 'HH:MM:SS[.ffffff]'"
    if pa.types.is_nested(to):
        return "no value: only IS NULL and IS NOT NULL apply to a nested column"
    return "a 'quoted string' of its type"


def _literal(token: _Token, to: pa.DataType) -> pa.Scalar:
    """The literal ``token`` as a scalar of type ``to`` (see the module docstring)."""
    if pa.types.is_nested(to):
        raise _Mismatch("a nested column cannot be compared")
    if token.kind == "bool":
        if not pa.types.is_boolean(to):
            raise _Mismatch("a boolean compares only with a BOOLEAN column")
        return pa.scalar(token.value, pa.bool_())
    if token.kind == "number":
        return _number_literal(token, to)
    return _text_literal(str(token.value), to)


def _number_literal(token: _Token, to: pa.DataType) -> pa.Scalar:
    if pa.types.is_decimal(to):
        source = pa.scalar(decimal.Decimal(token.text))
    elif pa.types.is_floating(to):
        source = pa.scalar(float(token.value))
    elif pa.types.is_integer(to):
        try:
            source = pa.scalar(token.value)
        except (OverflowError, pa.ArrowException) as exc:
            raise _Mismatch("out of range") from exc
    else:
        raise _Mismatch("a number compares only with a numeric column")
    return _cast(source, to)


def _text_literal(text: str, to: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(to) or pa.types.is_large_string(to):
        return pa.scalar(text, to)
    if pa.types.is_time(to):
        try:
            return pa.scalar(dt.time.fromisoformat(text), to)
        except (ValueError, pa.ArrowException) as exc:
            raise _Mismatch("not a time") from exc
    return _cast(pa.scalar(text), to)


def _cast(source: pa.Scalar, to: pa.DataType) -> pa.Scalar:
    """``source`` cast to ``to`` without loss (out of range, truncation, unparsable text)."""
    try:
        return source.cast(to, safe=True)
    except (OverflowError, ValueError, TypeError, pa.ArrowException) as exc:
        first = str(exc).strip().split(". ")[0].strip()  # Arrow's advice that follows is not ours
        raise _Mismatch(first or type(exc).__name__) from exc
