"""Paimon's BinaryRow codec: vectorised encoding of many rows, scalar decoding of one.

Layout of one row (all offsets relative to the row start, little-endian values):

* a null-bit region of ``((arity + 63 + 8) // 64) * 8`` bytes; byte 0 holds the row kind and bit
  ``i + 8`` is set when field ``i`` is null;
* one 8-byte slot per field: fixed-width values (BOOLEAN … DOUBLE, DATE, DECIMAL with precision
  ≤ 18 as its unscaled long, TIMESTAMP with precision ≤ 3 as epoch millis), strings/bytes of at most
  7 bytes inline (``0x80 | len`` in the slot's last byte), otherwise ``offset << 32 | length``
  pointing into the variable part;
* the variable part: long strings/bytes padded to 8 bytes, non-compact DECIMAL (16 bytes reserved
  for the big-endian two's-complement unscaled value), non-compact TIMESTAMP (8 bytes of epoch
  millis; the slot holds ``offset << 32 | nano-of-millisecond``).

Manifests store rows *serialized*: a 4-byte big-endian arity, then the row (:func:`serialize`).
Bucket hashing uses the row bytes without that prefix (:mod:`lakeops.format.bucket_hash`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.floats import canonical_nan
from lakeops.format.types import DataType

__all__ = [
    "EncodedRows",
    "decode",
    "decode_internal",
    "deserialize",
    "deserialize_internal",
    "encode_rows",
    "null_bits_size",
    "serialize",
    "serialize_rows",
]

_EPOCH = dt.date(1970, 1, 1)
_EPOCH_DT = dt.datetime(1970, 1, 1)
#: a little more than the span of int64 nanoseconds since the epoch (what pandas' and Arrow's
#: nanosecond timestamps hold): outside it a value is never one of theirs
_NANOSECOND_SPAN = (dt.datetime(1677, 9, 21), dt.datetime(2262, 4, 12))
#: types whose values lakeops never encodes in a BinaryRow (a null of them is: statistics)
_NESTED = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT"})


def null_bits_size(arity: int) -> int:
    """Size in bytes of the header + null-bit region of a row with ``arity`` fields."""
    return ((arity + 63 + 8) // 64) * 8


@dataclass(frozen=True)
class EncodedRows:
    """Many BinaryRows in one buffer: row ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``.

    Every row starts at a multiple of 8 bytes, so the buffer can be viewed as 32-bit words.
    """

    buffer: np.ndarray  # uint8
    offsets: np.ndarray  # int64, length n + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> bytes:
        """The bytes of row ``i`` (without the arity prefix)."""
        return self.buffer[self.offsets[i] : self.offsets[i + 1]].tobytes()


def _scatter(
    buf: np.ndarray, data: np.ndarray, src: np.ndarray, lengths: np.ndarray, dst: np.ndarray
) -> None:
    """Copy ``data[src[k]:src[k]+lengths[k]]`` to ``buf[dst[k]:…]`` for every k, vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return
    starts = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
    buf[np.repeat(dst, lengths) + within] = data[np.repeat(src, lengths) + within]


