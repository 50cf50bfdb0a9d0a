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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.data_file import SimpleStats
from lakeops.format.floats import is_floating, order_value, total_order
from lakeops.format.types import DataType
from lakeops.options.rows_ignorable import FIELD_STATS_MODE, METADATA_STATS_MODE

__all__ = [
    "FileBounds",
    "StatsCollector",
    "StatsMode",
    "collectors_of_runs",
    "column_bounds",
    "encode_stats",
    "key_stats_of_runs",
    "stats_modes",
]

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
        return encode_stats([self.bounds(footer)], self.types)[0]

    def bounds(self, footer: pq.FileMetaData | None = None) -> FileBounds:
        """What :meth:`result` encodes: each column's min and max (Python values, None where
        none is kept) and null count (None where none is kept)."""
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
        return FileBounds(mins, maxs, tuple(nulls))


@dataclass(frozen=True)
class FileBounds:
    """One file's statistics before encoding (:meth:`StatsCollector.bounds`)."""

    mins: list[Any]
    maxs: list[Any]
    nulls: tuple[int | None, ...]


def encode_stats(files: Sequence[FileBounds], types: Sequence[DataType]) -> list[SimpleStats]:
    """The ``SimpleStats`` of many files' bounds (columns of ``types``), each what
    :meth:`StatsCollector.result` gives for it: every file's min row and max row encoded in
    one BinaryRow encode each."""
    if not files:
        return []
    arrow_types = [t.to_arrow() for t in types]
    lows = [pa.array([f.mins[j] for f in files], type=a) for j, a in enumerate(arrow_types)]
    highs = [pa.array([f.maxs[j] for f in files], type=a) for j, a in enumerate(arrow_types)]
    if types:
        low_rows = binary_row.serialize_rows(lows, types)
        high_rows = binary_row.serialize_rows(highs, types)
    else:  # no columns: an empty row each
        low_rows = high_rows = [struct.pack(">i", 0) + bytes(8)] * len(files)
    return [
        SimpleStats(low, high, f.nulls)
        for low, high, f in zip(low_rows, high_rows, files, strict=True)
    ]


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


def _run_bounds(column: pa.Array, runs: pa.Array, count: int) -> tuple[pa.Array, pa.Array]:
    """(min, max) of each run's non-null values of a column of plain order (null where a run
    has none), every run at once: a hash aggregation by run, its groups put back in run
    order."""
    bounds = (
        pa.table({"run": runs, "value": column})
        .group_by("run", use_threads=False)
        .aggregate([("value", "min_max")])
    )
    order = np.empty(count, dtype=np.int64)
    order[bounds.column("run").to_numpy()] = np.arange(count, dtype=np.int64)
    both = bounds.column("value_min_max").combine_chunks().take(pa.array(order))
    return both.field("min"), both.field("max")


def _runs(offsets: Any) -> tuple[np.ndarray, int, pa.Array]:
    """``offsets`` as int64, the number of runs they bound and each row's run number; a run
    without rows is a ValueError."""
    bounds = np.asarray(offsets, dtype=np.int64)
    count = max(len(bounds) - 1, 0)
    lengths = np.diff(bounds)
    if np.any(lengths <= 0):
        raise ValueError("every run of a file must hold rows")
    return bounds, count, pa.array(np.repeat(np.arange(count, dtype=np.int32), lengths))


def key_stats_of_runs(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    offsets: np.ndarray,
) -> list[SimpleStats]:
    """The key statistics of many files at once: entry ``i`` is what a
    :class:`StatsCollector` of ``types`` (no file format: every column in full) gives after
    one :meth:`~StatsCollector.update` with the rows ``offsets[i]`` to ``offsets[i + 1]`` of
    ``columns`` (each run non-empty) — the same bounds, null counts and bytes. Columns of
    plain order are bounded per run by one hash aggregation each and every run's bounds are
    encoded in one pass; FLOAT/DOUBLE columns (Java's total order) and any type the
    aggregation does not support are bounded run by run as the collector does."""
    offsets, count, runs = _runs(offsets)
    if count == 0:
        return []
    lengths = np.diff(offsets)
    starts = offsets[:-1]
    mins: list[pa.Array] = []
    maxs: list[pa.Array] = []
    nulls: list[list[int]] = []
    for column, t in zip(columns, types, strict=True):
        flat = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        arrow_type = t.to_arrow()
        if flat.null_count:
            mask = flat.is_null().to_numpy(zero_copy_only=False).astype(np.int64)
            nulls.append(np.add.reduceat(mask, starts).tolist())
        else:
            nulls.append([0] * count)
        if t.root in _NESTED:  # no bounds (nor can the row hold such a value)
            mins.append(pa.nulls(count, arrow_type))
            maxs.append(pa.nulls(count, arrow_type))
            continue
        lo: pa.Array | None = None
        hi: pa.Array | None = None
        if not is_floating(flat.type):
            try:
                lo, hi = _run_bounds(flat, runs, count)
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
                lo = hi = None
        if lo is None or hi is None:  # run by run, as the collector bounds one chunk
            pairs = [
                column_bounds(flat.slice(int(a), int(n))) if n > int(nulls_n) else (None, None)
                for a, n, nulls_n in zip(starts, lengths, nulls[-1], strict=True)
            ]
            lo = pa.array([p[0] for p in pairs], type=arrow_type)
            hi = pa.array([p[1] for p in pairs], type=arrow_type)
        mins.append(lo.cast(arrow_type) if lo.type != arrow_type else lo)
        maxs.append(hi.cast(arrow_type) if hi.type != arrow_type else hi)
    low_rows = binary_row.serialize_rows(mins, types)
    high_rows = binary_row.serialize_rows(maxs, types)
    null_counts = list(zip(*nulls, strict=True))
    return [
        SimpleStats(low, high, tuple(counts))
        for low, high, counts in zip(low_rows, high_rows, null_counts, strict=True)
    ]


