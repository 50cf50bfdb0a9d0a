"""Vectorised per-key reductions over sorted records.

After sorting, the records of each key form a contiguous segment. :class:`Segments` answers the
questions merge engines ask about every segment at once — "the last row where this mask holds",
"the first", "any" — with numpy ``reduceat`` over the whole array, never a Python loop per key.
An index of ``-1`` means "no such row in this segment".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lakeops.format.kv import KIND

__all__ = ["Segments", "build_rows", "rows_of", "take_or_null"]


@dataclass
class Segments:
    """Key segments of ``n`` sorted rows, given by their start indices."""

    starts: np.ndarray
    n: int
    _ids: np.ndarray | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        """Number of segments (keys)."""
        return len(self.starts)

    @property
    def ends(self) -> np.ndarray:
        """Index of the last row of every segment."""
        return np.append(self.starts[1:], self.n) - 1

    @property
    def ids(self) -> np.ndarray:
        """Segment number of every row."""
        if self._ids is None:
            lengths = np.diff(np.append(self.starts, self.n))
            self._ids = np.repeat(np.arange(self.count, dtype=np.int64), lengths)
        return self._ids

    def last_index(self, mask: np.ndarray) -> np.ndarray:
        """Per segment, the last row index where ``mask`` holds (-1 if none)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int64)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), -1)
        return np.maximum.reduceat(idx, self.starts)

    def first_index(self, mask: np.ndarray) -> np.ndarray:
        """Per segment, the first row index where ``mask`` holds (-1 if none)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int64)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), self.n)
        first = np.minimum.reduceat(idx, self.starts)
        return np.where(first == self.n, -1, first)

    def any(self, mask: np.ndarray) -> np.ndarray:
        """Per segment, whether ``mask`` holds for some row."""
        return self.last_index(mask) >= 0

    def after(self, cutoff: np.ndarray) -> np.ndarray:
        """Row mask: rows after their segment's ``cutoff`` index (-1 keeps the whole segment)."""
        result: np.ndarray = np.arange(self.n, dtype=np.int64) > cutoff[self.ids]
        return result

    def running_max_before(self, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """For every row, the max of ``values`` over earlier rows of its segment where ``mask``
        holds (-1 if none). ``values`` must be non-negative integers."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int64)
        v = np.where(mask, values.astype(np.int64), -1)
        width = int(v.max(initial=0)) + 2
        # offset each segment above all earlier ones, so one cumulative max resets per segment
        shifted = v + 1 + self.ids * width
        running = np.maximum.accumulate(shifted)
        before = np.concatenate(([0], running[:-1]))
        before[self.starts] = self.ids[self.starts] * width  # nothing before a segment's start
        result: np.ndarray = before - self.ids * width - 1
        return result


def take_or_null(values: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` with null wherever ``idx`` is -1."""
    indices = pa.array(np.where(idx < 0, 0, idx), mask=idx < 0, type=pa.int64())
    out = values.take(indices)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def rows_of(index: np.ndarray, n: int) -> np.ndarray:
    """Mask of ``n`` rows with the non-negative entries of ``index`` set."""
    mask = np.zeros(n, dtype=bool)
    mask[index[index >= 0]] = True
    return mask


def build_rows(
    records: pa.Table, seg: Segments, values: dict[str, pa.Array], kinds: np.ndarray
) -> pa.Table:
    """One row per segment: the computed ``values``, other columns from the segment's last
    record (keys, sequence number), and the given kinds."""
    last = records.take(pa.array(seg.ends))
    for name, column in values.items():
        idx = last.column_names.index(name)
        last = last.set_column(idx, last.schema.field(idx), column)
    idx = last.column_names.index(KIND)
    return last.set_column(idx, last.schema.field(idx), pa.array(kinds, type=pa.int8()))
