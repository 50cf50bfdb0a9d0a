"""Floating-point keys as Paimon compares them: one canonical NaN and Java's total order.

Paimon orders FLOAT and DOUBLE keys and sequence fields with ``Float.compare`` /
``Double.compare`` (its generated record comparator since Paimon 2.0, and the normalized sort key
of its write buffer in every version): ``-inf < … < -0.0 < 0.0 < … < +inf < NaN``, and every NaN
is one value whatever its payload. Arrow and Python disagree on both points (``NaN != NaN`` and
``-0.0 == 0.0``), so lakeops never sorts, groups or compares a float key directly:

* :func:`canonical_nan` rewrites every NaN to Java's canonical ``Float.NaN`` / ``Double.NaN``
  bit pattern (what ``floatToIntBits`` / ``doubleToLongBits`` yield). Key columns are written
  that way and read back that way, so hash-based Arrow operations (``group_by``, joins,
  ``is_in``), which compare floats by their bits, see exactly Java's equality: one NaN, and
  ``-0.0`` distinct from ``0.0``. BinaryRows lakeops encodes (the bucket hash, file key bounds)
  carry the canonical bits too.
* :func:`total_order` maps a float array to unsigned integers whose natural order is Java's total
  order (the IEEE bits of the canonical value, sign-flipped as Paimon's ``SortUtil`` does for its
  normalized keys); sorting and neighbour comparison use it.
* :func:`order_value` is the same map for one Python value (key ranges decoded from metadata).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "CANONICAL_DOUBLE_NAN",
    "CANONICAL_FLOAT_NAN",
    "canonical_nan",
    "canonical_table",
    "is_floating",
    "order_value",
    "total_order",
]

#: Java's ``Double.doubleToLongBits(Double.NaN)``
CANONICAL_DOUBLE_NAN = 0x7FF8000000000000
#: Java's ``Float.floatToIntBits(Float.NaN)``
CANONICAL_FLOAT_NAN = 0x7FC00000

_WIDTH = {pa.float32(): (np.float32, np.uint32), pa.float64(): (np.float64, np.uint64)}


def is_floating(arrow_type: pa.DataType) -> bool:
    """Whether values of ``arrow_type`` need Java's float semantics (FLOAT or DOUBLE)."""
    return arrow_type in _WIDTH


def _bits(arr: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(IEEE bits with NaN canonical, null mask or None) of a float array."""
    ftype, utype = _WIDTH[arr.type]
    values = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(ftype, copy=False)
    bits = values.view(utype).copy()
    canonical = CANONICAL_FLOAT_NAN if ftype is np.float32 else CANONICAL_DOUBLE_NAN
    bits[np.isnan(values)] = utype(canonical)
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return bits, nulls


def _combined(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def canonical_nan(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``arr`` with every NaN replaced by Java's canonical NaN (non-float arrays unchanged;
    arrays without NaN returned as they are)."""
    if not is_floating(arr.type) or not pc.any(pc.is_nan(arr)).as_py():
        return arr
    flat = _combined(arr)
    bits, nulls = _bits(flat)
    ftype, _ = _WIDTH[flat.type]
    return pa.array(bits.view(ftype), type=flat.type, mask=nulls)


def canonical_table(table: pa.Table, columns: list[str] | tuple[str, ...]) -> pa.Table:
    """``table`` with the float columns among ``columns`` made NaN-canonical."""
    for name in columns:
        if name in table.column_names and is_floating(table.schema.field(name).type):
            col = table.column(name)
            fixed = canonical_nan(col)
            if fixed is not col:
                table = table.set_column(
                    table.schema.get_field_index(name), table.schema.field(name), fixed
                )
    return table


def total_order(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Unsigned integers ordered as Java's ``Float.compare`` / ``Double.compare`` orders ``arr``
    (equal exactly when Java says equal; nulls kept); non-float arrays are returned unchanged."""
    if not is_floating(arr.type):
        return arr
    flat = _combined(arr)
    bits, nulls = _bits(flat)
    utype = bits.dtype.type
    sign = utype(1) << utype(bits.dtype.itemsize * 8 - 1)
    negative = (bits & sign) != 0
    ordered = np.where(negative, ~bits, bits | sign)
    return pa.array(ordered, mask=nulls)


def order_value(value: Any) -> Any:
    """One Python value as :func:`total_order` maps it (floats become ints in Java's total
    order; FLOAT values widen exactly to double, so one map serves both); others unchanged."""
    if not isinstance(value, float):
        return value
    if value != value:
        bits = CANONICAL_DOUBLE_NAN
    else:
        bits = int(np.array(value, dtype=np.float64).view(np.uint64))
    return bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
