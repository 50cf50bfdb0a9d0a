"""Field aggregators of the aggregation and partial-update engines (Paimon's semantics).

Each aggregator reduces, for every key segment, the *active* input values of one field in merge
order, where some rows are retractions (``-U``/``-D``). The common functions are computed over
whole arrays (Arrow hash aggregations or numpy ``reduceat``). The few cases whose result depends
on the order of retractions (``product``/``collect``/``nested_update`` after a retraction) or on
older/newer flags inside partial-update sequence groups fall back to a per-key loop over the
scalar ``agg``/``retract``/``agg_reversed`` rules below, run only for the affected keys.

Retract rules follow Paimon: ``sum`` subtracts, ``product`` divides, ``last_value`` clears,
``last_non_null_value`` clears on a non-null retraction, ``collect``/``merge_map``/
``nested_update`` remove, and every other function refuses retraction unless
``fields.<f>.ignore-retract`` is set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError, DataValidationError, UnsupportedFeatureError
from lakeops.format.types import DataType
from lakeops.merge import roaring64
from lakeops.merge.segments import Segments, rows_of, take_or_null

__all__ = [
    "AGGREGATORS",
    "Aggregator",
    "FieldAggOptions",
    "create_aggregator",
    "refuse_unretractable",
]

_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
_INT_RANGE = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}


@dataclass(frozen=True)
class FieldAggOptions:
    """Per-field options: ``fields.<f>.ignore-retract``, ``.list-agg-delimiter``, ``.distinct``,
    ``.nested-key``, ``.ts-field``."""

    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    nested_key: tuple[str, ...] = ()
    ts_field: str | None = None


def _retract_error(name: str, field: str) -> DataValidationError:
    return DataValidationError(
        f"Aggregate function '{name}' does not support retraction (field {field!r} received a "
        f"'-U'/'-D' row); if it may ignore retractions, set 'fields.{field}.ignore-retract' = "
        "'true'"
    )


def refuse_unretractable(aggregators: dict[str, Aggregator], where: str) -> None:
    """Raise before writing if retractions would reach a function that cannot retract them."""
    for name, agg in aggregators.items():
        if not agg.retractable and not agg.options.ignore_retract:
            raise DataValidationError(
                f"Aggregate function '{agg.name}' does not support retraction: the input has "
                f"'-U'/'-D' rows and {where} {name!r} uses it; set "
                f"'fields.{name}.ignore-retract' = 'true', or 'ignore-delete' = 'true'"
            )


class Aggregator:
    """Base class: one field's aggregate function."""

    name: ClassVar[str] = ""
    retractable: ClassVar[bool] = False
    #: agg == agg_reversed, so older inputs in sequence groups need no special handling
    commutative: ClassVar[bool] = False
    types: ClassVar[tuple[str, ...] | None] = None  # accepted roots; None = any

    def __init__(self, field: str, dtype: DataType, options: FieldAggOptions) -> None:
        self.field = field
        self.dtype = dtype
        self.options = options
        if self.types is not None and dtype.root not in self.types:
            raise ConfigurationError(
                f"aggregate function '{self.name}' of field {field!r} does not support type "
                f"{dtype.to_paimon()}; choose a function for that type or change the column"
            )
        self.arrow_type = dtype.to_arrow()

    # ----------------------------------------------------------- vectorised path
    def reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        """One value per segment from the active rows (retract marks ``-U``/``-D`` rows)."""
        if self.options.ignore_retract:
            active = active & ~retract
        elif (retract & active).any() and not self.retractable:
            raise _retract_error(self.name, self.field)
        return self._reduce(values, retract & active, active, seg)

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        return self.reduce_sequential(values, retract, active, None, seg)

    # ----------------------------------------------------------- scalar rules
    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        """Paimon's ``aggReversed``: an older input arrives (partial-update sequence groups)."""
        return self.agg(value, acc)

    def retract(self, _acc: Any, _value: Any) -> Any:
        raise _retract_error(self.name, self.field)

    def reset(self) -> None:
        """Start a new key (aggregators with per-merge state override this)."""

    def reduce_from(
        self,
        values: pa.Array,
        retract: np.ndarray,
        active: np.ndarray,
        seg: Segments,
        init: np.ndarray,
        _prior: np.ndarray,
    ) -> pa.Array:
        """Like :meth:`reduce`, but a segment with ``init[s] >= 0`` starts from the value of row
        ``init[s]`` as its accumulator (Paimon's ``initRow`` after a ``-D``) and folds only the
        ``active`` rows, which all come after it. ``prior`` marks the add rows that came before
        ``init`` in the same merge: they do not count, but they did change per-merge state
        (``first_value``'s "initialised" flag), which Paimon does not reset at a ``-D``.

        The default treats the initial row as the first add, which is exact whenever
        ``agg(null, x) == x`` (every function but the ones that override this)."""
        has = init >= 0
        if not self.init_transparent and has.any():
            out = self.reduce(values, retract, active, seg)
            return self.reduce_sequential(values, retract, active, None, seg, has, out, init)
        with_init = active.copy()
        with_init[init[has]] = True
        return self.reduce(values, retract & ~rows_of(init, seg.n), with_init, seg)

    @property
    def init_transparent(self) -> bool:
        """``agg(null, x) == x`` for every x, so an initial accumulator is just a first add."""
        return True

    def fold_into(
        self, _start: pa.Array, _reduced: pa.Array, _where: np.ndarray
    ) -> pa.Array | None:
        """Where ``where`` holds, the fold that starts from ``start`` instead of null, given
        ``reduced``, the same fold from null (others keep ``reduced``); None if this function
        has no whole-array form (the caller then replays those keys)."""
        return None

    def reduce_sequential(
        self,
        values: pa.Array,
        retract: np.ndarray,
        active: np.ndarray,
        older: np.ndarray | None,
        seg: Segments,
        only: np.ndarray | None = None,
        base: pa.Array | None = None,
        init: np.ndarray | None = None,
    ) -> pa.Array:
        """The per-key loop: apply agg / agg_reversed / retract row by row.

        ``only`` restricts the loop to some segments (others take ``base``); ``init`` gives, per
        segment, a row whose value is the starting accumulator (-1: start from null).
        """
        if self.options.ignore_retract:
            active = active & ~retract
        py = values.to_pylist()
        out = base.to_pylist() if base is not None else [None] * seg.count
        segments = range(seg.count) if only is None else np.flatnonzero(only)
        ends = seg.ends
        for s in segments:
            self.reset()
            acc = py[int(init[s])] if init is not None and init[s] >= 0 else None
            for r in range(int(seg.starts[s]), int(ends[s]) + 1):
                if not active[r]:
                    continue
                if retract[r]:
                    acc = self.retract(acc, py[r])
                elif older is not None and older[r]:
                    acc = self.agg_reversed(acc, py[r])
                else:
                    acc = self.agg(acc, py[r])
            out[s] = acc
        return pa.array(out, type=self.arrow_type)


