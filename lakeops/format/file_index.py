"""Paimon's data-file indexes (``file-index.*``): the container, bloom filters, bitmaps and
bit-sliced indexes.

**Container** (Paimon's ``FileIndexFormat``, version 1), all integers big-endian::

    magic (int64 = 1493475289347502) | version (int32 = 1) | head length (int32)
    | column count (int32)
    | per column: name (Java modified UTF-8: uint16 length + bytes) | index count (int32)
    |     per index: type (UTF) | body offset (int32, from the start of the container;
    |                -1: an empty index) | body length (int32)
    | redundant length (int32 = 0) | bodies, in head order

The head length counts everything before the bodies. A file's container is embedded in its
``DataFileMeta`` (``_EMBEDDED_FILE_INDEX``) when it is at most ``file-index.in-manifest-threshold``
bytes, else written next to the data file as ``<data file>.index`` and listed in ``_EXTRA_FILES``
(Paimon's ``DataFileIndexWriter``).

**Bloom filter** (``bloom-filter``; ``BloomFilterFileIndex`` over ``BloomFilter64``): options
``items`` (default 1 000 000) and ``fpp`` (default 0.1) size it: ``nb = int(-items * ln(fpp) /
ln(2)^2)``, ``numBits = nb + 8 - nb % 8``, ``k = max(1, round(numBits / items * ln 2))``. A value
is added by its 64-bit :func:`fast_hash` ``h``: with ``h1`` its low and ``h2`` its high 32 bits
(Java ints), for ``i`` in 1..k the int ``c = h1 + i * h2`` (``~c`` when negative) sets bit
``c % numBits`` (bit ``j`` is bit ``j & 7`` of byte ``j >> 3``). Its body is ``k`` (int32
big-endian) followed by the bit bytes. Nulls are not added.

:func:`fast_hash` is Paimon's ``FastHash``: strings (UTF-8 bytes) and binaries by XXH64 with seed
0 (:func:`xxh64`); integers, dates and times by Thomas Wang's 64-bit integer hash of the value
sign-extended to a long; floats and doubles by the same hash of their IEEE bits
(``floatToIntBits`` / ``doubleToLongBits``: every NaN is the canonical one); timestamps by the
hash of their epoch milliseconds (precision up to 3) or microseconds. Booleans, decimals and
nested types cannot be indexed (Paimon refuses them too).

**Bitmap** (``bitmap``; ``BitmapFileIndex``), version 1 (what Paimon 0.9 writes and every
later Paimon reads), all integers big-endian::

    version (byte = 1) | row count (int32) | distinct non-null values (int32)
    | has nulls (byte 0/1) | [null offset (int32), when it has nulls]
    | per distinct value: the value | its offset (int32)
    | bitmaps

A value is written as Paimon's ``DataOutput`` writes the Java object: strings as length (int32)
+ UTF-8 bytes, TINYINT a byte, SMALLINT a short, INT / DATE / TIME an int, BIGINT and
timestamps (epoch millis up to precision 3, else micros) a long, FLOAT / DOUBLE their IEEE bits
(``writeFloat``: NaN canonical), BOOLEAN a byte. A value (or null) found in exactly one row has
offset ``-1 - row``; otherwise its row positions are a RoaringBitmap in the portable
serialization (run containers where smaller, Paimon's ``runOptimize``) in the bitmaps section,
and its offset is where that bitmap starts in the section (the nulls' bitmap, when there are
several null rows, comes first at 0). Row positions count every row the file holds, in order.

Version 2 (``BitmapFileIndexMetaV2``, Paimon 1.x's default; Paimon 0.9 reads only version 1)
keeps the bitmaps and offsets and puts the values, sorted as Paimon's comparator sorts them
(strings by unsigned bytes, numbers by value with ``Float.compare``'s order, false before
true), into index blocks of at most ``index-block-size`` bytes (default 16 KiB)::

    version (byte = 2) | row count (int32) | distinct non-null values (int32)
    | has nulls (byte) | [null offset (int32), null bitmap length (int32), when it has nulls]
    | block count (int32) | per block: its first value | its offset (int32, from the blocks)
    | blocks length (int32)
    | per block: entry count (int32) | per entry: value | offset (int32) | bitmap length
    |     (int32; -1 for a value in one row)
    | bitmaps

A block's size is 4 + (8 + value bytes) per entry; a block takes entries while that stays
within the limit. The null bitmap length is its serialized size even when it is inline.

**Bit-sliced index** (``bsi``; ``BitSliceIndexBitmapFileIndex`` version 1, Paimon 1.x): each
value as a long (integers, dates, times; timestamps as epoch millis up to precision 3, else
micros; decimals of precision up to 18 as their unscaled long). Non-negative values go to the
positive part, negative ones as their absolute value to the negative part::

    version (byte = 1) | row count (int32)
    | has positive (bool) | [positive part] | has negative (bool) | [negative part]

    part: version (byte = 1) | min (int64) | max (int64) | existence bitmap (the part's rows)
          | slice count (int32) | slice bitmaps (slice ``b``: rows whose ``value - min`` has
          bit ``b`` set)

Paimon's collector starts min and max at 0, so a part's min is always 0 and its max the
largest (absolute) value; the slice count is the bit length of ``max - min``. Bitmaps are
run-optimized portable RoaringBitmaps.

Everything is whole-array numpy work over Arrow buffers (one bitmap per distinct value or bit
slice): no per-row Python.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.types import DataType

__all__ = [
    "BITMAP",
    "BITMAP_ROOTS",
    "BSI",
    "BSI_ROOTS",
    "BLOOM_FILTER",
    "HASHABLE_ROOTS",
    "MAGIC",
    "BloomFilter",
    "bitmap_bytes",
    "bitmap_may_contain",
    "bsi_bytes",
    "bloom_filter_bytes",
    "fast_hash",
    "read_container",
    "write_container",
    "xxh64",
]

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX = -1
BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
BSI = "bsi"

#: the type roots :func:`fast_hash` (and so the bloom filter) can index
HASHABLE_ROOTS = frozenset(
    {
        "CHAR",
        "VARCHAR",
        "BINARY",
        "VARBINARY",
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


#: the type roots a bitmap index can index (Paimon's ``BitmapTypeVisitor``)
BITMAP_ROOTS = frozenset(
    {
        "CHAR",
        "VARCHAR",
        "BOOLEAN",
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


#: the type roots a bit-sliced index can index (decimals only up to precision 18)
BSI_ROOTS = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "DECIMAL",
    }
)


# --------------------------------------------------------------------------- the container
def _utf(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF`` (modified UTF-8: NUL and supplementary characters differ
    from UTF-8; column and index names have neither in practice, but are encoded as Java does)."""
    out = bytearray()
    for ch in text:
        cp = ord(ch)
        if 0 < cp < 0x80:
            out.append(cp)
        elif cp < 0x800:
            out += bytes((0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)))
        elif cp < 0x10000:
            out += bytes((0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)))
        else:  # a surrogate pair, each half as 3 bytes
            cp -= 0x10000
            for half in (0xD800 | (cp >> 10), 0xDC00 | (cp & 0x3FF)):
                out += bytes(
                    (0xE0 | (half >> 12), 0x80 | ((half >> 6) & 0x3F), 0x80 | (half & 0x3F))
                )
    return struct.pack(">H", len(out)) + bytes(out)


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """The container of ``indexes`` (column -> index type -> body; None: an empty index), in
    the given order (see the module docstring)."""
    names = b"".join(
        _utf(col) + b"".join(_utf(kind) for kind in by_type) for col, by_type in indexes.items()
    )
    pairs = sum(len(by_type) for by_type in indexes.values())
    head_length = 8 + 4 + 4 + 4 + pairs * 8 + len(indexes) * 4 + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes))]
    bodies: list[bytes] = []
    offset = head_length
    for col, by_type in indexes.items():
        head.append(_utf(col) + struct.pack(">i", len(by_type)))
        for kind, body in by_type.items():
            if body is None:
                head.append(_utf(kind) + struct.pack(">ii", EMPTY_INDEX, 0))
            else:
                head.append(_utf(kind) + struct.pack(">ii", offset, len(body)))
                bodies.append(body)
                offset += len(body)
    head.append(struct.pack(">i", 0))
    return b"".join(head) + b"".join(bodies)


