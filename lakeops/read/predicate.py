"""Row filters, and what they let a scan skip.

A filter is a ``pyarrow.compute.Expression`` (``pc.field("id") > 100``), or what
``pyarrow.parquet`` accepts as ``filters``: a list of ``(column, op, value)`` tuples (all must
hold), or a list of such lists (any may hold). Operators: ``=``/``==``, ``!=``, ``<``, ``<=``,
``>``, ``>=``, ``in``, ``not in``. Examples::

    table.read(filter=[("dt", "=", "2024-01-01"), ("id", ">=", 100)])
    table.read(filter=(pc.field("dt") == "2024-01-01") & pc.field("name").is_null())

Both forms become one :class:`RowFilter` (the tuples through ``pq.filters_to_expression``).

The exact filter always runs on merged rows. Before that, the scan uses it to skip whole
partitions (conditions on partition columns) and whole files (conditions on primary-key columns
against the file's key statistics) — both safe, because every record of a matching key lives in
a partition and file whose values or key ranges match too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.errors import ConfigurationError
from lakeops.read.expression import Node, Stats, may_hold, parse, referenced

__all__ = ["Filter", "RowFilter", "may_match", "normalize", "row_filter", "to_expression"]

Condition = tuple[str, str, Any]
Filter: TypeAlias = Sequence[Condition] | Sequence[Sequence[Condition]] | pc.Expression


@dataclass(frozen=True)
class RowFilter:
    """A checked filter: ``expression`` is applied exactly to merged rows; ``tree`` (None when
    the expression could not be read back) decides what the scan skips."""

    expression: pc.Expression
    tree: Node | None
    #: the columns the exact filter reads
    columns: tuple[str, ...]

    def may_hold(self, stats: Mapping[str, Stats]) -> bool:
        """False only when no row within ``stats`` ({column: Stats}) can be kept."""
        return may_hold(self.tree, stats)


def row_filter(filter: Filter | None, schema: pa.Schema) -> RowFilter | None:
    """Check a filter of either form against the table's Arrow ``schema`` (None: no filter).

    An expression must be boolean and name only the table's columns; the tuples are checked
    as :func:`normalize` checks them. A ConfigurationError names what is wrong."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        expression = filter
    else:
        dnf = normalize(filter, schema.names)
        if dnf is None:
            return None
        expression = to_expression(dnf)
    try:
        probe = _null_row(schema).filter(expression)
    except (pa.ArrowException, TypeError) as exc:
        raise ConfigurationError(
            f"filter {expression} cannot be applied to the table's columns ({schema.names}): {exc}"
        ) from exc
    del probe
    tree = parse(expression)
    names = set(schema.names)
    if tree is None or not referenced(tree) <= names:
        return RowFilter(expression, None, tuple(schema.names))
    used = referenced(tree)
    return RowFilter(expression, tree, tuple(n for n in schema.names if n in used))


def _null_row(schema: pa.Schema) -> pa.Table:
    """One row of ``schema``, every column null: what a filter is checked on before anything is
    read. Some of Arrow's kernels check their inputs only when given rows (a timestamp with a
    time zone compared with one without passes on an empty table, then fails on the first
    file's rows); a null row raises no error of its values."""
    return pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema)


_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}


def normalize(filter: Filter | None, columns: Sequence[str]) -> list[list[Condition]] | None:
    """Check a filter and return it as a list of conjunctions (None for no filter)."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        raise ConfigurationError(
            "normalize takes the (column, op, value) form; give expressions to row_filter"
        )
    items = list(filter)
    if not items:
        return None
    groups = [list(g) for g in items] if isinstance(items[0], list) else [items]
    out: list[list[Condition]] = []
    for group in groups:
        conj: list[Condition] = []
        for cond in group:
            if not (isinstance(cond, tuple) and len(cond) == 3):
                raise ConfigurationError(
                    f"filter condition {cond!r} must be a (column, op, value) tuple"
                )
            col, op, value = cond
            op = op.lower()
            if op not in _OPS:
                raise ConfigurationError(
                    f"filter operator {op!r} in {cond!r} is not one of {sorted(_OPS)}"
                )
            if col not in columns:
                raise ConfigurationError(
                    f"filter column {col!r} is not in the table (columns: {list(columns)})"
                )
            if op in ("in", "not in"):
                value = list(value)
            conj.append((col, op, value))
        out.append(conj)
    return out


def to_expression(dnf: list[list[Condition]]) -> pc.Expression:
    """The exact row filter as a pyarrow compute expression."""
    return pq.filters_to_expression(
        [[(c, "=" if o == "==" else o, v) for c, o, v in g] for g in dnf]
    )


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _range_may_hold(op: str, value: Any, lo: Any, hi: Any) -> bool:
    """Could some x with lo <= x <= hi satisfy ``x op value``? (A NaN bound — key statistics
    hold floats in Java's total order, NaN the greatest — decides nothing.)"""
    if _is_nan(lo) or _is_nan(hi):
        return True
    try:
        if op in ("=", "=="):
            return bool(lo <= value <= hi)
        if op == "!=":
            return not (lo == hi == value)
        if op == "<":
            return bool(lo < value)
        if op == "<=":
            return bool(lo <= value)
        if op == ">":
            return bool(hi > value)
        if op == ">=":
            return bool(hi >= value)
        if op == "in":
            return any(lo <= v <= hi for v in value if v is not None)
        return True  # "not in": cannot exclude a range cheaply
    except TypeError:
        return True  # incomparable literal: let the exact filter decide


def may_match(dnf: list[list[Condition]] | None, ranges: Mapping[str, tuple[Any, Any]]) -> bool:
    """False only if no row whose columns lie in ``ranges`` ({col: (min, max)}) can match.

    Conditions on columns without a range are assumed to hold.
    """
    if dnf is None:
        return True
    for conj in dnf:
        if all(
            c not in ranges or ranges[c][0] is None or _range_may_hold(o, v, *ranges[c])
            for c, o, v in conj
        ):
            return True
    return False
