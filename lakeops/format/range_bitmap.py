"""Paimon 1.x's ``range-bitmap`` file index (``RangeBitmapFileIndex`` version 1): the bytes of
one column's index, and the value range its header holds.

Each distinct non-null value gets a code, its rank in the type's order (strings by unsigned
UTF-8 bytes, numbers by value with ``Float.compare`` / ``Double.compare``'s order: -0.0 before
0.0, NaN last; false before true). All integers big-endian::

    header length (int32) | version (byte = 1) | row count (int32) | distinct values (int32)
    | min value | max value (both absent when there is none) | dictionary length (int32)
    | dictionary | bit-sliced index

A value is written as Paimon's ``KeyFactory`` serializes it: TINYINT / BOOLEAN a byte, SMALLINT
a short, INT / DATE / TIME an int, BIGINT / DECIMAL (precision <= 18, the unscaled long) /
TIMESTAMP (precision <= 6; epoch millis up to precision 3, else micros) a long, FLOAT / DOUBLE
their IEEE bits (NaN canonical), strings as length (int32) + UTF-8 bytes.

**Dictionary** (``ChunkedDictionary`` version 1): the sorted values cut into chunks. A chunk
starts at a value (kept in its header) and takes the following values while its key area stays
within ``chunk-size`` bytes (default 16 KiB; 0 for BOOLEAN, TINYINT and SMALLINT: one value a
chunk; strings also need 4 bytes per value for their offsets)::

    header length (int32 = 13) | version (byte = 1) | chunk count (int32)
    | offsets length (int32) | chunks length (int32)
    | per chunk: its header's offset among the chunk headers (int32)
    | chunk headers | key areas

    fixed-width chunk header: version (byte = 1) | first value | first code (int32)
        | key area offset (int32) | values after the first (int32) | key area length (int32)
        | value width (int32)
    string chunk header: version (byte = 1) | first value | first code (int32)
        | key area offset (int32) | values after the first (int32) | offsets length (int32)
        | keys length (int32)
    key area: the values after the first (strings: their offsets in the keys (int32 each),
        then the keys)

**Bit-sliced index** (``rangebitmap.BitSliceIndexBitmap`` version 1) of each row's code::

    header length (int32) | version (byte = 1) | slice count (byte) | existence bitmap length
    (int32) | indexes length (int32 = 8 * slices) | per slice: offset (from the first slice),
    length (int32 each) | existence bitmap (the rows with a value) | slice bitmaps (slice ``b``:
    the rows whose code has bit ``b`` set)

The slice count is the bit length of the largest code, at least 1 (64 when the file has no
value: Java's ``Long.numberOfLeadingZeros(-1)``). Bitmaps are run-optimized portable
RoaringBitmaps. Codes and slices are whole-array numpy work; chunks are cut per distinct value.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.file_index import (
    _bitmap_keys,
    _bitmap_order,
    _bsi_longs,
    _roaring,
)
from lakeops.format.types import DataType

__all__ = [
    "RANGE_BITMAP",
    "RANGE_BITMAP_ROOTS",
    "default_chunk_size",
    "range_bitmap_bytes",
    "range_bitmap_bounds",
    "value_key",
]

RANGE_BITMAP = "range-bitmap"

#: the type roots a range-bitmap index can index (Paimon's ``KeyFactory.create``)
RANGE_BITMAP_ROOTS = frozenset(
    {
        "CHAR",
        "VARCHAR",
        "BOOLEAN",
        "DECIMAL",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
    }
)

_UNCHUNKED = frozenset({"BOOLEAN", "TINYINT", "SMALLINT"})
_BIGINT = DataType.parse("BIGINT")


def default_chunk_size(dtype: DataType) -> int:
    """``KeyFactory.defaultChunkSize``: 0 bytes for BOOLEAN, TINYINT and SMALLINT, else 16 KiB."""
    return 0 if dtype.root in _UNCHUNKED else 16 * 1024


def check_type(dtype: DataType) -> None:
    """Refuse a column type Paimon's range-bitmap cannot index."""
    root = dtype.root
    bad = (
        root not in RANGE_BITMAP_ROOTS
        or (root == "DECIMAL" and (dtype.precision or 0) > 18)
        or (root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (dtype.precision or 0) > 6)
    )
    if bad:
        raise UnsupportedFeatureError(
            f"a range-bitmap file index cannot index a {dtype} column (Paimon takes strings, "
            "booleans, numbers, decimals up to precision 18, dates, times and timestamps up to "
            "precision 6); remove the column from 'file-index.range-bitmap.columns'"
        )


def _keys(values: pa.Array, dtype: DataType) -> tuple[np.ndarray, list[bytes], DataType]:
    """Each non-null value's code into the list of serialized values, and the type whose order
    sorts them."""
    if dtype.root == "DECIMAL":
        longs = _bsi_longs(values, dtype).astype(np.int64)
        distinct, codes = np.unique(longs, return_inverse=True)
        raw = distinct.astype(">i8").tobytes()
        return codes.astype(np.int64), [raw[i : i + 8] for i in range(0, len(raw), 8)], _BIGINT
    codes, words = _bitmap_keys(values, dtype)
    return codes, words, dtype


