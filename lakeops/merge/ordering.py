"""Ordering of records for one key, and key-group boundaries — vectorised.

Records are ordered by key, then by ``sequence.field`` (left to right; values inverted for
``sequence.field.sort-order=descending``, but a NULL sequence value sorts first — it loses —
in both orders, as Paimon's generated comparator has it: ``nullIsLast=false`` and the order's
sign applied only to two non-null values), then by the system sequence number. FLOAT/DOUBLE keys
and sequence fields sort and compare in Java's total order (``Double.compare``: one NaN, the
greatest value; ``-0.0 < 0.0``). After sorting, each key is a contiguous *group*;
:func:`group_starts` finds them by comparing neighbours, without any per-row Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.floats import total_order
from lakeops.format.kv import SEQ

if TYPE_CHECKING:
    from lakeops.merge.engine import MergeEngine

__all__ = [
    "group_starts",
    "key_order",
    "merge_sorted",
    "merged_order",
    "sort_merge",
    "sort_records",
]


def sort_records(
    records: pa.Table,
    key_columns: Sequence[str],
    sequence_fields: Sequence[str] = (),
    descending: bool = False,
) -> pa.Table:
    """Sort by (key, sequence fields, sequence number), stably."""
    return records.take(_record_order(records, key_columns, sequence_fields, descending)[0])


def _record_order(
    records: pa.Table,
    key_columns: Sequence[str],
    sequence_fields: Sequence[str],
    descending: bool,
) -> tuple[pa.Array, pa.Table]:
    """(indices that sort ``records`` as :func:`sort_records` does, the orderable columns they
    were computed from)."""
    # a null sequence value sorts first (loses) in both orders, as in Paimon
    order, nulls = ("descending" if descending else "ascending"), "at_start"
    keys = [(k, "ascending") for k in key_columns]
    keys += [(f, order) for f in sequence_fields]
    if not _ascending(records.column(SEQ)):
        # the sort is stable: where the sequence numbers already ascend in row order (a
        # writer's buffer), ties keep that order without the extra sort key
        keys.append((SEQ, "ascending"))
    orderable = _orderable(records, [k for k, _ in keys])
    return _sort_indices(orderable, keys, nulls), orderable


def _ascending(values: pa.ChunkedArray | pa.Array) -> bool:
    """Whether ``values`` (int64, no nulls) never decrease in row order."""
    numbers = np.asarray(values.to_numpy(), dtype=np.int64)
    return bool(np.all(numbers[1:] >= numbers[:-1]))


def sort_merge(
    records: pa.Table,
    key_columns: Sequence[str],
    engine: MergeEngine,
    sequence_fields: Sequence[str] = (),
    descending: bool = False,
    levels: np.ndarray | None = None,
) -> pa.Table:
    """``merge_sorted(sort_records(records, ...), key_columns, engine)``, with one take of the
    records instead of two when the engine keeps one record per key as it is
    (:meth:`MergeEngine.pick`): the groups are found on the sorted key columns alone.
    ``levels``: each record's level; a key's records on levels above 0 deeper than its
    lowest one are left out (:func:`current_levels`)."""
    order, indices, starts = _merge_order(
        records, key_columns, engine, sequence_fields, descending, levels
    )
    if order is not None:
        return records.take(order)
    return merge_groups(records.take(indices), starts, engine)


def merged_order(
    records: pa.Table,
    key_columns: Sequence[str],
    engine: MergeEngine,
    sequence_fields: Sequence[str] = (),
    descending: bool = False,
    levels: np.ndarray | None = None,
) -> pa.Array | None:
    """Where the engine keeps one record of each key as it is (or every key is distinct): the
    indices of ``records`` that :func:`sort_merge` returns, in its order, so that a caller can
    take just the columns it needs, once; None where the engine computes its merged rows.
    ``levels``: as :func:`sort_merge` takes them."""
    return _merge_order(records, key_columns, engine, sequence_fields, descending, levels)[0]


def _merge_order(
    records: pa.Table,
    key_columns: Sequence[str],
    engine: MergeEngine,
    sequence_fields: Sequence[str],
    descending: bool,
    levels: np.ndarray | None = None,
) -> tuple[pa.Array | None, pa.Array, np.ndarray]:
    """(the merged records' indices where the engine picks, else None; the sorting indices;
    the key groups' starts in the sorted order)."""
    indices, orderable = _record_order(records, key_columns, sequence_fields, descending)
    n = records.num_rows
    keys = orderable.select(list(dict.fromkeys(key_columns))).take(indices)
    starts = group_starts(keys, key_columns)
    if levels is not None and len(starts) < n:
        keep = current_levels(np.asarray(levels)[indices.to_numpy()], starts)
        if keep is not None:
            # every key keeps a record: the groups' starts are counted in the kept rows
            indices = indices.filter(pa.array(keep))
            kept_before = np.concatenate(([0], np.cumsum(keep)[:-1]))
            starts = kept_before[starts]
            n = len(indices)
    if len(starts) == n:
        return indices, indices, starts
    picked = engine.pick(starts, n)
    if picked is None:
        return None, indices, starts
    return indices.take(pa.array(picked)), indices, starts


def key_order(records: pa.Table, key_columns: Sequence[str]) -> pa.Array:
    """Indices that sort ``records`` by ``key_columns`` alone (floats in Java's order)."""
    return _sort_indices(
        _orderable(records, key_columns), [(k, "ascending") for k in key_columns], "at_start"
    )


def _orderable(records: pa.Table, columns: Sequence[str]) -> pa.Table:
    """The ``columns`` of ``records``, float ones replaced by their Java total order (NaN one
    value, greatest; ``-0.0 < 0.0``: :func:`lakeops.format.floats.total_order`)."""
    names = list(dict.fromkeys(columns))
    return pa.table([total_order(records.column(c)) for c in names], names=names)


def _sort_indices(records: pa.Table, keys: list[tuple[str, str]], nulls: str) -> pa.Array:
    """``sort_indices`` with one null placement (per-key on pyarrow >= 25, global before)."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(records, sort_keys=[(k, o, nulls) for k, o in keys])
    return pc.sort_indices(records, sort_keys=keys, null_placement=nulls)


_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25


def current_levels(levels: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """Of key-sorted records with these ``levels`` and key groups starting at ``starts``, which
    Paimon's lookup merge keeps (:mod:`lakeops.merge.lookup_view`): every level-0 record and,
    above level 0, only each key's record on its lowest level; None when that is every one."""
    levels = np.asarray(levels, dtype=np.int64)
    upper = levels > 0
    if np.count_nonzero(upper) < 2:
        return None
    rank = np.where(upper, levels, np.iinfo(np.int64).max)
    sizes = np.diff(np.append(starts, len(levels)))
    lowest = np.repeat(np.minimum.reduceat(rank, starts), sizes)
    keep = ~upper | (levels == lowest)
    return None if keep.all() else keep


def group_starts(records: pa.Table, key_columns: Sequence[str]) -> np.ndarray:
    """Start index of each run of equal keys in a key-sorted table (int64 array)."""
    n = records.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n - 1, dtype=bool)
    for k in key_columns:
        col = total_order(records.column(k))
        neq = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        change |= neq.to_numpy(zero_copy_only=False).astype(bool, copy=False)
    return np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)