# --------------------------------------------------------------------- helpers
def _hash_aggregate(
    values: pa.Array,
    active: np.ndarray,
    seg: Segments,
    func: str,
    options: pc.FunctionOptions | None = None,
) -> pa.Array:
    """Arrow hash aggregation of the active rows, one result per segment (null if none)."""
    ids = seg.ids[active]
    table = pa.table({"g": pa.array(ids), "v": values.filter(pa.array(active))})
    agg = table.group_by("g", use_threads=False).aggregate([("v", func, options)])
    pos = np.full(seg.count, -1, dtype=np.int64)
    pos[agg.column("g").to_numpy()] = np.arange(agg.num_rows)
    return take_or_null(agg.column(f"v_{func}"), pos)


def _nonnull(values: pa.Array) -> np.ndarray:
    return ~np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _list_lengths(values: pa.Array) -> np.ndarray:
    """Entries of every list/map value (0 for nulls), matching what ``flatten()`` yields."""
    lengths = np.diff(values.offsets.to_numpy(zero_copy_only=False)).astype(np.int64)
    return np.where(_nonnull(values), lengths, 0)


def _cast_back(result: pa.Array, target: pa.DataType, field: str, name: str) -> pa.Array:
    try:
        return result.cast(target, safe=True)
    except pa.ArrowInvalid as exc:
        raise DataValidationError(
            f"aggregate '{name}' of field {field!r} overflows {target}: {exc}"
        ) from None


