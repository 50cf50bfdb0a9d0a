"""Streaming k-way merge of sorted runs with bounded memory.

Each run yields key-sorted batches. Each round takes the smallest *last key* among the runs'
current batches as a watermark ``w``: every record with a key below ``w`` is already in memory
(later batches of every run start at or after ``w``), so those records are merged — sorted by
(key, sequence order) and folded by the merge engine — and emitted, while records at ``w`` wait.
Runs whose batch ends at ``w`` then load their next batch. Memory stays bounded by a batch per
run (more only while one key spans several batches of a run); output comes out in key order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.floats import total_order
from lakeops.merge import MergeEngine, sort_records
from lakeops.merge.ordering import sort_merge

__all__ = ["merge_runs"]


def _last_key(table: pa.Table, keys: Sequence[str]) -> tuple[pa.Scalar, ...]:
    """The last key of ``table``, float fields in Java's total order (``total_order``), as
    Arrow scalars of the key columns' types (compared through :func:`_values`)."""
    n = table.num_rows - 1
    return tuple(total_order(table.column(k).slice(n, 1))[0] for k in keys)


def _values(key: tuple[pa.Scalar, ...]) -> tuple[Any, ...]:
    """``key``'s Python values, which order as the key tuples do: a date, time or timestamp
    as its integer count of its unit (``as_py`` would make a nanosecond timestamp a pandas
    ``Timestamp``, or fail without pandas, and a nanosecond time a ``datetime.time`` without
    its nanoseconds)."""
    return tuple(v.value if pa.types.is_temporal(v.type) else v.as_py() for v in key)


def _below(table: pa.Table, keys: Sequence[str], bound: tuple[pa.Scalar, ...]) -> pa.Array:
    """Mask of rows whose key tuple is lexicographically below ``bound`` (a :func:`_last_key`),
    float fields compared in Java's total order. The bound is compared as the Arrow scalar it
    was cut from, of the column's own type: no value goes through Python and back."""
    result = None
    equal_so_far = None
    for k, scalar in zip(keys, bound, strict=True):
        col = total_order(table.column(k))
        lt = pc.less(col, scalar)
        term = lt if equal_so_far is None else pc.and_(equal_so_far, lt)
        result = term if result is None else pc.or_(result, term)
        eq = pc.equal(col, scalar)
        equal_so_far = eq if equal_so_far is None else pc.and_(equal_so_far, eq)
    assert result is not None
    return result


def _split_below(
    table: pa.Table, keys: Sequence[str], bound: tuple[pa.Scalar, ...]
) -> tuple[pa.Table, pa.Table]:
    """(rows below ``bound``, the other rows) of ``table``, each in its order. A run's batch is
    key-sorted, so the rows below are a prefix: both parts are then zero-copy slices. Where
    they are not (a run out of order) both parts are filtered, as a mask selects them."""
    mask = _below(table, keys, bound)
    count = int(pc.sum(mask).as_py() or 0)
    if mask.null_count == 0 and (count == 0 or pc.all(mask.slice(0, count)).as_py()):
        return table.slice(0, count), table.slice(count)
    return table.filter(mask), table.filter(pc.invert(mask))


def merge_runs(
    runs: Sequence[Iterator[pa.Table]],
    keys: Sequence[str],
    engine: MergeEngine | None,
    sequence_fields: Sequence[str] = (),
    descending: bool = False,
    *,
    finish: Callable[[pa.Table], pa.Table] | None = None,
) -> Iterator[pa.Table]:
    """Merged records (one per key) of several sorted runs, in key order, chunk by chunk.

    With ``engine=None`` the chunks are not merged: every record of their keys comes out,
    sorted by (key, sequence order), so a caller can merge them its own way. ``finish``: what
    comes out of each chunk instead — ``finish`` of every record of its keys, unsorted (a
    reader that merges, drops retractions and projects in one step)."""
    buffers: list[pa.Table | None] = [None] * len(runs)
    done = [False] * len(runs)

    def merge(parts: list[pa.Table]) -> pa.Table:
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        if finish is not None:
            return finish(table)
        if engine is None:
            return sort_records(table, keys, sequence_fields, descending)
        return sort_merge(table, keys, engine, sequence_fields, descending)

    for i in range(len(runs)):
        _load(runs, buffers, done, i)
    while True:
        active = [i for i in range(len(runs)) if not done[i]]
        if not active:
            rest = [b for b in buffers if b is not None and b.num_rows]
            if rest:
                yield merge(rest)
            return
        watermark = min((_last_key(buffers[i], keys) for i in active), key=_values)
        reached = _values(watermark)
        parts = _take_below(buffers, keys, watermark)
        if parts:
            yield merge(parts)
        for i in active:
            buf = buffers[i]
            if buf is None or buf.num_rows == 0 or _values(_last_key(buf, keys)) == reached:
                _load(runs, buffers, done, i)


def _load(
    runs: Sequence[Iterator[pa.Table]], buffers: list[pa.Table | None], done: list[bool], i: int
) -> None:
    """Append run ``i``'s next non-empty batch to its buffer, or mark the run done."""
    while not done[i]:
        try:
            batch = next(runs[i])
        except StopIteration:
            done[i] = True
            return
        if batch.num_rows:
            current = buffers[i]
            buffers[i] = (
                batch
                if current is None or current.num_rows == 0
                else pa.concat_tables([current, batch])
            )
            return


def _take_below(
    buffers: list[pa.Table | None], keys: Sequence[str], watermark: tuple[pa.Scalar, ...]
) -> list[pa.Table]:
    """Cut from every buffer its records below ``watermark`` (the non-empty parts)."""
    parts = []
    for i, buf in enumerate(buffers):
        if buf is None or buf.num_rows == 0:
            continue
        head, buffers[i] = _split_below(buf, keys, watermark)
        parts.append(head)
    return [p for p in parts if p.num_rows]
