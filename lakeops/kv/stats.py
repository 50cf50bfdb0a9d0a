"""Column statistics of data files (``SimpleStats``: min, max and null count per column), as
Paimon 0.9 writes them.

One accumulator serves both layouts of :class:`~lakeops.kv.writer.RollingFileWriter`: the key
statistics of key-value files (every key column in full, FLOAT/DOUBLE in Java's total order)
and the value statistics of append files, which follow the table's stats modes and what
Paimon's per-format statistics extractor keeps:

* modes (``metadata.stats-mode``, default ``truncate(16)``; per field
  ``fields.<field>.stats-mode``): ``none`` (no min, max or null count), ``counts`` (null count
  only), ``full`` (exact min and max), ``truncate(N)`` (strings cut to ``N`` code points, the
  max rounded up by incrementing its last code point that can be; when none can, neither min
  nor max is kept);
* types: min/max for CHAR/VARCHAR, BOOLEAN, TINYINT … BIGINT, DECIMAL, DATE, TIME, FLOAT,
  DOUBLE and TIMESTAMP/TIMESTAMP_LTZ of precision ≤ 6 (Paimon's Parquet extractor); BINARY,
  VARBINARY and longer timestamps get a null count only; ARRAY, MAP, MULTISET and ROW a null
  count, except in Parquet files, where they get nothing (Parquet has no top-level column of
  that name to take statistics from);
* FLOAT/DOUBLE in Parquet and ORC files: a zero min is ``-0.0`` and a zero max ``+0.0`` (how
  parquet-mr reads its statistics; a bound either way for ORC); a column holding NaN keeps no
  min/max (the formats' bounds then depend on where the NaN falls). Avro files order
  FLOAT/DOUBLE as Java's ``compareTo`` (NaN the greatest), as Paimon's row collectors do;
* ORC files keep no TIMESTAMP/TIMESTAMP_LTZ min/max (Java's are the ORC writer's, converted
  through the JVM's time zone; lakeops leaves them out rather than risk a wrong bound).

Bounds are per whole column (``pyarrow.compute.min_max`` per written chunk, merged), except
the strings of a Parquet file, whose bounds the Parquet writer has already computed: they are
taken from the file's footer (as Paimon takes every bound from it), where the writer keeps them
for values of at most 4 KiB (a larger value leaves the file without string bounds, as Java's
parquet-mr leaves them).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.data_file import SimpleStats
from lakeops.format.floats import is_floating, order_value, total_order
from lakeops.format.types import DataType
from lakeops.options.rows_ignorable import FIELD_STATS_MODE, METADATA_STATS_MODE

__all__ = ["StatsCollector", "StatsMode", "column_bounds", "stats_modes"]

_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")
#: types Paimon keeps only null counts for (VARIANT: no statistics at all but the null count)
_NESTED = {"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT"}
_COUNT_ONLY = {"BINARY", "VARBINARY"}
_TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_LTZ"}


@dataclass(frozen=True)
class StatsMode:
    """One column's ``stats-mode``: ``kind`` is none, counts, full or truncate (``length``
    code points)."""

    kind: str
    length: int = 0

    @classmethod
    def parse(cls, text: str, option: str) -> StatsMode:
        upper = text.strip().upper()
        if upper in ("NONE", "COUNTS", "FULL"):
            return cls(upper.lower())
        m = _TRUNCATE.fullmatch(upper)
        if m is None or int(m.group(1)) <= 0:
            raise ConfigurationError(
                f"option '{option}' = '{text}' is not a stats mode; use none, counts, full or "
                "truncate(N) with N > 0"
            )
        return cls("truncate", int(m.group(1)))


FULL = StatsMode("full")


def stats_modes(options: Mapping[str, str], fields: Sequence[str]) -> list[StatsMode]:
    """Each field's stats mode: ``fields.<field>.stats-mode``, else ``metadata.stats-mode``
    (default ``truncate(16)``), as Paimon's ``StatsCollectorFactories``."""
    default = StatsMode.parse(METADATA_STATS_MODE.get(options), METADATA_STATS_MODE.key)
    out = []
    for name in fields:
        key = f"fields.{name}.stats-mode"
        text = FIELD_STATS_MODE.find(options, key=key)
        out.append(default if text is None else StatsMode.parse(text, key))
    return out


def column_bounds(column: pa.ChunkedArray | pa.Array) -> tuple[Any, Any]:
    """(min, max) of a column's non-null values as Python values (None, None when it has none);
    FLOAT/DOUBLE in Java's total order (NaN the greatest, ``-0.0`` below ``0.0``)."""
    if not is_floating(column.type):
        mm = pc.min_max(column)
        return mm["min"].as_py(), mm["max"].as_py()
    if column.null_count == len(column):
        return None, None
    ordered = total_order(column)
    mm = pc.min_max(ordered)
    lo = column[pc.index(ordered, mm["min"]).as_py()].as_py()
    hi = column[pc.index(ordered, mm["max"]).as_py()].as_py()
    return lo, hi


def _round_up(text: str, length: int) -> str | None:
    """The least string of at most ``length`` code points that is ≥ every string starting with
    ``text[:length]`` (Paimon's ``truncateMax``); None when no code point can be incremented."""
    if len(text) <= length:
        return text
    head = text[:length]
    for i in range(length - 1, -1, -1):
        nxt = ord(head[i]) + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000  # surrogates are not characters; the next one is
        if nxt <= 0x10FFFF:
            return head[:i] + chr(nxt)
    return None


