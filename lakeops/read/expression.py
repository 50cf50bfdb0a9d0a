"""What a ``pyarrow.compute.Expression`` filter lets a scan skip.

A filter is applied exactly, by pyarrow, to merged rows; this module only decides what cannot
hold a kept row. The expression is read back into a small tree (:func:`parse`) from the form
pyarrow itself pickles it in (an Arrow IPC file whose schema metadata lists the calls, field
references and literal indices in order); an expression this module cannot read prunes nothing.

:func:`possible` evaluates the tree in three-valued (Kleene) logic over column *statistics*
(:class:`Stats`: min, max, null count, rows) and returns every truth value a row within them
could give. A part of a scan is skipped only when ``True`` is not among them — exactly the rows
``table.filter(expr)`` drops (it keeps True, drops False and null). Understood calls: ``and``,
``or``, ``invert`` (Kleene and plain), the six comparisons of a column with a literal,
``is_null`` / ``is_valid``, ``is_in`` and ``starts_with``; every other call may be anything.
Statistics decide only when the literal's Python type matches the column values' (numbers
with numbers, strings with strings, dates with dates …); floats never claim a comparison false
for every row (NaN compares false), so only "no row can be true" prunes a float column.

:func:`bucket_values` extracts, per column, the finite set of values an expression pins a
column to (``==`` and ``is_in`` under ``and`` / ``or``), which a fixed-bucket table turns into
the only buckets that can hold a kept row.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Call",
    "Field",
    "Literal",
    "Node",
    "Stats",
    "bucket_values",
    "may_hold",
    "parse",
    "possible",
    "referenced",
]


@dataclass(frozen=True)
class Field:
    """A reference to a top-level column."""

    name: str


@dataclass(frozen=True)
class Literal:
    """A constant."""

    value: pa.Scalar


@dataclass(frozen=True)
class Call:
    """A function call; ``options`` are its FunctionOptions' fields (None: no options)."""

    name: str
    args: tuple[Node, ...]
    options: Mapping[str, Any] | None = None


Node = Field | Literal | Call


@dataclass(frozen=True)
class Stats:
    """What is known of one column over a set of rows: ``lo``/``hi`` bound its non-null values
    (None: unknown), ``nulls`` counts its nulls and ``rows`` the rows (None: unknown)."""

    lo: Any = None
    hi: Any = None
    nulls: int | None = None
    rows: int | None = None

    @classmethod
    def exact(cls, value: Any) -> Stats:
        """One row holding ``value`` (a partition value)."""
        return cls(value, value, 1 if value is None else 0, 1)


Truth = bool | None
ALL: frozenset[Truth] = frozenset({True, False, None})

# ----------------------------------------------------------------------------- parsing


def _u16(b: bytes, o: int) -> int:
    return int.from_bytes(b[o : o + 2], "little")


def _u32(b: bytes, o: int) -> int:
    return int.from_bytes(b[o : o + 4], "little")


def _field_pos(b: bytes, table: int, index: int) -> int | None:
    """Position of field ``index`` of the flatbuffer table at ``table`` (None: absent)."""
    vtable = table - int.from_bytes(b[table : table + 4], "little", signed=True)
    slot = 4 + 2 * index
    if slot >= _u16(b, vtable):
        return None
    offset = _u16(b, vtable + slot)
    return table + offset if offset else None


def _deref(b: bytes, pos: int) -> int:
    return pos + _u32(b, pos)


def _string(b: bytes, table: int, index: int) -> str:
    pos = _field_pos(b, table, index)
    if pos is None:
        return ""
    start = _deref(b, pos)
    return b[start + 4 : start + 4 + _u32(b, start)].decode("utf-8")