# ------------------------------------------------------------------ functions
class Sum(Aggregator):
    name = "sum"
    retractable = True
    commutative = True
    types = _NUMERIC

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        signed = values
        if retract.any():
            mask = pa.array(retract)
            signed = pc.if_else(mask, pc.negate_checked(values), values)
        out = _hash_aggregate(
            signed, active, seg, "sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        )
        if self.dtype.root == "BIGINT":  # int64 sums wrap in Arrow: detect overflow exactly
            approx = _hash_aggregate(
                signed.cast(pa.float64()),
                active,
                seg,
                "sum",
                pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
            )
            big = np.abs(approx.fill_null(0).to_numpy(zero_copy_only=False)) > 9.2e18
            if big.any():
                raise DataValidationError(
                    f"aggregate 'sum' of field {self.field!r} overflows BIGINT"
                )
        return _cast_back(out, self.arrow_type, self.field, self.name)

    def fold_into(self, start: pa.Array, reduced: pa.Array, where: np.ndarray) -> pa.Array | None:
        # sum is associative and commutative: fold(start; rows) == agg(start, fold(null; rows))
        start = pc.if_else(pa.array(where), start, pa.nulls(len(start), start.type))
        try:
            total = pc.add_checked(start, reduced)
        except pa.ArrowInvalid:
            raise DataValidationError(
                f"aggregate 'sum' of field {self.field!r} overflows {self.dtype.root}"
            ) from None
        total = _cast_back(total, self.arrow_type, self.field, self.name)
        return pc.coalesce(total, start.cast(self.arrow_type), reduced.cast(self.arrow_type))

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self._check(acc + value)

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return -value if acc is None and value is not None else acc
        return self._check(acc - value)

    def _check(self, v: Any) -> Any:
        bound = _INT_RANGE.get(self.dtype.root)
        if bound is not None and not -bound <= v < bound:
            raise DataValidationError(
                f"aggregate 'sum' of field {self.field!r} overflows {self.dtype.root}"
            )
        return v


class Product(Aggregator):
    name = "product"
    retractable = True
    types = _NUMERIC

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        out = _hash_aggregate(
            values,
            active & ~retract,
            seg,
            "product",
            pc.ScalarAggregateOptions(skip_nulls=True, min_count=1),
        )
        out = _cast_back(out, self.arrow_type, self.field, self.name)
        with_retract = seg.any(retract)
        if with_retract.any():  # division order matters: replay those keys row by row
            out = self.reduce_sequential(values, retract, active, None, seg, with_retract, out)
        return out

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        result = acc * value
        bound = _INT_RANGE.get(self.dtype.root)
        if bound is not None and not -bound <= result < bound:
            raise DataValidationError(
                f"aggregate 'product' of field {self.field!r} overflows {self.dtype.root}"
            )
        return result

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if self.dtype.root in _INT_RANGE:
            q = abs(acc) // abs(value)
            return q if (acc >= 0) == (value > 0) else -q  # Java truncates towards zero
        if isinstance(acc, Decimal):
            return (acc / value).quantize(Decimal(1).scaleb(-(self.dtype.scale or 0)))
        return acc / value


class _MinMax(Aggregator):
    commutative = True
    func: ClassVar[str] = ""

    def _reduce(
        self, values: pa.Array, _retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        return _hash_aggregate(
            values, active, seg, self.func, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        ).cast(self.arrow_type)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return max(acc, value) if self.func == "max" else min(acc, value)


class Min(_MinMax):
    name = "min"
    func = "min"


class Max(_MinMax):
    name = "max"
    func = "max"


class LastValue(Aggregator):
    name = "last_value"
    retractable = True

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        last = seg.last_index(active)
        last = np.where((last >= 0) & retract[np.maximum(last, 0)], -1, last)
        return take_or_null(values, last)

    def agg(self, _acc: Any, value: Any) -> Any:
        return value

    def retract(self, _acc: Any, _value: Any) -> Any:
        return None


class LastNonNullValue(Aggregator):
    name = "last_non_null_value"
    retractable = True

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        last = seg.last_index(active & _nonnull(values))
        last = np.where((last >= 0) & retract[np.maximum(last, 0)], -1, last)
        return take_or_null(values, last)

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def retract(self, acc: Any, value: Any) -> Any:
        return acc if value is None else None


class FirstValue(Aggregator):
    name = "first_value"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._initialized = False

    def reset(self) -> None:
        self._initialized = False

    def _reduce(
        self, values: pa.Array, _retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        return take_or_null(values, seg.first_index(self._counts(values, active)))

    def _counts(self, _values: pa.Array, rows: np.ndarray) -> np.ndarray:
        """The rows that would set the value (and the "initialised" flag)."""
        return rows

    def reduce_from(
        self,
        values: pa.Array,
        retract: np.ndarray,
        active: np.ndarray,
        seg: Segments,
        init: np.ndarray,
        prior: np.ndarray,
    ) -> pa.Array:
        # after initRow the accumulator is the -D row's value; the flag survives the -D: if an
        # earlier add set it, that value stays; otherwise the first add after the -D replaces it
        first = seg.first_index(self._counts(values, active & ~retract))
        seen = seg.any(self._counts(values, prior))
        keep = (init >= 0) & (seen | (first < 0))
        return take_or_null(values, np.where(keep, init, first))

    def agg(self, acc: Any, value: Any) -> Any:
        if not self._initialized:
            self._initialized = True
            return value
        return acc


class FirstNonNullValue(FirstValue):
    name = "first_non_null_value"

    def _counts(self, values: pa.Array, rows: np.ndarray) -> np.ndarray:
        result: np.ndarray = rows & _nonnull(values)
        return result

    def agg(self, acc: Any, value: Any) -> Any:
        if not self._initialized and value is not None:
            self._initialized = True
            return value
        return acc


#: Java's ``Character.isWhitespace`` for the UTF-16 units of a string: the Unicode space,
#: line and paragraph separators except the non-breaking ones (U+00A0, U+2007, U+202F), and
#: the controls \t \n \v \f \r and U+001C..U+001F
_JAVA_BLANK = re.compile(
    r"[\t\n\x0b\x0c\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]*"
)
#: the same class for Arrow's RE2 (no ``\u`` escapes there)
_JAVA_BLANK_RE2 = (
    r"^[\t\n\x0b\x0c\r\x1c-\x1f \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200a}"
    r"\x{2028}\x{2029}\x{205f}\x{3000}]*$"
)


def _is_blank(value: str) -> bool:
    """Paimon's ``StringUtils.isBlank``: empty or only (Java) whitespace."""
    return _JAVA_BLANK.fullmatch(value) is not None


def _blank(values: pa.Array) -> np.ndarray:
    """Rows whose (non-null) string is blank, as :func:`_is_blank`; nulls are False."""
    matches = pc.match_substring_regex(values, _JAVA_BLANK_RE2)
    return np.asarray(matches.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


class ListAgg(Aggregator):
    """``listagg`` as Paimon 2.0 (apache/paimon#8480): NULL and blank inputs are skipped, a
    blank accumulator is replaced by the input; ``distinct`` appends only the input's
    non-blank tokens not yet in the accumulator."""

    name = "listagg"
    types = ("CHAR", "VARCHAR")

    @property
    def init_transparent(self) -> bool:
        return False  # a blank initial accumulator is kept unless a non-blank input follows

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        if self.options.distinct:
            return self.reduce_sequential(values, retract, active, None, seg)
        rows = active & _nonnull(values) & ~_blank(values)
        lists = _hash_aggregate(values, rows, seg, "list")
        return pc.binary_join(lists, self.options.delimiter)

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None or _is_blank(value):
            return acc
        if acc is None or _is_blank(acc):
            return value
        delimiter = self.options.delimiter
        if not self.options.distinct:
            return acc + delimiter + value
        seen = set(acc.split(delimiter))
        parts = [acc]
        for token in value.split(delimiter):
            if not _is_blank(token) and token not in seen:
                seen.add(token)
                parts.append(token)
        return delimiter.join(parts)


class _Bool(Aggregator):
    commutative = True
    types = ("BOOLEAN",)
    func: ClassVar[str] = ""

    def _reduce(
        self, values: pa.Array, _retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        return _hash_aggregate(
            values, active, seg, self.func, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        )

    def agg(self, acc: Any, value: Any) -> Any:
        """Nulls are skipped; two values combine by the subclass's ``_combine``."""
        if acc is None or value is None:
            return value if acc is None else acc
        return self._combine(acc, value)

    @staticmethod
    def _combine(acc: bool, value: bool) -> bool:
        raise NotImplementedError


class BoolAnd(_Bool):
    name = "bool_and"
    func = "all"

    @staticmethod
    def _combine(acc: bool, value: bool) -> bool:
        return acc and value


class BoolOr(_Bool):
    name = "bool_or"
    func = "any"

    @staticmethod
    def _combine(acc: bool, value: bool) -> bool:
        return acc or value


class Collect(Aggregator):
    name = "collect"
    retractable = True
    types = ("ARRAY",)

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        rows = active & _nonnull(values)
        with_retract = seg.any(retract & rows)
        adds = rows & ~retract
        lengths = _list_lengths(values)
        keep = np.repeat(adds, lengths)
        elements = values.flatten().filter(pa.array(keep))
        owners = np.repeat(seg.ids, lengths)[keep]
        if self.options.distinct and len(elements):
            first = (
                pa.table({"g": owners, "e": elements, "i": np.arange(len(elements))})
                .group_by(["g", "e"], use_threads=False)
                .aggregate([("i", "min")])
            )
            order = np.sort(first.column("i_min").to_numpy())
            elements, owners = elements.take(pa.array(order)), owners[order]
        counts = np.bincount(owners, minlength=seg.count)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        has = seg.any(rows & ~retract)
        out = pa.ListArray.from_arrays(
            pa.array(offsets), elements, mask=pa.array(~has), type=self.arrow_type
        )
        if with_retract.any():
            out = self.reduce_sequential(values, retract, active, None, seg, with_retract, out)
        return out

    @property
    def init_transparent(self) -> bool:
        return not self.options.distinct  # a distinct agg de-duplicates even agg(null, x)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None and value is None:
            return None
        if (acc is None or value is None) and not self.options.distinct:
            return value if acc is None else acc
        merged = list(acc or []) + list(value or [])
        if not self.options.distinct:
            return merged
        seen: set[Any] = set()
        out = []
        for v in merged:
            h = _hashable(v)
            if h not in seen:
                seen.add(h)
                out.append(v)
        return out

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        out = list(acc)
        for v in value:
            if v in out:
                out.remove(v)
        return out


def _hashable(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    return v


class MergeMap(Aggregator):
    name = "merge_map"
    retractable = True
    types = ("MAP",)

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        rows = active & _nonnull(values)
        lengths = _list_lengths(values)
        keep = np.repeat(rows, lengths)
        entries = pa.ListArray.from_arrays(values.offsets, values.values, mask=values.is_null())
        flat = entries.flatten().filter(pa.array(keep))  # struct<key, value>
        keys, items = flat.field(0), flat.field(1)
        owners = np.repeat(seg.ids, lengths)[keep]
        removed = np.repeat(retract, lengths)[keep]
        pos = np.arange(len(flat))
        table = pa.table({"g": owners, "k": keys, "i": pos})
        grouped = table.group_by(["g", "k"], use_threads=False).aggregate(
            [("i", "max"), ("i", "min")]
        )
        last = grouped.column("i_max").to_numpy()
        first = grouped.column("i_min").to_numpy()
        alive = ~removed[last]
        order = np.lexsort((first[alive], owners[last[alive]]))
        chosen = last[alive][order]
        counts = np.bincount(owners[chosen], minlength=seg.count)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        has = seg.any(rows)
        return pa.MapArray.from_arrays(
            pa.array(offsets),
            keys.take(pa.array(chosen)),
            items.take(pa.array(chosen)),
            type=self.arrow_type,
            mask=pa.array(~has),
        )

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged = dict(acc)
        merged.update(dict(value))
        return list(merged.items())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        gone = {k for k, _ in value}
        return [(k, v) for k, v in acc if k not in gone]


def _java_string_order(values: pa.Array) -> pa.Array:
    """The strings as binary whose byte order is Java's ``String.compareTo`` (UTF-16 code
    units): UTF-8 lead bytes of U+E000..U+FFFF (0xEE, 0xEF) move above those of supplementary
    characters (0xF0..0xF4), everything else keeps code-point order."""
    values = values.cast(pa.binary())
    data = values.buffers()[2]
    if data is None:
        return values
    raw = np.frombuffer(data, dtype=np.uint8)
    if not (raw >= 0xF0).any():  # no supplementary characters: code-point order is Java's
        return values
    table = np.arange(256, dtype=np.uint8)
    table[0xF0:0xF5] = np.arange(0xEE, 0xF3, dtype=np.uint8)
    table[0xEE:0xF0] = (0xF3, 0xF4)
    return pa.Array.from_buffers(
        pa.binary(),
        len(values),
        [values.buffers()[0], values.buffers()[1], pa.py_buffer(table[raw].tobytes())],
        offset=values.offset,
    )


class MergeMapWithKeyTime(Aggregator):
    """``merge_map_with_keytime`` (Paimon 1.4.1+): ``MAP<K, ROW<…, ts STRING>>`` merged per key
    by the timestamp field of the row value (``fields.<f>.ts-field``, default: the row's last
    field).

    ``agg(null, m)`` is ``m`` unchanged. Merging a later map ``m`` into the accumulator, entry by
    entry in order: a null row removes the key; a row with a null timestamp is skipped; a key
    that is absent, holds a null row or a row with a null timestamp takes the new row; otherwise
    the new row replaces the old one only if its timestamp is strictly greater, comparing the
    strings as Java does. No retraction. Entries keep the order in which their key first
    appeared (Paimon's HashMap order carries no meaning)."""

    name = "merge_map_with_keytime"
    types = ("MAP",)

    def __init__(self, field: str, dtype: DataType, options: FieldAggOptions) -> None:
        super().__init__(field, dtype, options)
        value = dtype.value
        if value is None or value.root != "ROW":
            raise ConfigurationError(
                f"Value type of MAP for field {field!r} must be ROW but was "
                f"{value.to_paimon() if value else None}; merge_map_with_keytime needs "
                "MAP<key, ROW<value…, ts STRING>>"
            )
        names = [n for _, n, _ in value.fields]
        if len(names) < 2:
            raise ConfigurationError(
                f"ROW type for field {field!r} must have at least 2 fields, but found "
                f"{len(names)} (merge_map_with_keytime)"
            )
        ts = options.ts_field or names[-1]
        if ts not in names:
            raise ConfigurationError(
                f"Timestamp field {ts!r} not found in ROW type for field {field!r} (option "
                f"'fields.{field}.ts-field'). Available fields: {names}"
            )
        ts_type = value.fields[names.index(ts)][2]
        if ts_type.root not in ("CHAR", "VARCHAR"):
            raise UnsupportedFeatureError(
                f"merge_map_with_keytime on field {field!r}: timestamp field {ts!r} is "
                f"{ts_type.to_paimon()}; Paimon compares it as a string (getString), so only "
                "CHAR/VARCHAR timestamp fields are supported — store it as a sortable string"
            )
        self.ts_index = names.index(ts)

    def _reduce(
        self, values: pa.Array, _retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        rows = active & _nonnull(values)
        first = seg.first_index(rows)
        out = take_or_null(values, first)  # a single map passes through unchanged
        multi = first != seg.last_index(rows)
        if not multi.any():
            return out
        lengths = _list_lengths(values)
        keep = np.repeat(rows & multi[seg.ids], lengths)
        entries = pa.ListArray.from_arrays(values.offsets, values.values, mask=values.is_null())
        flat = entries.flatten().filter(pa.array(keep))  # struct<key, value>
        keys, items = flat.field(0), flat.field(1)
        owners = np.repeat(seg.ids, lengths)[keep]
        initial = np.repeat(rows & (np.arange(seg.n) == first[seg.ids]), lengths)[keep]
        n = len(flat)
        null_row = ~_nonnull(items)
        if n == 0:  # only empty maps
            return out
        ts = pc.struct_field(items, [self.ts_index])
        valid = ~null_row & _nonnull(ts)
        # entries of one (segment, key) together, in input order
        order = pc.sort_indices(
            pa.table({"g": owners, "k": keys, "i": np.arange(n)}),
            sort_keys=[("g", "ascending"), ("k", "ascending"), ("i", "ascending")],
        ).to_numpy()
        k_sorted = keys.take(pa.array(order))
        g_sorted = owners[order]
        new_group = np.ones(n, dtype=bool)
        if n > 1:
            same_key = pc.equal(k_sorted.slice(1), k_sorted.slice(0, n - 1)).fill_null(False)
            new_group[1:] = (g_sorted[1:] != g_sorted[:-1]) | ~same_key.to_numpy(
                zero_copy_only=False
            )
        groups = Segments(np.flatnonzero(new_group), n)
        init_s, valid_s = initial[order], valid[order]
        # the last reset: an entry of the first map (put as is) or a null row (removal)
        reset = groups.last_index(init_s | (null_row[order] & ~init_s))
        eligible = valid_s & groups.after(reset - 1)
        ranks = dense_ranks(_java_string_order(ts.filter(pa.array(valid))))
        rank = np.full(n, -1, dtype=np.int64)
        rank[np.flatnonzero(valid)] = ranks
        rank_s = np.where(eligible, rank[order], -1)
        best = np.maximum.reduceat(rank_s, groups.starts)
        winner = groups.first_index(eligible & (rank_s == best[groups.ids]))
        fallback = (reset >= 0) & init_s[np.maximum(reset, 0)]
        chosen = np.where(winner >= 0, winner, np.where(fallback, reset, -1))
        alive = chosen >= 0
        picked = order[chosen[alive]]
        # output: per segment, keys in order of first appearance
        first_pos = np.minimum.reduceat(order, groups.starts)[alive]
        seg_of = owners[picked]
        out_order = np.lexsort((first_pos, seg_of))
        picked, seg_of = picked[out_order], seg_of[out_order]
        counts = np.bincount(seg_of, minlength=seg.count)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int32)
        merged = pa.MapArray.from_arrays(
            pa.array(offsets),
            keys.take(pa.array(picked)),
            items.take(pa.array(picked)),
            type=self.arrow_type,
        )
        pick = np.where(multi, np.arange(seg.count) + seg.count, np.arange(seg.count))
        return pa.concat_arrays([out, merged]).take(pa.array(pick))

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged = dict(acc)
        for key, row in value:
            if row is None:
                merged.pop(key, None)
                continue
            ts = list(row.values())[self.ts_index]
            if ts is None:
                continue
            old = merged.get(key)
            old_ts = None if old is None else list(old.values())[self.ts_index]
            if old_ts is None or _utf16(ts) > _utf16(old_ts):
                merged[key] = row
        return list(merged.items())


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be")


def dense_ranks(values: pa.Array) -> np.ndarray:
    """Rank of every (non-null) value in ascending order; equal values share a rank."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = pc.sort_indices(values).to_numpy()
    ordered = values.take(pa.array(order))
    change = np.zeros(n, dtype=np.int64)
    if n > 1:
        change[1:] = pc.not_equal(ordered.slice(1), ordered.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.cumsum(change)
    return ranks


class NestedUpdate(Aggregator):
    name = "nested_update"
    retractable = True
    types = ("ARRAY",)

    def __init__(self, field: str, dtype: DataType, options: FieldAggOptions) -> None:
        super().__init__(field, dtype, options)
        if dtype.element is None or dtype.element.root != "ROW":
            raise ConfigurationError(
                f"aggregate function 'nested_update' of field {field!r} needs type ARRAY<ROW<…>>"
            )
        names = [n for _, n, _ in dtype.element.fields]
        unknown = [k for k in options.nested_key if k not in names]
        if unknown:
            raise ConfigurationError(
                f"option 'fields.{field}.nested-key' names {unknown}, "
                f"which are not fields of the nested row ({names})"
            )

    def _key(self, row: dict[str, Any]) -> Any:
        return tuple(_hashable(row.get(k)) for k in self.options.nested_key)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        if not self.options.nested_key:
            return list(acc) + list(value)
        merged = {self._key(r): r for r in acc}
        for r in value:
            merged[self._key(r)] = r
        return list(merged.values())

    def retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if not self.options.nested_key:
            out = list(acc)
            for r in value:
                if r in out:
                    out.remove(r)
            return out
        gone = {self._key(r) for r in value}
        return [r for r in acc if self._key(r) not in gone]


class _Bytes(Aggregator):
    """Unions of serialized bitmaps / sketches (BYTES), one key at a time in native code."""

    types = ("VARBINARY", "BINARY")
    commutative = True

    def _reduce(
        self, values: pa.Array, retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        rows = active & _nonnull(values)
        multi = seg.last_index(rows) != seg.first_index(rows)
        out = take_or_null(values, seg.first_index(rows))
        if multi.any():
            out = self.reduce_sequential(values, retract, rows, None, seg, multi, out)
        return out

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self.union(acc, value)

    def union(self, a: bytes, b: bytes) -> bytes:
        raise NotImplementedError


def _require(module: str, function: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ConfigurationError(
            f"aggregate function '{function}' needs the '{module}' package: "
            "pip install 'lakeops[sketches]'"
        ) from None


class _NativeState(_Bytes):
    """A BYTES state decoded by a native library; bytes it cannot read are named, not crashed
    on: a :class:`DataValidationError` naming the field and the function."""

    def _state_error(self, value: bytes, exc: Exception) -> DataValidationError:
        head = bytes(value[:16]).hex()
        return DataValidationError(
            f"field {self.field!r} (aggregate function '{self.name}'): a value of {len(value)} "
            f"bytes (starting {head}) is not a serialized {self.state}: {exc}"
        )

    state: ClassVar[str] = ""


class Rbm32(_NativeState):
    """Java's ``RoaringBitmap.serialize`` is the portable roaring layout, as pyroaring's."""

    name = "rbm32"
    state = "32-bit roaring bitmap"

    def union(self, a: bytes, b: bytes) -> bytes:
        roaring = _require("pyroaring", self.name)
        out = self._read(roaring, a) | self._read(roaring, b)
        out.run_optimize()  # as Paimon's RoaringBitmap32.serialize does
        return bytes(out.serialize())

    def _read(self, roaring: Any, value: bytes) -> Any:
        try:
            return roaring.BitMap.deserialize(value)
        except Exception as exc:  # the native reader says why in its own words
            raise self._state_error(value, exc) from None


class Rbm64(_NativeState):
    """Read in Java Paimon's ``Roaring64Bitmap`` layout or the portable one older lakeops wrote
    (:mod:`lakeops.merge.roaring64`); written in Java's only."""

    name = "rbm64"
    state = "64-bit roaring bitmap"

    def _reduce(
        self, values: pa.Array, _retract: np.ndarray, active: np.ndarray, seg: Segments
    ) -> pa.Array:
        """Each key's values read once and united in one go (not pairwise through bytes)."""
        rows = active & _nonnull(values)
        first = seg.first_index(rows)
        multi = seg.last_index(rows) != first
        what = f"field {self.field!r} (aggregate function 'rbm64')"
        out = roaring64.to_java_array(take_or_null(values, first), what)
        if not multi.any():
            return out
        ids = seg.ids
        chosen = np.flatnonzero(rows & multi[ids])
        owners = ids[chosen]
        raw = values.take(pa.array(chosen)).to_pylist()
        bounds = np.flatnonzero(np.diff(owners)) + 1
        merged = out.to_pylist()
        for lo, hi in zip(
            np.concatenate(([0], bounds)).tolist(),
            np.append(bounds, len(chosen)).tolist(),
            strict=True,
        ):
            merged[int(owners[lo])] = self._union_all(raw[lo:hi])
        return pa.array(merged, type=self.arrow_type)

    def union(self, a: bytes, b: bytes) -> bytes:
        return self._union_all([a, b])

    def _union_all(self, states: list[bytes]) -> bytes:
        roaring = _require("pyroaring", self.name)
        what = f"field {self.field!r} (aggregate function 'rbm64')"
        out = roaring.BitMap64.deserialize(roaring64.portable_from_any(states[0], what))
        for state in states[1:]:
            out |= roaring.BitMap64.deserialize(roaring64.portable_from_any(state, what))
        out.run_optimize()  # as Paimon's RoaringBitmap64.serialize does
        return roaring64.java_from_portable(bytes(out.serialize()), what)


class HllSketch(_NativeState):
    """Paimon's ``HllSketchUtil.union``: the result is an HLL_4 sketch, whatever the inputs."""

    name = "hll_sketch"
    state = "HLL sketch"

    def union(self, a: bytes, b: bytes) -> bytes:
        ds = _require("datasketches", self.name)
        left, right = self._read(ds, a), self._read(ds, b)
        union = ds.hll_union(max(left.lg_config_k, right.lg_config_k))
        union.update(left)
        union.update(right)
        return bytes(union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact())

    def _read(self, ds: Any, value: bytes) -> Any:
        problem = self._image_problem(bytes(value))
        if problem:
            raise self._state_error(value, ValueError(problem))
        try:
            return ds.hll_sketch.deserialize(value)
        except Exception as exc:  # the native reader says why in its own words
            raise self._state_error(value, exc) from None

    @staticmethod
    def _image_problem(value: bytes) -> str | None:
        """What makes an HLL-mode image unsafe to hand to the native library, which reads past
        its arrays on some damaged ones instead of refusing them (an HLL_4 slot marked as kept
        in the exception table that has no entry there crashes the process): the array and
        exception-table sizes must fit the bytes, and the marked slots match the table."""
        if len(value) < 8 or value[2] != 7 or value[7] & 3 != 2:
            return None  # not an HLL-mode sketch: the library checks the list/set modes
        lg_k, tgt = value[3], value[7] >> 2 & 3
        if not 4 <= lg_k <= 21 or tgt > 2 or value[0] != 10 or len(value) < 40:
            return "bad HLL preamble"
        k = 1 << lg_k
        array = (k >> 1, (k * 3 >> 2) + 1, k)[tgt]
        aux = int.from_bytes(value[36:40], "little", signed=True)
        if len(value) < 40 + array or aux < 0:
            return "HLL array shorter than its preamble says"
        if tgt == 0:
            nibbles = np.frombuffer(value, dtype=np.uint8, count=array, offset=40)
            marked = int(np.count_nonzero((nibbles & 15) == 15)) + int(
                np.count_nonzero(nibbles >> 4 == 15)
            )
            compact = bool(value[5] & 8)
            table = 4 * aux if compact else 4 << value[4]
            if marked != aux or len(value) < 40 + array + table:
                return "HLL_4 exception table disagrees with its array"
        return None


class ThetaSketch(_NativeState):
    name = "theta_sketch"
    state = "compact theta sketch"

    def union(self, a: bytes, b: bytes) -> bytes:
        ds = _require("datasketches", self.name)
        union = ds.theta_union()
        union.update(self._read(ds, a))
        union.update(self._read(ds, b))
        return bytes(union.get_result().serialize())

    def _read(self, ds: Any, value: bytes) -> Any:
        try:
            return ds.compact_theta_sketch.deserialize(value)
        except Exception as exc:  # the native reader says why in its own words
            raise self._state_error(value, exc) from None


AGGREGATORS: dict[str, type[Aggregator]] = {
    cls.name: cls
    for cls in (
        Sum,
        Product,
        Min,
        Max,
        LastValue,
        LastNonNullValue,
        FirstValue,
        FirstNonNullValue,
        ListAgg,
        BoolAnd,
        BoolOr,
        Collect,
        MergeMap,
        MergeMapWithKeyTime,
        NestedUpdate,
        Rbm32,
        Rbm64,
        HllSketch,
        ThetaSketch,
    )
}


def create_aggregator(
    function: str, field: str, dtype: DataType, options: FieldAggOptions
) -> Aggregator:
    """The aggregator named ``function`` for a field, or a ConfigurationError naming the fix."""
    cls = AGGREGATORS.get(function.strip().lower())
    if cls is None:
        raise ConfigurationError(
            f"Use unsupported aggregation: {function} or spell aggregate function incorrectly! "
            f"(option 'fields.{field}.aggregate-function'; supported: "
            f"{', '.join(sorted(AGGREGATORS))}; for a count use 'sum' over a column of 1s)"
        )
    return cls(field, dtype, options)