def collectors_of_runs(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    offsets: np.ndarray,
    types: Sequence[DataType],
    modes: Sequence[StatsMode] | None = None,
    file_format: str | None = None,
    names: Sequence[str] | None = None,
) -> list[StatsCollector]:
    """One :class:`StatsCollector` (of ``types``, ``modes``, ``file_format`` and ``names``)
    per run of rows — run ``i`` is rows ``offsets[i]`` to ``offsets[i + 1]`` of ``columns``,
    each run non-empty — in the state one :meth:`~StatsCollector.update` with that run leaves
    it in, computed a column at a time for every run: null counts by one reduction, bounds of
    columns of plain order by one hash aggregation; FLOAT/DOUBLE bounds and types the
    aggregation does not support are taken run by run, as the collector takes them."""
    offsets, count, runs = _runs(offsets)
    if count == 0:
        return []
    lengths = np.diff(offsets)
    collectors = [StatsCollector(types, modes, file_format, names) for _ in range(count)]
    starts = offsets[:-1]
    for j, column in enumerate(columns):
        flat = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        template = collectors[0].columns[j]
        if flat.null_count:
            mask = flat.is_null().to_numpy(zero_copy_only=False).astype(np.int64)
            nulls = np.add.reduceat(mask, starts)
        else:
            nulls = np.zeros(count, dtype=np.int64)
        valued = (nulls < lengths).tolist()
        for c, n in zip(collectors, nulls.tolist(), strict=True):
            c.columns[j].nulls = n
        if not template.bounded:
            continue
        if template.footer:  # the bounds come from the file's footer
            for c, has in zip(collectors, valued, strict=True):
                c.columns[j].seen = has
            continue
        lo, hi, unbounded = _bounds_of_runs(flat, template.floats, runs, offsets, valued)
        for c, has, nan_run, low_value, high_value in zip(
            collectors, valued, unbounded, lo, hi, strict=True
        ):
            state = c.columns[j]
            if nan_run:
                state.bounded = False
            elif has:
                state.lo, state.hi, state.seen = low_value, high_value, True
    return collectors


def _bounds_of_runs(
    flat: pa.Array, floats: str, runs: pa.Array, offsets: np.ndarray, valued: list[bool]
) -> tuple[list[Any], list[Any], list[bool]]:
    """Per run of ``flat``: (min, max, whether a NaN leaves it unbounded), as
    :meth:`_Column.update` takes them from a chunk (``floats``: its FLOAT/DOUBLE rule;
    ``valued``: which runs hold a non-null value)."""
    count = len(offsets) - 1
    starts, lengths = offsets[:-1], np.diff(offsets)
    unbounded = [False] * count
    if floats == "zeros":  # a run holding NaN keeps no bounds
        nan = pc.fill_null(pc.is_nan(flat), False).to_numpy(zero_copy_only=False)
        unbounded = (np.add.reduceat(nan.astype(np.int64), starts) > 0).tolist()
    if floats != "total":
        try:
            low, high = _run_bounds(flat, runs, count)
            return low.to_pylist(), high.to_pylist(), unbounded
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # run by run, below
    pairs = [
        _chunk_bounds(flat.slice(int(a), int(n)), floats) if has and not nan_run else (None, None)
        for a, n, has, nan_run in zip(starts, lengths, valued, unbounded, strict=True)
    ]
    return [p[0] for p in pairs], [p[1] for p in pairs], unbounded


def _chunk_bounds(column: pa.Array, floats: str) -> tuple[Any, Any]:
    """(min, max) of a chunk with values, as :meth:`_Column.update` takes them."""
    if floats == "total":
        return column_bounds(column)
    mm = pc.min_max(column)
    return mm["min"].as_py(), mm["max"].as_py()