def _metadata_pairs(b: bytes) -> list[tuple[str, str]]:
    """The schema's custom metadata of an Arrow IPC file, in order, duplicates kept (pyarrow's
    ``Schema.metadata`` is a dict and drops them)."""
    if b[:6] != b"ARROW1":
        raise ValueError("not an Arrow IPC file")
    start = 8
    if _u32(b, start) == 0xFFFFFFFF:
        start += 4
    start += 4  # the message length
    message = _deref(b, start)
    header_type = _field_pos(b, message, 1)
    header = _field_pos(b, message, 2)
    if header_type is None or b[header_type] != 1 or header is None:  # 1: Schema
        raise ValueError("the first message is not a schema")
    schema = _deref(b, header)
    meta = _field_pos(b, schema, 2)
    if meta is None:
        return []
    vector = _deref(b, meta)
    pairs = []
    for i in range(_u32(b, vector)):
        kv = _deref(b, vector + 4 + 4 * i)
        pairs.append((_string(b, kv, 0), _string(b, kv, 1)))
    return pairs


def parse(expr: pc.Expression) -> Node | None:
    """The tree of ``expr``, or None where its serialized form is not one this reads."""
    try:
        buffer = expr.__reduce__()[1][0]
        data = buffer.to_pybytes()
        literals = pa.ipc.open_file(buffer).read_all()
        pairs = _metadata_pairs(data)
        node, end = _node(pairs, 0, literals)
    except (ValueError, IndexError, KeyError, TypeError, pa.ArrowException):
        return None
    return node if end == len(pairs) else None


def _node(pairs: list[tuple[str, str]], at: int, literals: pa.Table) -> tuple[Node, int]:
    kind, value = pairs[at]
    if kind == "literal":
        return Literal(literals.column(int(value))[0]), at + 1
    if kind == "field_ref":
        if not value or value.startswith(".") or value.startswith("["):
            raise ValueError(f"nested field reference {value!r}")
        return Field(value), at + 1
    if kind != "call":
        raise ValueError(f"unexpected {kind!r}")
    args: list[Node] = []
    options: dict[str, Any] | None = None
    at += 1
    while True:
        k, v = pairs[at]
        if k == "end":
            if v != value:
                raise ValueError(f"call {value!r} ends as {v!r}")
            return Call(value, tuple(args), options), at + 1
        if k == "options":
            scalar = literals.column(int(v))[0]
            options = {name: scalar[name] for name in scalar.type.names if name != "_type_name"}
            at += 1
            continue
        arg, at = _node(pairs, at, literals)
        args.append(arg)


def referenced(node: Node) -> set[str]:
    """The columns ``node`` reads."""
    if isinstance(node, Field):
        return {node.name}
    if isinstance(node, Literal):
        return set()
    return set().union(*(referenced(a) for a in node.args)) if node.args else set()


# -------------------------------------------------------------------------- evaluation