def merge_sorted(records: pa.Table, key_columns: Sequence[str], engine: MergeEngine) -> pa.Table:
    """Merge a sorted table to one row per key (see :func:`merge_groups`)."""
    return merge_groups(records, group_starts(records, key_columns), engine)


def merge_groups(records: pa.Table, starts: np.ndarray, engine: MergeEngine) -> pa.Table:
    """One row per key group, in key order. Keys with a single record pass through untouched
    (no merge function runs, as in Paimon: a lone ``-D`` stays ``-D``); the engine merges the
    others in one vectorised call."""
    n = records.num_rows
    if len(starts) == n:
        return records
    sizes = np.diff(np.append(starts, n))
    multi = sizes > 1
    if multi.all():
        return engine.merge(records, starts)
    in_multi = np.repeat(multi, sizes)
    merged = engine.merge(
        records.filter(pa.array(in_multi)), np.concatenate(([0], np.cumsum(sizes[multi])[:-1]))
    )
    singles = records.filter(pa.array(~in_multi))
    # interleave back into key order: multi groups first in the concatenation, then singles
    position = np.empty(len(starts), dtype=np.int64)
    position[multi] = np.arange(int(multi.sum()))
    position[~multi] = int(multi.sum()) + np.arange(int((~multi).sum()))
    combined = pa.concat_tables([merged, singles.cast(merged.schema)])
    return combined.take(pa.array(position))


def as_table(batches: Sequence[pa.Table]) -> pa.Table:
    """Concatenate tables with one schema into one table."""
    return batches[0] if len(batches) == 1 else pa.concat_tables(batches)
