"""Turning a key's state before and after a merge into changelog records — vectorised.

Given, per key, the merged row *before* (absent, live, or deleted) and *after*:

* absent/deleted → live: ``+I`` after;
* live → live: ``-U`` before then ``+U`` after — suppressed with
  ``changelog-producer.row-deduplicate`` when the two rows are equal (ignoring
  ``changelog-producer.row-deduplicate-ignore-fields``);
* live → deleted: ``-D`` before;
* first-row tables emit only ``+I`` for keys that had no row before.

Rows come out sorted by key, with ``-U`` before its ``+U``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.format.floats import total_order
from lakeops.format.kv import KIND, RowKind
from lakeops.merge.engine import is_retraction

__all__ = ["changelog_records"]

_SLOT = "__changelog_slot"
_HAS = "__had_before"
_SUFFIX = "__before"


def _equal(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Null-safe equality of two columns (floats as ``Double.compare`` sees them: NaN equals
    NaN, ``-0.0`` differs from ``0.0``, as Paimon's record equaliser compares them)."""
    eq = pc.equal(total_order(a), total_order(b)).fill_null(False)
    eq = eq.to_numpy(zero_copy_only=False).astype(bool)
    both_null = a.is_null().to_numpy(zero_copy_only=False) & b.is_null().to_numpy(
        zero_copy_only=False
    )
    result: np.ndarray = eq | both_null
    return result


def _inserts(after: pa.Table, schema: pa.Schema) -> pa.Table:
    """The changelog of keys that had no live row before: ``+I`` of each live row of
    ``after``, in its order (deleted keys produce nothing)."""
    alive = pc.invert(is_retraction(after.column(KIND)))
    if not pc.all(alive).as_py():
        after = after.filter(alive)
    if after.num_rows == 0:
        return schema.empty_table()
    kinds = pa.array(np.full(after.num_rows, RowKind.INSERT, dtype=np.int8))
    after = after.set_column(schema.names.index(KIND), pa.field(KIND, pa.int8(), False), kinds)
    return after.cast(schema)


def changelog_records(
    before: pa.Table | None,
    after: pa.Table,
    keys: Sequence[str],
    fields: Sequence[str],
    *,
    row_deduplicate: bool = False,
    ignore_fields: Sequence[str] = (),
    first_row: bool = False,
) -> pa.Table:
    """Changelog records (``after``'s schema) describing how each key of ``after`` changed.

    ``before`` holds one merged row per key that existed in the older state (any kind);
    ``after`` one merged row per key in the newer state.
    """
    schema = after.schema
    if after.num_rows == 0:
        return schema.empty_table()
    after = after.append_column("__after_pos", pa.array(np.arange(after.num_rows, dtype=np.int64)))
    if before is not None and before.num_rows:
        live_before = before.filter(pc.invert(is_retraction(before.column(KIND))))
    else:
        live_before = schema.empty_table()
    if live_before.num_rows == 0:  # every live key of ``after`` is new: +I, nothing else
        return _inserts(after.drop_columns(["__after_pos"]), schema)
    renamed = live_before.select(
        [*keys, *fields, *[c for c in schema.names if c not in keys and c not in fields]]
    )
    renamed = renamed.rename_columns(
        [c if c in keys else c + _SUFFIX for c in renamed.column_names]
    )
    renamed = renamed.append_column(_HAS, pa.array(np.ones(renamed.num_rows, dtype=bool)))
    joined = after.join(renamed, keys=list(keys), join_type="left outer").sort_by("__after_pos")
    had = joined.column(_HAS).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
    alive = ~is_retraction(joined.column(KIND)).to_numpy(zero_copy_only=False).astype(bool)
    inserts = alive & ~had
    if first_row:
        updates = np.zeros_like(had)
        deletes = np.zeros_like(had)
    else:
        updates = alive & had
        if row_deduplicate and updates.any():
            same = np.ones(len(had), dtype=bool)
            for f in fields:
                if f not in ignore_fields:
                    same &= _equal(joined.column(f), joined.column(f + _SUFFIX))
            updates &= ~same
        deletes = ~alive & had
    after_cols = schema.names
    before_cols = [c if c in keys else c + _SUFFIX for c in after_cols]
    parts = []

    def take(mask: np.ndarray, columns: list[str], kind: int, slot: int) -> None:
        if not mask.any():
            return
        rows = joined.filter(pa.array(mask)).select([*columns, "__after_pos"])
        rows = rows.rename_columns([*after_cols, "__after_pos"])
        kinds = pa.array(np.full(rows.num_rows, kind, dtype=np.int8))
        rows = rows.set_column(after_cols.index(KIND), pa.field(KIND, pa.int8(), False), kinds)
        rows = rows.append_column(_SLOT, pa.array(np.full(rows.num_rows, slot, dtype=np.int8)))
        parts.append(
            rows.cast(
                pa.schema(
                    [*schema, pa.field("__after_pos", pa.int64()), pa.field(_SLOT, pa.int8())]
                )
            )
        )

    take(inserts, after_cols, RowKind.INSERT, 1)
    take(updates, before_cols, RowKind.UPDATE_BEFORE, 0)
    take(updates, after_cols, RowKind.UPDATE_AFTER, 1)
    take(deletes, before_cols, RowKind.DELETE, 0)
    if not parts:
        return schema.empty_table()
    out = pa.concat_tables(parts).sort_by([("__after_pos", "ascending"), (_SLOT, "ascending")])
    return out.select(after_cols)