def _kind(value: Any) -> str | None:
    """The comparison family of a Python value (None: not compared here)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, decimal.Decimal):
        return "decimal"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, dt.datetime):
        return "datetime-tz" if value.tzinfo is not None else "datetime"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, dt.time):
        return "time"
    return None


#: integers compare exactly with floats (as Arrow compares them, in doubles) up to 2**53
_EXACT_INT = 2**53


def _comparable(a: Any, b: Any) -> bool:
    """Do Python and Arrow agree on comparing ``a`` and ``b``? Same families only, plus ints
    with floats (within 2**53) and ints with decimals; never NaN."""
    ka, kb = _kind(a), _kind(b)
    if ka is None or kb is None or _is_nan(a) or _is_nan(b):
        return False
    if ka == kb:
        return True
    pair = {ka, kb}
    if pair == {"int", "float"}:
        return all(abs(x) <= _EXACT_INT for x in (a, b) if isinstance(x, int))
    return pair == {"int", "decimal"}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _is_float(value: Any) -> bool:
    return isinstance(value, float)


def _not(t: Truth) -> Truth:
    return None if t is None else not t


def _and(a: Truth, b: Truth, kleene: bool) -> Truth:
    if kleene:
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    return None if a is None or b is None else a and b


def _or(a: Truth, b: Truth, kleene: bool) -> Truth:
    if kleene:
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    return None if a is None or b is None else a or b


_SWAP = {
    "equal": "equal",
    "not_equal": "not_equal",
    "less": "greater",
    "less_equal": "greater_equal",
    "greater": "less",
    "greater_equal": "less_equal",
}


def _compare(op: str, x: Any, v: Any) -> bool:
    if op == "equal":
        return bool(x == v)
    if op == "not_equal":
        return bool(x != v)
    if op == "less":
        return bool(x < v)
    if op == "less_equal":
        return bool(x <= v)
    if op == "greater":
        return bool(x > v)
    return bool(x >= v)


def _null_part(s: Stats) -> tuple[bool, bool]:
    """(may a row be null, may a row be non-null)."""
    may_null = s.nulls is None or s.nulls > 0
    may_value = s.nulls is None or s.rows is None or s.nulls < s.rows
    return may_null, may_value


def _value_outcomes(s: Stats, true_if: Any, exact_value: Any) -> set[Truth]:
    """Outcomes for the non-null rows: ``true_if(lo, hi)`` says whether some value in the range
    may give True; ``exact_value(v)`` the outcome when every value is ``v`` (None: unknown)."""
    lo, hi = s.lo, s.hi
    if lo is None or hi is None:
        return {True, False}
    if lo == hi and not _is_float(lo):
        outcome = exact_value(lo)
        if outcome is not None:
            return {outcome}
    out: set[Truth] = {False}  # conservative: some row may be false
    if true_if(lo, hi):
        out.add(True)
    return out


def _comparison(op: str, s: Stats, value: Any) -> frozenset[Truth]:
    may_null, may_value = _null_part(s)
    out: set[Truth] = {None} if may_null else set()
    if not may_value:
        return frozenset(out)
    if value is None:  # a null literal: every comparison is null
        return frozenset({None})
    lo, hi = s.lo, s.hi
    if lo is None or hi is None or not _comparable(lo, value) or not _comparable(hi, value):
        return ALL
    if op == "not_equal" and (_is_float(lo) or _is_float(hi) or _is_float(value)):
        return ALL  # NaN != anything is true: never pruned on floats
    try:

        def true_if(a: Any, b: Any) -> bool:
            if op == "equal":
                return bool(a <= value <= b)
            if op == "not_equal":
                return not (a == b == value)
            if op in ("less", "less_equal"):
                return _compare(op, a, value)
            return _compare(op, b, value)

        out |= _value_outcomes(s, true_if, lambda x: _compare(op, x, value))
    except TypeError:
        return ALL
    return frozenset(out)


def _is_in(s: Stats, options: Mapping[str, Any]) -> frozenset[Truth]:
    values_scalar = options.get("value_set")
    behaviour = options.get("null_matching_behavior")
    if values_scalar is None:
        return ALL
    may_null, may_value = _null_part(s)
    out: set[Truth] = set(ALL) if may_null else set()  # null rows: any behaviour, any outcome
    if not may_value:
        return frozenset(out)
    lo, hi = s.lo, s.hi
    if lo is None or hi is None:
        return ALL
    hit = _any_in_range(values_scalar, lo, hi)
    if hit is None:
        return ALL
    out |= {False, None}  # conservative for the rows outside the set
    if hit:
        out.add(True)
    if (
        lo == hi
        and not _is_float(lo)
        and behaviour is not None
        and behaviour.as_py() in (0, 1)  # MATCH, SKIP: a non-null value is in or not
        and not may_null
    ):
        return frozenset({hit})  # every row holds lo: it is in the set or not
    return frozenset(out)


def _any_in_range(values_scalar: Any, lo: Any, hi: Any) -> bool | None:
    """Whether a non-null value of an ``isin`` value set lies in ``[lo, hi]`` (None: cannot
    tell exactly). Integer and string sets are compared whole-array (a key set of thousands
    of values is tested against every file); others value by value."""
    array = getattr(values_scalar, "values", None)
    if isinstance(array, pa.Array) and _kind(lo) == _kind(hi):
        present = array.drop_null()
        kind = _kind(lo)
        if pa.types.is_integer(present.type) and kind == "int":
            ints = present.to_numpy()
            try:
                return bool(np.any((ints >= lo) & (ints <= hi)))
            except OverflowError:  # a bound beyond int64: Python below
                pass
        elif pa.types.is_string(present.type) and kind == "str":
            # UTF-8 bytes order as code points do, so Arrow agrees with Python's str order
            inside = pc.and_(pc.greater_equal(present, lo), pc.less_equal(present, hi))
            return bool(pc.any(inside).as_py())
    values = values_scalar.as_py()
    if not isinstance(values, list):
        return None
    listed = [v for v in values if v is not None]
    if not all(_comparable(lo, v) and _comparable(hi, v) for v in listed):
        return None
    try:
        return any(lo <= v <= hi for v in listed)
    except TypeError:
        return None


def _starts_with(s: Stats, options: Mapping[str, Any]) -> frozenset[Truth]:
    pattern = options.get("pattern")
    ignore_case = options.get("ignore_case")
    if pattern is None or ignore_case is None or ignore_case.as_py():
        return ALL
    prefix = pattern.as_py()
    may_null, may_value = _null_part(s)
    out: set[Truth] = {None} if may_null else set()
    if not may_value:
        return frozenset(out)
    lo, hi = s.lo, s.hi
    if not (isinstance(prefix, str) and isinstance(lo, str) and isinstance(hi, str)):
        return ALL

    def true_if(a: str, b: str) -> bool:
        # the strings with the prefix are one contiguous block starting at the prefix
        return b >= prefix and (a <= prefix or a.startswith(prefix))

    out |= _value_outcomes(s, true_if, lambda x: x.startswith(prefix))
    return frozenset(out)


def _null_test(s: Stats, options: Mapping[str, Any] | None, want_null: bool) -> frozenset[Truth]:
    nan_is_null = options is not None and bool(options.get("nan_is_null", pa.scalar(False)).as_py())
    if nan_is_null:
        return frozenset({True, False})
    may_null, may_value = _null_part(s)
    out: set[Truth] = set()
    if may_null:
        out.add(want_null)
    if may_value:
        out.add(not want_null)
    return frozenset(out)


def possible(node: Node, stats: Mapping[str, Stats]) -> frozenset[Truth]:
    """Every value ``node`` may take on a row whose columns lie within ``stats`` (a column
    without stats may be anything)."""
    if isinstance(node, Literal):
        value = node.value.as_py()
        return frozenset({value}) if value is None or isinstance(value, bool) else ALL
    if isinstance(node, Field):
        return ALL
    name, args = node.name, node.args
    if name in ("and_kleene", "and", "or_kleene", "or") and len(args) == 2:
        left, right = possible(args[0], stats), possible(args[1], stats)
        kleene = name.endswith("kleene")
        combine = _and if name.startswith("and") else _or
        return frozenset(combine(a, b, kleene) for a, b in itertools.product(left, right))
    if name == "invert" and len(args) == 1:
        return frozenset(_not(t) for t in possible(args[0], stats))
    if name in _SWAP and len(args) == 2:
        a, b = args
        if isinstance(a, Field) and isinstance(b, Literal) and a.name in stats:
            return _comparison(name, stats[a.name], b.value.as_py())
        if isinstance(b, Field) and isinstance(a, Literal) and b.name in stats:
            return _comparison(_SWAP[name], stats[b.name], a.value.as_py())
        return ALL
    if len(args) == 1 and isinstance(args[0], Field) and args[0].name in stats:
        s = stats[args[0].name]
        if name in ("is_null", "is_valid"):
            return _null_test(s, node.options, want_null=name == "is_null")
        if name == "is_in" and node.options is not None:
            return _is_in(s, node.options)
        if name == "starts_with" and node.options is not None:
            return _starts_with(s, node.options)
    return ALL


def may_hold(node: Node | None, stats: Mapping[str, Stats]) -> bool:
    """False only when no row within ``stats`` can make ``node`` true (a literal or a bound
    Python cannot handle decides nothing)."""
    if node is None:
        return True
    try:
        return True in possible(node, stats)
    except (ValueError, TypeError, ArithmeticError, OverflowError, pa.ArrowException):
        return True


# ----------------------------------------------------------------------------- buckets


def _pins(node: Node) -> dict[str, list[pa.Array]] | None:
    """Per column, the values ``node`` being true pins it to, as arrays whose values together
    are the set (absent: not pinned)."""
    if not isinstance(node, Call):
        return {}
    if node.name in ("and_kleene", "and") and len(node.args) == 2:
        left, right = _pins(node.args[0]), _pins(node.args[1])
        out = dict(left or {})
        for col, values in (right or {}).items():
            # both sides hold every value a kept row can have: either will do (no
            # intersection: literals of different types may still be equal values)
            if col not in out or _count(values) < _count(out[col]):
                out[col] = values
        return out
    if node.name in ("or_kleene", "or") and len(node.args) == 2:
        left, right = _pins(node.args[0]) or {}, _pins(node.args[1]) or {}
        return {c: left[c] + right[c] for c in left.keys() & right.keys()}
    if node.name == "equal" and len(node.args) == 2:
        a, b = node.args
        if isinstance(a, Literal) and isinstance(b, Field):
            a, b = b, a
        if isinstance(a, Field) and isinstance(b, Literal):
            value = b.value
            one = pa.array([value.as_py()], value.type) if value.is_valid else None
            return {a.name: [one] if one is not None else []}
        return {}
    if node.name == "is_in" and len(node.args) == 1 and isinstance(node.args[0], Field):
        options = node.options or {}
        values_scalar = options.get("value_set")
        if values_scalar is None or not values_scalar.is_valid:
            return {}
        values = values_scalar.values
        if values is None or values.null_count:
            return {}  # a null in the set may match null rows
        return {node.args[0].name: [values]}
    return {}


def _count(arrays: list[pa.Array]) -> int:
    return sum(len(a) for a in arrays)


def _same_family(literal: pa.DataType, column: pa.DataType) -> bool:
    """Literals whose equality with the column is plain value equality after a safe cast."""
    t = pa.types
    return bool(
        (t.is_integer(literal) and t.is_integer(column))
        or (
            (t.is_string(literal) or t.is_large_string(literal))
            and (t.is_string(column) or t.is_large_string(column))
        )
        or (
            (t.is_binary(literal) or t.is_large_binary(literal))
            and (t.is_binary(column) or t.is_large_binary(column))
        )
        or (t.is_date32(literal) and t.is_date32(column))
    )


def bucket_values(
    node: Node | None, columns: Iterable[tuple[str, pa.DataType]], limit: int = 4096
) -> list[pa.Array] | None:
    """Value combinations of ``columns`` (name, Arrow type) that a row ``node`` keeps must
    have, as one array per column (equal lengths), or None when the expression does not pin
    every column to a few values of a type whose equality is plain value equality (integers,
    strings, binary, dates)."""
    if node is None:
        return None
    pins = _pins(node)
    if not pins:
        return None
    per_column = []
    for name, arrow_type in columns:
        values = pins.get(name)
        if values is None:
            return None
        if not all(_same_family(v.type, arrow_type) for v in values):
            return None
        try:  # whole arrays: an isin may name many values
            cast = [v.cast(arrow_type, safe=True) for v in values]
            arr = pa.concat_arrays(cast) if cast else pa.array([], arrow_type)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            return None
        per_column.append(pc.unique(arr))
    combos = 1
    for arr in per_column:
        combos *= len(arr)
    if combos > limit:
        return None
    rows = list(itertools.product(*(arr.to_pylist() for arr in per_column)))
    return [pa.array([r[i] for r in rows], type=arr.type) for i, arr in enumerate(per_column)]