def value_key(values: pa.Array, dtype: DataType) -> list[bytes]:
    """The serialized form of each distinct non-null value of ``values`` (as the index holds
    them), in no particular order."""
    return _keys(values.drop_null(), dtype)[1]


def _dictionary(words: list[bytes], variable: bool, limit: int) -> bytes:
    """``ChunkedDictionary.Appender`` over the sorted ``words``."""
    headers: list[bytes] = []
    areas: list[bytes] = []
    keys_offset = 0
    i = 0
    while i < len(words):
        first, code = words[i], i
        i += 1
        taken: list[bytes] = []
        used = 0
        while i < len(words):
            need = len(words[i])
            if variable:
                if need > limit - used or 4 * (len(taken) + 1) > limit:
                    break
            elif need > limit - used:
                break
            taken.append(words[i])
            used += need
            i += 1
        keys = b"".join(taken)
        if variable:
            starts = np.cumsum([0, *(len(w) for w in taken)])[:-1]
            offsets = np.asarray(starts, ">i4").tobytes()
            head = struct.pack(">iiiii", code, keys_offset, len(taken), len(offsets), len(keys))
            area = offsets + keys
        else:
            head = struct.pack(">iiiii", code, keys_offset, len(taken), len(keys), len(first))
            area = keys
        headers.append(b"\x01" + first + head)
        areas.append(area)
        keys_offset += len(area)
    positions = np.cumsum([0, *(len(h) for h in headers)])[:-1]
    offsets = np.asarray(positions, ">i4").tobytes()
    chunks = b"".join(headers)
    return (
        struct.pack(">ibiii", 13, 1, len(headers), len(offsets), len(chunks))
        + offsets
        + chunks
        + b"".join(areas)
    )


def _bsi(rows: np.ndarray, codes: np.ndarray, distinct: int) -> bytes:
    """``rangebitmap.BitSliceIndexBitmap.Appender(0, distinct - 1)`` of each row's code."""
    top = distinct - 1
    slices = 64 if top < 0 else max(top.bit_length(), 1)
    ebm = _roaring(rows)
    bodies = [_roaring(rows[((codes >> b) & 1).astype(bool)]) for b in range(slices)]
    starts = np.cumsum([0, *(len(x) for x in bodies)])[:-1]
    index = b"".join(
        struct.pack(">ii", int(s), len(x)) for s, x in zip(starts, bodies, strict=True)
    )
    header_size = 1 + 1 + 4 + 4 + len(index)
    head = struct.pack(">ibbii", header_size, 1, slices, len(ebm), len(index))
    return head + index + ebm + b"".join(bodies)


def range_bitmap_bytes(values: pa.Array, dtype: DataType, chunk_size: int | None = None) -> bytes:
    """The range-bitmap index body of ``values`` (a column of type ``dtype``, every row of the
    file in file order); ``chunk_size``: the dictionary's ``chunk-size`` in bytes (None: the
    type's default). See the module docstring."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    check_type(dtype)
    limit = default_chunk_size(dtype) if chunk_size is None else chunk_size
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(valid)
    codes, words, order_type = _keys(values.filter(pa.array(valid)), dtype)
    order = np.asarray(_bitmap_order(words, order_type), np.int64) if words else np.zeros(0, int)
    rank = np.empty(len(words), np.int64)
    rank[order] = np.arange(len(words))
    sorted_words = [words[int(i)] for i in order]
    variable = dtype.root in ("CHAR", "VARCHAR")
    dictionary = _dictionary(sorted_words, variable, limit)
    bounds = sorted_words[0] + sorted_words[-1] if sorted_words else b""
    header = (
        struct.pack(">bii", 1, len(values), len(words))
        + bounds
        + struct.pack(">i", len(dictionary))
    )
    bsi = _bsi(rows, rank[codes] if len(codes) else codes, len(words))
    return struct.pack(">i", len(header)) + header + dictionary + bsi


def range_bitmap_bounds(body: bytes, dtype: DataType) -> tuple[int, bytes, bytes] | None:
    """The distinct-value count and the serialized min and max of a range-bitmap ``body``
    (``b""`` for both when it holds no value); None: a version this reader does not know."""
    try:
        (_, version, _, distinct) = struct.unpack_from(">ibii", body, 0)
        if version != 1:
            return None
        if distinct <= 0:
            return distinct, b"", b""
        pos = 13
        out = []
        for _ in range(2):
            if dtype.root in ("CHAR", "VARCHAR"):
                (n,) = struct.unpack_from(">i", body, pos)
                size = 4 + n
            else:
                size = (
                    1
                    if dtype.root in ("BOOLEAN", "TINYINT")
                    else {"SMALLINT": 2}.get(
                        dtype.root, 4 if dtype.root in ("INT", "DATE", "TIME", "FLOAT") else 8
                    )
                )
            if pos + size > len(body):
                raise CorruptTableError("truncated range-bitmap header")
            out.append(bytes(body[pos : pos + size]))
            pos += size
        return distinct, out[0], out[1]
    except (struct.error, CorruptTableError):
        return None