def _varlen_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, start offsets, lengths) of a string/binary array; nulls have length 0."""
    if not (pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)):
        arr = arr.cast(
            pa.large_binary()
            if pa.types.is_binary(arr.type) or pa.types.is_binary_view(arr.type)
            else pa.large_string()
        )
    bufs = arr.buffers()
    n = len(arr)
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths = np.where(arr.is_null().to_numpy(zero_copy_only=False), 0, lengths)
    return data, offsets[:-1].astype(np.int64), lengths.astype(np.int64)


def _fixed_slots(arr: pa.Array, t: DataType) -> np.ndarray:
    """The 8-byte slot of each value of a fixed-width field, as uint64 (nulls -> 0)."""
    r = t.root
    if r == "BOOLEAN":
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint64)
    elif r in ("TINYINT", "SMALLINT", "INT", "DATE", "TIME"):
        if r in ("DATE", "TIME"):  # epoch day / millisecond of the day, as Paimon's int
            arr = arr.cast(pa.int32())
        width = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "DATE": 32, "TIME": 32}[r]
        v = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        vals = (v & ((1 << width) - 1)).astype(np.uint64)
    elif r == "BIGINT":
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
    elif r == "FLOAT":  # NaN as Java's canonical Float.NaN (lakeops.format.floats)
        f = canonical_nan(arr.cast(pa.float32())).fill_null(0).to_numpy(zero_copy_only=False)
        vals = f.astype(np.float32).view(np.uint32).astype(np.uint64)
    elif r == "DOUBLE":
        d = canonical_nan(arr.cast(pa.float64())).fill_null(0).to_numpy(zero_copy_only=False)
        vals = d.astype(np.float64).view(np.uint64)
    elif r == "DECIMAL":
        arr = arr.cast(pa.decimal128(t.precision or 10, t.scale or 0))
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64)
        low = words[2 * arr.offset : 2 * (arr.offset + len(arr))][0::2]
        vals = low.view(np.uint64).copy()
    else:  # compact TIMESTAMP: epoch millis
        vals = _timestamp_parts(arr)[0].view(np.uint64)
    if arr.null_count:
        vals = np.where(arr.is_null().to_numpy(zero_copy_only=False), np.uint64(0), vals)
    result: np.ndarray = vals.astype(np.uint64)
    return result


def _timestamp_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(epoch millis, nano-of-millisecond) of a timestamp array; nulls as 0."""
    unit = arr.type.unit
    v = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    per_milli = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
    if per_milli is None:
        return v * 1000, np.zeros_like(v)
    millis = np.floor_divide(v, per_milli)
    nanos = (v - millis * per_milli) * (1_000_000 // per_milli)
    return millis, nanos


def encode_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
) -> EncodedRows:
    """Encode ``n`` rows given column-wise as BinaryRows, vectorised over the whole columns."""
    cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    arity = len(types)
    n = len(cols[0]) if cols else 0
    nb = null_bits_size(arity)
    fixed = nb + 8 * arity
    var_sizes, varlen = _variable_parts(cols, types, n)
    sizes = fixed + (np.sum(var_sizes, axis=0) if var_sizes else np.zeros(n, np.int64))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    buf = np.zeros(int(offsets[-1]), dtype=np.uint8)
    words = buf.view(np.uint64)
    starts = offsets[:-1]
    _write_null_bits(words, starts, cols, n, nb)
    cursor = starts + fixed  # where each row's next variable-length value goes
    for i, (arr, t) in enumerate(zip(cols, types, strict=True)):
        slot = starts + nb + 8 * i
        if t.is_string or t.is_binary:
            _write_varlen(buf, words, arr, varlen[i], slot, starts, cursor)
        elif t.root in _NESTED:
            continue  # null (checked above): the null bit and a zero slot
        elif t.fixed_width is not None:
            words[slot // 8] = _fixed_slots(arr, t)
            continue
        elif t.root == "DECIMAL":
            _write_wide_decimals(buf, words, arr, t, slot, starts, cursor)
        else:
            _write_wide_timestamps(words, arr, slot, starts, cursor)
        cursor = cursor + var_sizes[i]
    return EncodedRows(buf, offsets)


def _variable_parts(
    cols: Sequence[pa.Array], types: Sequence[DataType], n: int
) -> tuple[list[np.ndarray], dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Per field, the bytes each row's value takes in the variable part, and the (data,
    sources, lengths) of the string/binary fields."""
    var_sizes: list[np.ndarray] = []
    varlen: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for i, (arr, t) in enumerate(zip(cols, types, strict=True)):
        if t.is_string or t.is_binary:
            parts = _varlen_parts(arr)
            varlen[i] = parts
            lengths = parts[2]
            var_sizes.append(np.where(lengths > 7, (lengths + 7) // 8 * 8, 0))
        elif t.root in _NESTED:
            if arr.null_count != len(arr):
                raise ValueError(f"a {t.root} value cannot be encoded in a BinaryRow (only null)")
            var_sizes.append(np.zeros(n, dtype=np.int64))
        elif t.fixed_width is None:  # non-compact decimal / timestamp
            # reserved even for nulls, whose slot still points at the reserved bytes (as Java)
            var_sizes.append(np.full(n, 16 if t.root == "DECIMAL" else 8, dtype=np.int64))
        else:
            var_sizes.append(np.zeros(n, dtype=np.int64))
    return var_sizes, varlen


def _write_null_bits(
    words: np.ndarray, starts: np.ndarray, cols: Sequence[pa.Array], n: int, nb: int
) -> None:
    """Each row's header: the null bit of every null field (bit ``8 + i`` of field ``i``)."""
    header = np.zeros((n, nb // 8), dtype=np.uint64)
    for i, arr in enumerate(cols):
        if arr.null_count:
            bit = i + 8
            mask = arr.is_null().to_numpy(zero_copy_only=False).astype(np.uint64)
            header[:, bit // 64] |= mask << np.uint64(bit % 64)
    for w in range(nb // 8):
        words[starts // 8 + w] = header[:, w]


def _write_varlen(
    buf: np.ndarray,
    words: np.ndarray,
    arr: pa.Array,
    parts: tuple[np.ndarray, np.ndarray, np.ndarray],
    slot: np.ndarray,
    starts: np.ndarray,
    cursor: np.ndarray,
) -> None:
    """A string/binary field: up to 7 bytes inline in the slot (length in its top byte), longer
    values at ``cursor`` with (offset, length) in the slot."""
    data, src, lengths = parts
    inline = lengths <= 7
    if inline.any():
        _scatter(buf, data, src[inline], lengths[inline], slot[inline])
        marks = (0x80 | lengths[inline]).astype(np.uint8)
        if arr.null_count:
            marks = np.where(
                arr.is_null().to_numpy(zero_copy_only=False)[inline], np.uint8(0), marks
            )
        buf[slot[inline] + 7] = marks
    long = ~inline
    if long.any():
        _scatter(buf, data, src[long], lengths[long], cursor[long])
        words[slot[long] // 8] = (
            (cursor[long] - starts[long]).astype(np.uint64) << np.uint64(32)
        ) | lengths[long].astype(np.uint64)


def _write_wide_decimals(
    buf: np.ndarray,
    words: np.ndarray,
    arr: pa.Array,
    t: DataType,
    slot: np.ndarray,
    starts: np.ndarray,
    cursor: np.ndarray,
) -> None:
    """A non-compact decimal field: Java's BigInteger bytes at ``cursor``, (offset, length) in
    the slot (a null keeps its offset). Rare in keys, so a per-value loop is fine."""
    for r, value in enumerate(arr.to_pylist()):
        rel = int(cursor[r] - starts[r]) << 32
        if value is None:
            words[slot[r] // 8] = np.uint64(rel)
            continue
        raw = _java_big_integer_bytes(_unscaled(value, t.scale or 0))
        pos = int(cursor[r])
        buf[pos : pos + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        words[slot[r] // 8] = np.uint64(rel | len(raw))


def _write_wide_timestamps(
    words: np.ndarray, arr: pa.Array, slot: np.ndarray, starts: np.ndarray, cursor: np.ndarray
) -> None:
    """A non-compact timestamp field: the milliseconds at ``cursor``, (offset, nanos of the
    millisecond) in the slot (a null keeps its offset)."""
    millis, nanos = _timestamp_parts(arr)
    valid = ~arr.is_null().to_numpy(zero_copy_only=False)
    offsets_hi = (cursor - starts).astype(np.uint64) << np.uint64(32)
    words[cursor[valid] // 8] = millis[valid].view(np.uint64)
    words[slot // 8] = np.where(valid, offsets_hi | nanos.astype(np.uint64), offsets_hi)


def _unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at ``scale``, exact for 38 digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        return int(value.scaleb(scale))


def _java_big_integer_bytes(value: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    length = (value + (value < 0)).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


def serialize(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """One row of Python values as manifest bytes: 4-byte big-endian arity + BinaryRow."""
    columns = [pa.array([v], type=t.to_arrow()) for v, t in zip(values, types, strict=True)]
    body = encode_rows(columns, types).row(0) if types else bytes(8)
    return struct.pack(">i", len(types)) + body


def serialize_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]
) -> list[bytes]:
    """Many rows given column-wise as manifest bytes, one :func:`serialize` result per row,
    encoded in one vectorised pass: row ``i`` holds ``columns[j][i]`` for every field ``j``
    (each column of its field's Arrow type, :meth:`DataType.to_arrow`). A row's bytes are
    those :func:`serialize` gives the row's values as Python objects."""
    prefix = struct.pack(">i", len(types))
    if not types:
        raise ValueError("serialize_rows needs at least one field (the row count is unknown)")
    rows = encode_rows(columns, types)
    data = rows.buffer.tobytes()
    bounds = rows.offsets.tolist()
    return [prefix + data[lo:hi] for lo, hi in itertools.pairwise(bounds)]


def deserialize(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """Inverse of :func:`serialize` (checks the arity prefix)."""
    return decode(_checked_body(data, types), types)


def deserialize_internal(data: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """:func:`deserialize` into Paimon's internal values (see :func:`decode_internal`)."""
    return decode(_checked_body(data, types), types, internal=True)


def _checked_body(data: bytes, types: Sequence[DataType]) -> bytes:
    """The row bytes after a serialized BinaryRow's arity prefix, once the prefix matches."""
    if len(data) < 4:
        raise CorruptTableError(f"serialized BinaryRow too short ({len(data)} bytes)")
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity != len(types):
        raise CorruptTableError(f"BinaryRow has arity {arity}, expected {len(types)}")
    return data[4:]


def decode(row: bytes, types: Sequence[DataType], *, internal: bool = False) -> tuple[Any, ...]:
    """Decode one BinaryRow (without arity prefix) into Python values.

    With ``internal``, DATE is Paimon's internal epoch day (``int``) and TIMESTAMP /
    TIMESTAMP_LTZ the exact ``(epoch millis, nano-of-millisecond)`` pair (no precision lost);
    see :func:`decode_internal`.
    """
    nb = null_bits_size(len(types))
    out: list[Any] = []
    for i, t in enumerate(types):
        bit = i + 8
        if row[bit // 8] & (1 << (bit % 8)):
            out.append(None)
            continue
        pos = nb + 8 * i
        slot = row[pos : pos + 8]
        (word,) = struct.unpack("<Q", slot)
        out.append(_decode_value(row, slot, word, t, internal))
    return tuple(out)


def decode_internal(row: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """Decode one BinaryRow keeping Paimon's internal representation where Python's differs:
    DATE as the epoch day, TIMESTAMP/TIMESTAMP_LTZ as ``(epoch millis, nano-of-millisecond)``."""
    return decode(row, types, internal=True)


def _day_or_time(value: int, root: str, internal: bool) -> Any:
    """A DATE (epoch day) or TIME (millisecond of the day) int as Python's value."""
    if internal:
        return value
    if root == "DATE":
        return _EPOCH + dt.timedelta(days=value)
    return (_EPOCH_DT + dt.timedelta(milliseconds=value)).time()


def _decode_value(row: bytes, slot: bytes, word: int, t: DataType, internal: bool = False) -> Any:
    r = t.root
    if r == "BOOLEAN":
        return slot[0] != 0
    if r == "TINYINT":
        return struct.unpack_from("<b", slot)[0]
    if r == "SMALLINT":
        return struct.unpack_from("<h", slot)[0]
    if r == "INT":
        return struct.unpack_from("<i", slot)[0]
    if r in ("DATE", "TIME"):
        return _day_or_time(struct.unpack_from("<i", slot)[0], r, internal)
    if r == "BIGINT":
        return struct.unpack_from("<q", slot)[0]
    if r == "FLOAT":
        return struct.unpack_from("<f", slot)[0]
    if r == "DOUBLE":
        return struct.unpack_from("<d", slot)[0]
    if t.is_string or t.is_binary:
        if slot[7] & 0x80:
            raw = slot[: slot[7] & 0x7F]
        else:
            offset, length = word >> 32, word & 0xFFFFFFFF
            raw = row[offset : offset + length]
        return raw.decode("utf-8") if t.is_string else bytes(raw)
    if r == "DECIMAL":
        if t.fixed_width is not None:
            unscaled = struct.unpack_from("<q", slot)[0]
        else:
            offset, length = word >> 32, word & 0xFFFFFFFF
            unscaled = int.from_bytes(row[offset : offset + length], "big", signed=True)
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            return Decimal(unscaled).scaleb(-(t.scale or 0))
    # timestamps
    if t.fixed_width is not None:
        millis, nanos = struct.unpack_from("<q", slot)[0], 0
    else:
        offset, nanos = word >> 32, word & 0xFFFFFFFF
        millis = struct.unpack_from("<q", row, offset)[0]
    if internal:
        return millis, nanos
    value = _EPOCH_DT + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)
    value = value.replace(tzinfo=dt.UTC) if r == "TIMESTAMP_LTZ" else value
    return _with_nanoseconds(value, nanos % 1000) if nanos % 1000 else value


def _with_nanoseconds(value: dt.datetime, nanoseconds: int) -> Any:
    """``value`` plus ``nanoseconds`` (1-999) as pandas' ``Timestamp``: Python's ``datetime``
    stops at the microsecond, and a value cut there would compare wrong with the values pyarrow
    gives (pandas' Timestamps, exact), pruning files or partitions that hold sought rows.

    A value outside the years Arrow's and pandas' nanosecond timestamps span (1677-2262, such
    as a 9999-12-31 sentinel written by Java Paimon) stays cut to the microsecond: every value
    pyarrow gives lies inside that span, and compares with it as with its microseconds.
    Without pandas any other such value cannot be compared exactly: refused."""
    if not _NANOSECOND_SPAN[0] <= value.replace(tzinfo=None) <= _NANOSECOND_SPAN[1]:
        return value
    try:
        import pandas as pd
    except ImportError:
        raise UnsupportedFeatureError(
            f"a TIMESTAMP value with nanoseconds ({value.isoformat()} + {nanoseconds} ns) "
            "is a key, partition or statistics value here, which lakeops compares exactly "
            "only with pandas; install pandas (pip install 'lakeops[pandas]')"
        ) from None
    try:
        return pd.Timestamp(value) + pd.Timedelta(nanoseconds=nanoseconds)
    except (OverflowError, ValueError):  # pandas' OutOfBoundsDatetime: the span's margins
        return value