def read_container(data: bytes, source: str = "file index") -> dict[str, dict[str, bytes | None]]:
    """The indexes of a container (column -> index type -> body; None: empty); a container
    that is not one is a :class:`CorruptTableError` naming ``source``."""
    try:
        magic, version, head_length, columns = struct.unpack_from(">qiii", data, 0)
        if magic != MAGIC:
            raise CorruptTableError(f"{source} is not a Paimon file index (bad magic)")
        if version != VERSION:
            raise CorruptTableError(f"{source} has file index version {version}, not 1")
        pos = 20
        out: dict[str, dict[str, bytes | None]] = {}

        def utf() -> str:
            nonlocal pos
            (n,) = struct.unpack_from(">H", data, pos)
            text = bytes(data[pos + 2 : pos + 2 + n]).decode("utf-8", "surrogatepass")
            pos += 2 + n
            return text

        for _ in range(columns):
            col = utf()
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            by_type = out.setdefault(col, {})
            for _ in range(count):
                kind = utf()
                start, length = struct.unpack_from(">ii", data, pos)
                pos += 8
                if start == EMPTY_INDEX:
                    by_type[kind] = None
                else:
                    if start < head_length or start + length > len(data):
                        raise CorruptTableError(f"{source}: index {col}/{kind} lies outside it")
                    by_type[kind] = bytes(data[start : start + length])
        return out
    except struct.error as e:
        raise CorruptTableError(f"{source} is a truncated Paimon file index: {e}") from None