class _Column:
    """The running statistics of one column (``footer``: its bounds come from the Parquet
    footer)."""

    __slots__ = ("bounded", "floats", "footer", "hi", "lo", "nulls", "seen")

    def __init__(self, bounded: bool, floats: str, footer: bool = False) -> None:
        self.bounded, self.floats, self.footer = bounded, floats, footer
        self.lo: Any = None
        self.hi: Any = None
        self.nulls = 0
        self.seen = False  # a non-null value was seen (lo/hi hold bounds)

    def update(self, column: pa.ChunkedArray | pa.Array) -> None:
        nulls = column.null_count
        self.nulls += nulls
        if not self.bounded or nulls == len(column):
            return
        if self.footer:
            self.seen = True
            return
        if self.floats == "zeros":
            if pc.any(pc.is_nan(column)).as_py():
                self.bounded = False
                return
            mm = pc.min_max(column)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
        elif self.floats == "total":
            lo, hi = column_bounds(column)
        else:
            mm = pc.min_max(column)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if not self.seen:
            self.lo, self.hi, self.seen = lo, hi, True
        elif self.floats == "total":
            self.lo = min(self.lo, lo, key=order_value)
            self.hi = max(self.hi, hi, key=order_value)
        else:
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)


class StatsCollector:
    """Accumulates the statistics of one file's columns over the chunks written to it.

    ``file_format`` (parquet, orc or avro) picks Paimon's rules for that format; ``None``
    (key statistics): every column in full, FLOAT/DOUBLE in Java's total order. ``names``
    (needed for Parquet): the columns' names in the file."""

    def __init__(
        self,
        types: Sequence[DataType],
        modes: Sequence[StatsMode] | None = None,
        file_format: str | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.types = list(types)
        #: the columns' names (the Parquet footer's string bounds are found by name)
        self.names = list(names) if names is not None else [""] * len(self.types)
        self.modes = list(modes) if modes is not None else [FULL] * len(self.types)
        self.file_format = file_format
        self.columns = [self._column(t, m) for t, m in zip(self.types, self.modes, strict=True)]

    def _column(self, t: DataType, mode: StatsMode) -> _Column:
        fmt = self.file_format
        root = t.root
        if root not in ("FLOAT", "DOUBLE"):
            floats = "plain"
        else:
            floats = "total" if fmt in (None, "avro") else "zeros"
        bounded = mode.kind in ("full", "truncate") and root not in _NESTED
        if fmt is not None:
            if root in _COUNT_ONLY or (root in _TIMESTAMPS and (t.precision or 0) > 6):
                bounded = False
            if fmt == "orc" and root in _TIMESTAMPS:
                bounded = False
        return _Column(bounded, floats, fmt == "parquet" and root in ("CHAR", "VARCHAR"))

    def update(self, columns: Sequence[pa.ChunkedArray | pa.Array]) -> None:
        """Add one chunk (its columns in the collector's order)."""
        for stats, column in zip(self.columns, columns, strict=True):
            stats.update(column)

    def result(self, footer: pq.FileMetaData | None = None) -> SimpleStats:
        """The statistics of every chunk added, as a manifest's ``SimpleStats``; ``footer``:
        the metadata of the Parquet file written (where string bounds are taken from)."""
        mins: list[Any] = []
        maxs: list[Any] = []
        nulls: list[int | None] = []
        for i, (t, mode, c) in enumerate(zip(self.types, self.modes, self.columns, strict=True)):
            if c.footer and c.bounded and c.seen:
                c.lo, c.hi = _footer_bounds(footer, self.names[i])
            lo, hi = (c.lo, c.hi) if c.bounded and c.seen else (None, None)
            if self.file_format in ("parquet", "orc") and isinstance(lo, float):
                lo = -0.0 if lo == 0.0 else lo
                hi = 0.0 if hi == 0.0 else hi
            if mode.kind == "truncate" and isinstance(lo, str):
                lo, hi = lo[: mode.length], _round_up(str(hi), mode.length)
                if hi is None:
                    lo = None
            mins.append(lo)
            maxs.append(hi)
            if mode.kind == "none" or (self.file_format == "parquet" and t.root in _NESTED):
                nulls.append(None)
            else:
                nulls.append(c.nulls)
        rows = binary_row.encode_rows(
            [
                pa.array([lo, hi], type=t.to_arrow())
                for lo, hi, t in zip(mins, maxs, self.types, strict=True)
            ],
            self.types,
        )
        arity = struct.pack(">i", len(self.types))
        return SimpleStats(arity + rows.row(0), arity + rows.row(1), tuple(nulls))


def _footer_bounds(footer: pq.FileMetaData | None, name: str) -> tuple[Any, Any]:
    """(min, max) of the top-level column ``name`` over a Parquet file's row groups; (None,
    None) when a row group holding values has no bounds (or there is no footer)."""
    if footer is None or footer.num_row_groups == 0:
        return None, None
    first = footer.row_group(0)
    index = next(
        (j for j in range(first.num_columns) if first.column(j).path_in_schema == name), None
    )
    if index is None:
        return None, None
    lo: Any = None
    hi: Any = None
    for g in range(footer.num_row_groups):
        group = footer.row_group(g)
        stats = group.column(index).statistics
        if stats is not None and stats.has_min_max:
            lo = stats.min if lo is None else min(lo, stats.min)
            hi = stats.max if hi is None else max(hi, stats.max)
        elif stats is None or stats.null_count < group.num_rows:
            return None, None
    return lo, hi