# --------------------------------------------------------------------------- hashing
_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _lanes(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """The little-endian ``width``-byte integers of ``data`` at byte positions ``pos`` (a
    position past the end is clamped: its lane belongs to a string that does not use it)."""
    pos = np.minimum(pos, len(data) - width)
    grid = data[pos[:, None] + np.arange(width)]
    return np.ascontiguousarray(grid).view("<u8" if width == 8 else "<u4")[:, 0].astype(np.uint64)


def xxh64(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each byte string ``data[offsets[i]:offsets[i+1]]``, as uint64: every
    string at once, stripe by stripe."""
    offsets = offsets.astype(np.int64)
    starts, lengths = offsets[:-1], np.diff(offsets)
    n = len(lengths)
    buf = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(32, np.uint8)])
    with np.errstate(over="ignore"):
        h = np.full(n, _P5, np.uint64)
        stripes = lengths // 32
        long_ = np.flatnonzero(stripes > 0)
        if len(long_):
            zero = np.uint64(0)
            v = [
                np.full(len(long_), _P1 + _P2, np.uint64),
                np.full(len(long_), _P2, np.uint64),
                np.zeros(len(long_), np.uint64),
                np.full(len(long_), zero - _P1, np.uint64),
            ]
            base, count = starts[long_], stripes[long_]
            for s in range(int(count.max())):
                live = count > s
                for j in range(4):
                    lane = _lanes(buf, base + 32 * s + 8 * j, 8)
                    v[j] = np.where(live, _round(v[j], lane), v[j])
            acc = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
            for vj in v:
                acc = (acc ^ _round(np.zeros_like(vj), vj)) * _P1 + _P4
            h[long_] = acc
        h = h + lengths.astype(np.uint64)
        pos = starts + 32 * stripes
        rest = lengths - 32 * stripes
        for k in range(3):  # 8-byte lanes
            live = rest >= 8 * (k + 1)
            k1 = _round(np.zeros(n, np.uint64), _lanes(buf, pos + 8 * k, 8))
            h = np.where(live, _rotl(h ^ k1, 27) * _P1 + _P4, h)
        pos = pos + 8 * (rest // 8)
        rest = rest % 8
        four = rest >= 4
        k4 = _lanes(buf, pos, 4) * _P1
        h = np.where(four, _rotl(h ^ k4, 23) * _P2 + _P3, h)
        pos = pos + 4 * four
        rest = rest - 4 * four
        for k in range(3):  # single bytes
            b = buf[np.minimum(pos + k, len(buf) - 1)].astype(np.uint64)
            h = np.where(rest > k, _rotl(h ^ (b * _P5), 11) * _P1, h)
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h


def _wang(key: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash over Java longs (arithmetic right shifts)."""
    k = key.astype(np.int64)
    with np.errstate(over="ignore"):
        k = (~k) + (k << np.int64(21))
        k = k ^ (k >> np.int64(24))
        k = (k + (k << np.int64(3))) + (k << np.int64(8))
        k = k ^ (k >> np.int64(14))
        k = (k + (k << np.int64(2))) + (k << np.int64(4))
        k = k ^ (k >> np.int64(28))
        k = k + (k << np.int64(31))
    out: np.ndarray = k.view(np.uint64)
    return out


def _binary_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The data bytes and int64 offsets of a string or binary array (nulls dropped first)."""
    arr = values.cast(pa.large_binary())
    _, offs, data = arr.buffers()
    offsets = np.frombuffer(offs, np.int64)[arr.offset : arr.offset + len(arr) + 1]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return raw, offsets


def fast_hash(values: pa.Array, dtype: DataType) -> np.ndarray:
    """Paimon's ``FastHash`` of each non-null value of ``values`` (a column of type
    ``dtype``), as uint64 (see the module docstring); nulls are dropped."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.drop_null()
    root = dtype.root
    if root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return xxh64(*_binary_parts(values))
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return _wang(np.asarray(values.to_numpy(zero_copy_only=False)).astype(np.int64))
    if root == "FLOAT":
        f = np.asarray(values.to_numpy(zero_copy_only=False), np.float32)
        bits = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
        return _wang(bits.astype(np.int64))
    if root == "DOUBLE":
        d = np.asarray(values.to_numpy(zero_copy_only=False), np.float64)
        bits = np.where(np.isnan(d), np.int64(0x7FF8000000000000), d.view(np.int64))
        return _wang(bits)
    if root in ("DATE", "TIME"):
        return _wang(np.asarray(values.cast(pa.int32()).to_numpy(zero_copy_only=False)))
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _wang(_timestamp_longs(values, dtype))
    raise UnsupportedFeatureError(
        f"a file index cannot hash a {dtype} column (Paimon's FastHash has no hash for it); "
        "remove the column from the table's file-index.*.columns options"
    )


# --------------------------------------------------------------------------- bloom filter
@dataclass
class BloomFilter:
    """Paimon's ``BloomFilter64`` (see the module docstring): ``bits`` as bytes (bit ``j`` is
    bit ``j & 7`` of byte ``j >> 3``), ``hashes`` the number of hash functions."""

    hashes: int
    bits: np.ndarray

    @classmethod
    def sized(cls, items: int, fpp: float) -> BloomFilter:
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = nb + (8 - nb % 8)
        hashes = max(1, _java_round(num_bits / items * math.log(2)))
        return cls(hashes, np.zeros(num_bits // 8, np.uint8))

    @classmethod
    def from_bytes(cls, body: bytes) -> BloomFilter:
        (hashes,) = struct.unpack_from(">i", body, 0)
        return cls(hashes, np.frombuffer(body, np.uint8, offset=4).copy())

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        """The bit positions of each hash, shape (n, k)."""
        h = hashes.astype(np.uint64)
        h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
        h2 = (h >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
        i = np.arange(1, self.hashes + 1, dtype=np.int64)
        # Java int arithmetic: wrap the products and sums to 32 bits
        combined = ((h1[:, None] + i[None, :] * h2[:, None]) & 0xFFFFFFFF).astype(np.uint32)
        c = combined.view(np.int32).astype(np.int64)
        c = np.where(c < 0, ~c, c)
        return c % (len(self.bits) * 8)

    def add(self, hashes: np.ndarray) -> None:
        """Add every hash of ``hashes``."""
        if len(hashes) == 0:
            return
        pos = np.unique(self._positions(hashes).ravel())
        np.bitwise_or.at(self.bits, pos >> 3, (1 << (pos & 7)).astype(np.uint8))

    def might_contain(self, hashes: np.ndarray) -> np.ndarray:
        """For each hash, whether the filter may hold it."""
        pos = self._positions(hashes)
        bits = (self.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        out: np.ndarray = bits.astype(bool).all(axis=1)
        return out

    def to_bytes(self) -> bytes:
        return struct.pack(">i", self.hashes) + self.bits.tobytes()


def _timestamp_longs(values: pa.Array, dtype: DataType) -> np.ndarray:
    """Epoch millis (precision up to 3) or micros (floored) of a timestamp array."""
    unit = values.type.unit
    raw = np.asarray(values.cast(pa.timestamp(unit, tz=values.type.tz)).cast(pa.int64()).to_numpy())
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    target = 1_000 if (dtype.precision or 0) <= 3 else 1_000_000
    if per_second >= target:
        out: np.ndarray = np.floor_divide(raw, per_second // target)
    else:
        out = raw * (target // per_second)
    return out


def _bitmap_keys(values: pa.Array, dtype: DataType) -> tuple[np.ndarray, list[bytes]]:
    """For the non-null ``values``: each row's value code, and each code's value as Paimon's
    bitmap meta writes it (codes are positions in that list)."""
    root = dtype.root
    if root in ("CHAR", "VARCHAR"):
        encoded = values.cast(pa.large_string()).dictionary_encode()
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
        data, offsets = _binary_parts(encoded.dictionary.cast(pa.large_binary()))
        lengths = np.diff(offsets)
        words = [
            struct.pack(">i", int(n)) + data[int(o) : int(o) + int(n)].tobytes()
            for o, n in zip(offsets[:-1], lengths, strict=True)
        ]
        return codes, words
    if root == "FLOAT":
        f = np.asarray(values.to_numpy(zero_copy_only=False), np.float32)
        keys = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32)).astype(">i4")
    elif root == "DOUBLE":
        d = np.asarray(values.to_numpy(zero_copy_only=False), np.float64)
        keys = np.where(np.isnan(d), np.int64(0x7FF8000000000000), d.view(np.int64)).astype(">i8")
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        keys = _timestamp_longs(values, dtype).astype(">i8")
    elif root in ("DATE", "TIME"):
        keys = np.asarray(values.cast(pa.int32()).to_numpy(zero_copy_only=False)).astype(">i4")
    else:
        width = {"BOOLEAN": ">i1", "TINYINT": ">i1", "SMALLINT": ">i2", "INT": ">i4"}
        form = width.get(root, ">i8")
        raw = values.cast(pa.int8()) if root == "BOOLEAN" else values
        keys = np.asarray(raw.to_numpy(zero_copy_only=False)).astype(form)
    distinct, codes = np.unique(keys, return_inverse=True)
    raw_bytes = distinct.tobytes()
    size = distinct.dtype.itemsize
    return codes.astype(np.int64), [raw_bytes[i : i + size] for i in range(0, len(raw_bytes), size)]


def _roaring(rows: np.ndarray) -> bytes:
    """The portable RoaringBitmap of ``rows`` (run-optimized, as Paimon serializes it)."""
    import pyroaring

    bitmap = pyroaring.BitMap(rows.astype(np.uint32))
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def _bitmap_order(words: list[bytes], dtype: DataType) -> list[int]:
    """The positions of ``words`` (bitmap meta values) in the order of Paimon's
    ``BitmapFileIndexMetaV2.getComparator``: strings by unsigned bytes, integers signed,
    floats and doubles as ``Float.compare`` / ``Double.compare`` (-0.0 before 0.0, NaN last),
    false before true."""
    root = dtype.root
    if root in ("CHAR", "VARCHAR"):
        return sorted(range(len(words)), key=lambda i: words[i][4:])
    size = _FIXED_WIDTH[root]
    form = {1: ">i1", 2: ">i2", 4: ">i4", 8: ">i8"}[size]
    keys = np.frombuffer(b"".join(words), form).astype(np.int64)
    if root in ("FLOAT", "DOUBLE"):  # IEEE bits -> an integer in the floats' total order
        keys = np.where(keys < 0, keys ^ np.int64((1 << (8 * size - 1)) - 1), keys)
    return [int(i) for i in np.argsort(keys, kind="stable")]


def bitmap_bytes(
    values: pa.Array, dtype: DataType, version: int = 1, block_size: int = 16 * 1024
) -> bytes:
    """The bitmap index body of ``values`` (a column of type ``dtype``, every row of the file
    in file order) in ``version`` 1 or 2; ``block_size`` bounds a version-2 index block (the
    ``index-block-size`` option). See the module docstring."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if dtype.root not in BITMAP_ROOTS:
        raise UnsupportedFeatureError(
            f"a bitmap file index cannot index a {dtype} column; remove the column from "
            "'file-index.bitmap.columns'"
        )
    if version not in (1, 2):
        raise UnsupportedFeatureError(f"bitmap index version {version}: Paimon writes 1 or 2")
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(valid)
    nulls = np.flatnonzero(~valid)
    codes, words = _bitmap_keys(values.filter(pa.array(valid)), dtype)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(words))
    groups = np.split(rows[order], np.cumsum(counts)[:-1]) if len(words) else []
    body: list[bytes] = []
    offset = 0
    null_bitmap = _roaring(nulls) if len(nulls) else b""
    if len(nulls) > 1:
        body.append(null_bitmap)
        offset = len(null_bitmap)
    head = [struct.pack(">bii?", version, len(values), len(words), len(nulls) > 0)]
    if len(nulls):
        head.append(struct.pack(">i", -1 - int(nulls[0]) if len(nulls) == 1 else 0))
        if version == 2:
            head.append(struct.pack(">i", len(null_bitmap)))
    # each value: (its meta bytes, its offset, its bitmap's length; -1 when inline)
    # (version 2: in sorted order, the bitmaps too; Java's follow its HashMap's order)
    entries: list[tuple[bytes, int, int]] = []
    sequence = _bitmap_order(words, dtype) if version == 2 else range(len(words))
    for word, group in ((words[i], groups[i]) for i in sequence):
        if len(group) == 1:
            entries.append((word, -1 - int(group[0]), -1))
        else:
            bitmap = _roaring(group)
            entries.append((word, offset, len(bitmap)))
            body.append(bitmap)
            offset += len(bitmap)
    if version == 1:
        head += [word + struct.pack(">i", at) for word, at, _ in entries]
    else:
        head.append(_bitmap_blocks(entries, block_size))
    return b"".join(head) + b"".join(body)


def _bitmap_blocks(entries: list[tuple[bytes, int, int]], block_size: int) -> bytes:
    """Version 2's index blocks of ``entries`` (sorted): the block count, each block's first
    value and offset, the blocks' total size, then each block (entry count; value, offset,
    length per entry). A block holds entries while its size (4 + 8 + value bytes each) stays
    within ``block_size`` (Paimon's ``BitmapIndexBlock.tryAdd``)."""
    blocks: list[list[tuple[bytes, int, int]]] = []
    size = block_size + 1
    for entry in entries:
        need = 8 + len(entry[0])
        if size + need > block_size:
            blocks.append([])
            size = 4
            if size + need > block_size:
                raise UnsupportedFeatureError(
                    f"a bitmap index value of {len(entry[0])} bytes does not fit an index block "
                    f"of {block_size} bytes (Paimon fails so too); raise the column's "
                    "'index-block-size' option"
                )
        blocks[-1].append(entry)
        size += need
    serialized = [
        struct.pack(">i", len(block))
        + b"".join(word + struct.pack(">ii", at, length) for word, at, length in block)
        for block in blocks
    ]
    out = [struct.pack(">i", len(blocks))]
    start = 0
    for block, data in zip(blocks, serialized, strict=True):
        out.append(block[0][0] + struct.pack(">i", start))
        start += len(data)
    out.append(struct.pack(">i", start))
    return b"".join(out) + b"".join(serialized)


def _bsi_longs(values: pa.Array, dtype: DataType) -> np.ndarray:
    """The non-null ``values`` as the longs Paimon's bsi index stores."""
    root = dtype.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_longs(values, dtype)
    if root == "DECIMAL":  # the low 8 bytes of each little-endian 16-byte unscaled value
        arr = values.cast(pa.decimal128(dtype.precision or 10, dtype.scale or 0))
        words = np.frombuffer(arr.buffers()[1], "<i8").reshape(-1, 2)
        out: np.ndarray = words[arr.offset : arr.offset + len(arr), 0].copy()
        return out
    if root in ("DATE", "TIME"):
        values = values.cast(pa.int32())
    return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False))


def _bsi_part(rows: np.ndarray, magnitudes: np.ndarray) -> bytes:
    """One part (positive or negative) of a bsi index: min 0, max the largest magnitude."""
    top = int(magnitudes.max())
    slices = top.bit_length()
    out = [struct.pack(">bqq", 1, 0, top), _roaring(rows), struct.pack(">i", slices)]
    for b in range(slices):
        out.append(_roaring(rows[((magnitudes >> np.int64(b)) & 1).astype(bool)]))
    return b"".join(out)


def bsi_bytes(values: pa.Array, dtype: DataType) -> bytes:
    """The bsi index body (version 1) of ``values`` (a column of type ``dtype``, every row of
    the file in file order; see the module docstring)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if dtype.root not in BSI_ROOTS or (dtype.root == "DECIMAL" and (dtype.precision or 0) > 18):
        raise UnsupportedFeatureError(
            f"a bsi file index cannot index a {dtype} column; remove the column from "
            "'file-index.bsi.columns'"
        )
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
    rows = np.flatnonzero(valid)
    longs = _bsi_longs(values.filter(pa.array(valid)), dtype).astype(np.int64)
    if (longs == np.iinfo(np.int64).min).any():
        raise UnsupportedFeatureError(
            "a bsi file index cannot hold the value -2^63 (Paimon's Math.abs overflows); "
            "remove the column from 'file-index.bsi.columns'"
        )
    negative = longs < 0
    out = [struct.pack(">bi", 1, len(values))]
    for part in (~negative, negative):
        if part.any():
            out.append(b"\x01" + _bsi_part(rows[part], np.abs(longs[part])))
        else:
            out.append(b"\x00")
    return b"".join(out)


_FIXED_WIDTH = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "DATE": 4,
    "TIME": 4,
    "FLOAT": 4,
    "BIGINT": 8,
    "DOUBLE": 8,
    "TIMESTAMP": 8,
    "TIMESTAMP_LTZ": 8,
}


def bitmap_may_contain(body: bytes, values: pa.Array, dtype: DataType) -> bool | None:
    """Whether a bitmap index ``body`` (version 1 or 2) holds any of the non-null ``values``
    (None: not a body this reader knows, so it cannot tell)."""
    if not body or body[0] not in (1, 2) or dtype.root not in BITMAP_ROOTS:
        return None
    version = body[0]
    width = _FIXED_WIDTH.get(dtype.root)
    pos = 0

    def word() -> bytes:
        nonlocal pos
        if width is None:
            (n,) = struct.unpack_from(">i", body, pos)
            out = bytes(body[pos : pos + 4 + n])
            pos += 4 + n
        else:
            out = bytes(body[pos : pos + width])
            pos += width
        if pos > len(body):
            raise struct.error("truncated")
        return out

    present: set[bytes] = set()
    try:
        _, distinct, has_null = struct.unpack_from(">ii?", body, 1)
        pos = 10 + (4 if has_null else 0) + (4 if has_null and version == 2 else 0)
        if version == 1:
            for _ in range(distinct):
                present.add(word())
                pos += 4
        else:  # skip the block directory, then read every block's entries
            (blocks,) = struct.unpack_from(">i", body, pos)
            pos += 4
            for _ in range(blocks):
                word()
                pos += 4
            pos += 4
            for _ in range(blocks):
                (count,) = struct.unpack_from(">i", body, pos)
                pos += 4
                for _ in range(count):
                    present.add(word())
                    pos += 8
    except struct.error:
        return None
    _, words = _bitmap_keys(values.drop_null(), dtype)
    return any(w in present for w in words)


def _java_round(x: float) -> int:
    """Java's ``Math.round`` (half up)."""
    return math.floor(x + 0.5)


def bloom_filter_bytes(values: pa.Array, dtype: DataType, items: int, fpp: float) -> bytes:
    """The bloom-filter index body of ``values`` (a column of type ``dtype``)."""
    bloom = BloomFilter.sized(items, fpp)
    bloom.add(fast_hash(values, dtype))
    return bloom.to_bytes()
