"""Paimon's file index format, judged by plain scalar models written from Paimon's Java source
(``FileIndexFormat``, ``BloomFilter64``, ``FastHash``) and by XXH64's published vectors."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.file_index import (
    BloomFilter,
    bitmap_bytes,
    bloom_filter_bytes,
    bsi_bytes,
    fast_hash,
    read_container,
    write_container,
    xxh64,
)
from lakeops.format.types import DataType

M64 = (1 << 64) - 1


# ----------------------------------------------------------------- plain models
def _model_xxh64(data: bytes) -> int:
    """XXH64 with seed 0, one byte string at a time (the reference algorithm)."""
    p1, p2, p3, p4, p5 = (
        11400714785074694791,
        14029467366897019727,
        1609587929392839161,
        9650029242287828579,
        2870177450012600261,
    )

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & M64

    def rnd(acc: int, lane: int) -> int:
        return rotl((acc + lane * p2) & M64, 31) * p1 & M64

    n, i = len(data), 0
    if n >= 32:
        v = [(p1 + p2) & M64, p2, 0, (-p1) & M64]
        while i + 32 <= n:
            for j in range(4):
                v[j] = rnd(v[j], int.from_bytes(data[i + 8 * j : i + 8 * j + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ rnd(0, x)) * p1 + p4) & M64
    else:
        h = p5
    h = (h + n) & M64
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(data[i : i + 8], "little")), 27) * p1 + p4) & M64
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (int.from_bytes(data[i : i + 4], "little") * p1 & M64), 23) * p2 + p3) & M64
        i += 4
    while i < n:
        h = rotl(h ^ (data[i] * p5 & M64), 11) * p1 & M64
        i += 1
    h ^= h >> 33
    h = h * p2 & M64
    h ^= h >> 29
    h = h * p3 & M64
    return h ^ (h >> 32)


def _java_long(x: int) -> int:
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def _model_wang(key: int) -> int:
    """``FastHash.getLongHash`` with Java long arithmetic (``>>`` is arithmetic)."""
    k = _java_long(key)
    k = _java_long(~k + (k << 21))
    k = _java_long(k ^ (k >> 24))
    k = _java_long(k + (k << 3) + (k << 8))
    k = _java_long(k ^ (k >> 14))
    k = _java_long(k + (k << 2) + (k << 4))
    k = _java_long(k ^ (k >> 28))
    k = _java_long(k + (k << 31))
    return k & M64


def _java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def _model_bloom(hashes: list[int], items: int, fpp: float) -> bytes:
    """``BloomFilterFileIndex.Writer.serializedBytes`` after ``addHash`` of each hash."""
    nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    num_bits = nb + (8 - nb % 8)
    k = max(1, math.floor(num_bits / items * math.log(2) + 0.5))
    bits = bytearray(num_bits // 8)
    for h in hashes:
        h1, h2 = _java_int(h), _java_int(h >> 32)
        for i in range(1, k + 1):
            c = _java_int(h1 + i * h2)
            if c < 0:
                c = ~c
            pos = c % num_bits
            bits[pos >> 3] |= 1 << (pos & 7)
    return struct.pack(">i", k) + bytes(bits)


def _java_utf(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def _model_container(indexes: dict[str, dict[str, bytes | None]]) -> bytes:
    """``FileIndexFormat.Writer.writeColumnIndexes`` as DataOutputStream writes it."""
    names = b"".join(_java_utf(c) + b"".join(_java_utf(t) for t in m) for c, m in indexes.items())
    pairs = sum(len(m) for m in indexes.values())
    head_len = 20 + pairs * 8 + len(indexes) * 4 + 4 + len(names)
    out = struct.pack(">qii", 1493475289347502, 1, head_len) + struct.pack(">i", len(indexes))
    body = b""
    for c, m in indexes.items():
        out += _java_utf(c) + struct.pack(">i", len(m))
        for t, v in m.items():
            if v is None:
                out += _java_utf(t) + struct.pack(">ii", -1, 0)
            else:
                out += _java_utf(t) + struct.pack(">ii", head_len + len(body), len(v))
                body += v
    return out + struct.pack(">i", 0) + body


# ----------------------------------------------------------------- tests
def test_xxh64_matches_published_vectors() -> None:
    got = fast_hash(pa.array(["", "a", "abc"]), DataType.parse("STRING"))
    assert [int(x) for x in got] == [0xEF46DB3751D8E999, 0xD24EC4F1A98C6E5B, 0x44BC2CF5AD770999]


def test_xxh64_of_every_length_matches_the_model() -> None:
    rng = random.Random(7)
    strings = [bytes(rng.randrange(256) for _ in range(n)) for n in range(0, 140)]
    strings += [bytes(rng.randrange(256) for _ in range(rng.randrange(300))) for _ in range(60)]
    rng.shuffle(strings)
    arr = pa.array(strings, pa.binary())
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[: len(arr) + 1]
    assert [int(x) for x in xxh64(data, offsets)] == [_model_xxh64(s) for s in strings]


@pytest.mark.parametrize(
    ("type_text", "values", "longs"),
    [
        ("BIGINT", [0, 1, -1, 2**63 - 1, -(2**63), 123456789012], None),
        ("INT", [0, -5, 2**31 - 1, -(2**31)], None),
        ("SMALLINT", [-3, 300], None),
        ("TINYINT", [-128, 127], None),
        ("DATE", [0, 19000, -1], None),
    ],
)
def test_integer_hash_is_thomas_wang_over_java_longs(
    type_text: str, values: list[int], longs: list[int] | None
) -> None:
    dtype = DataType.parse(type_text)
    got = fast_hash(pa.array(values, dtype.to_arrow()), dtype)
    assert [int(x) for x in got] == [_model_wang(v) for v in values]


def test_float_double_and_timestamp_hashes() -> None:
    doubles = [0.0, -0.0, 1.5, float("nan"), float("inf")]
    got = fast_hash(pa.array(doubles, pa.float64()), DataType.parse("DOUBLE"))
    bits = [struct.unpack(">q", struct.pack(">d", d))[0] for d in doubles]
    bits[3] = 0x7FF8000000000000  # doubleToLongBits: the canonical NaN
    assert [int(x) for x in got] == [_model_wang(b) for b in bits]
    floats = [1.25, -2.0, float("nan")]
    got = fast_hash(pa.array(floats, pa.float32()), DataType.parse("FLOAT"))
    fbits = [struct.unpack(">i", struct.pack(">f", f))[0] for f in floats]
    fbits[2] = 0x7FC00000
    assert [int(x) for x in got] == [_model_wang(b) for b in fbits]
    # TIMESTAMP(3): epoch millis; TIMESTAMP(6) and (9): epoch micros (floored)
    millis = [1_700_000_000_123, -1]
    got = fast_hash(pa.array(millis, pa.timestamp("ms")), DataType.parse("TIMESTAMP(3)"))
    assert [int(x) for x in got] == [_model_wang(m) for m in millis]
    nanos = [1_700_000_000_123_456_789, -1]
    got = fast_hash(pa.array(nanos, pa.timestamp("ns")), DataType.parse("TIMESTAMP(9)"))
    assert [int(x) for x in got] == [_model_wang(n // 1000) for n in nanos]


def test_nulls_are_not_hashed_and_unhashable_types_are_refused() -> None:
    got = fast_hash(pa.array([1, None, 2], pa.int64()), DataType.parse("BIGINT"))
    assert [int(x) for x in got] == [_model_wang(1), _model_wang(2)]
    with pytest.raises(UnsupportedFeatureError, match="BOOLEAN"):
        fast_hash(pa.array([True]), DataType.parse("BOOLEAN"))


@pytest.mark.parametrize(("items", "fpp"), [(1_000_000, 0.1), (100, 0.01), (7, 0.5)])
def test_bloom_filter_bytes_match_the_model(items: int, fpp: float) -> None:
    values = [f"key-{i}" for i in range(0, 300, 3)] + [None]
    dtype = DataType.parse("STRING")
    got = bloom_filter_bytes(pa.array(values), dtype, items, fpp)
    hashes = [_model_xxh64(v.encode()) for v in values if v is not None]
    assert got == _model_bloom(hashes, items, fpp)
    longs = list(range(-50, 50, 3))
    got = bloom_filter_bytes(pa.array(longs, pa.int64()), DataType.parse("BIGINT"), items, fpp)
    assert got == _model_bloom([_model_wang(v) for v in longs], items, fpp)


def test_bloom_filter_has_no_false_negatives() -> None:
    dtype = DataType.parse("BIGINT")
    bloom = BloomFilter.from_bytes(
        bloom_filter_bytes(pa.array(range(1000), pa.int64()), dtype, 1000, 0.05)
    )
    assert bloom.might_contain(fast_hash(pa.array(range(1000), pa.int64()), dtype)).all()
    absent = bloom.might_contain(fast_hash(pa.array(range(10**6, 10**6 + 1000)), dtype))
    assert absent.mean() < 0.15


def test_container_matches_the_model_and_reads_back() -> None:
    indexes: dict[str, dict[str, bytes | None]] = {
        "id": {"bloom-filter": b"\x00\x00\x00\x02abcdef"},
        "name": {"bloom-filter": b"xyz", "bitmap": None},
        "größe": {"bloom-filter": b"\x01"},
    }
    data = write_container(indexes)
    assert data == _model_container(indexes)
    assert read_container(data) == indexes


def test_container_refuses_what_is_not_one() -> None:
    with pytest.raises(CorruptTableError, match="bad magic"):
        read_container(b"\x00" * 40, "x.index")
    with pytest.raises(CorruptTableError, match="truncated"):
        read_container(write_container({"a": {"bloom-filter": b"abc"}})[:25], "x.index")


def _model_read_bitmap(body: bytes, type_text: str) -> tuple[int, dict[object, set[int]]]:
    """A plain reader of ``BitmapFileIndexMeta`` v1 + bitmaps: the row count and the rows of
    each value (None: nulls), bitmaps decoded by pyroaring (an independent implementation)."""
    import pyroaring

    pos = 0

    def take(fmt: str) -> Any:
        nonlocal pos
        (v,) = struct.unpack_from(fmt, body, pos)
        pos += struct.calcsize(fmt)
        return v

    assert take(">b") == 1
    rows, distinct, has_null = take(">i"), take(">i"), take(">?")
    offsets: list[tuple[object, int]] = []
    if has_null:
        offsets.append((None, take(">i")))
    form = {"BIGINT": ">q", "INT": ">i", "SMALLINT": ">h", "DOUBLE": ">d"}.get(type_text)
    for _ in range(distinct):
        if form is None:
            n = take(">i")
            value: object = body[pos : pos + n].decode()
            pos += n
        else:
            value = take(form)
        offsets.append((value, take(">i")))
    out: dict[object, set[int]] = {}
    for value, offset in offsets:
        if offset < 0:
            out[value] = {-1 - offset}
        else:
            out[value] = set(pyroaring.BitMap.deserialize(body[pos + offset :]))
    return rows, out


@pytest.mark.parametrize(
    ("type_text", "values"),
    [
        ("STRING", ["a", "b", "a", None, "c", None, "a", "ü", "b"]),
        ("BIGINT", [5, 5, 7, None, -1, 2**40, 5, *([9] * 3000), *range(100, 400, 3), 9]),
        ("INT", [1, None, 1, 2]),
        ("SMALLINT", [3, 3, -3]),
        ("DOUBLE", [1.5, -0.0, 1.5, None]),
        ("STRING", [None, None, None]),
    ],
)
def test_bitmap_bytes_read_back_by_a_plain_model(type_text: str, values: list[Any]) -> None:
    dtype = DataType.parse(type_text)
    body = bitmap_bytes(pa.array(values, dtype.to_arrow()), dtype)
    rows, got = _model_read_bitmap(body, type_text)
    expected: dict[object, set[int]] = {}
    for i, v in enumerate(values):
        expected.setdefault(v, set()).add(i)
    assert rows == len(values) and got == expected


def test_bitmap_refuses_types_paimon_cannot_index() -> None:
    with pytest.raises(UnsupportedFeatureError, match="bitmap"):
        bitmap_bytes(pa.array([b"x"], pa.binary()), DataType.parse("BYTES"))


def _model_bsi(values: list[int | None]) -> bytes:
    """``BitSliceIndexBitmapFileIndex.Writer`` one row at a time: StatsCollectList (min and
    max start at 0), Appender per sign, slices of ``value - min``, RoaringBitmap32 serialized
    run-optimized (pyroaring: an independent implementation of the portable format)."""
    import pyroaring

    def roaring(rows: set[int]) -> bytes:
        bm = pyroaring.BitMap(sorted(rows))
        bm.run_optimize()
        return bytes(bm.serialize())

    parts: list[dict[int, int]] = [{}, {}]  # positive, negative: row -> magnitude
    for row, v in enumerate(values):
        if v is not None:
            parts[1 if v < 0 else 0][row] = abs(v)
    out = struct.pack(">bi", 1, len(values))
    for part in parts:
        if not part:
            out += b"\x00"
            continue
        top = max([0, *part.values()])
        slices = [set() for _ in range(top.bit_length())]  # type: list[set[int]]
        for row, m in part.items():
            for b in range(top.bit_length()):
                if m >> b & 1:
                    slices[b].add(row)
        out += b"\x01" + struct.pack(">bqq", 1, 0, top) + roaring(set(part))
        out += struct.pack(">i", len(slices)) + b"".join(roaring(s) for s in slices)
    return out


@pytest.mark.parametrize(
    ("type_text", "values"),
    [
        ("BIGINT", [5, None, -3, 0, 7, 2**40, -(2**35), 5]),
        ("INT", [0, 0, None]),
        ("INT", [-1, -2, -3]),
        ("BIGINT", [None, None]),
        ("BIGINT", [i * 37 % 1000 - 300 for i in range(5000)]),
    ],
)
def test_bsi_bytes_match_the_model(type_text: str, values: list[int | None]) -> None:
    """Paimon 0.9 has no bsi index and pypaimon 2.1 reads none: judged by the model of the
    Java writer only."""
    dtype = DataType.parse(type_text)
    assert bsi_bytes(pa.array(values, dtype.to_arrow()), dtype) == _model_bsi(values)


def test_bsi_of_dates_timestamps_and_decimals() -> None:
    import datetime as dt
    import decimal

    days = [dt.date(2024, 1, 1), None, dt.date(1960, 5, 5)]
    got = bsi_bytes(pa.array(days, pa.date32()), DataType.parse("DATE"))
    epoch = dt.date(1970, 1, 1)
    assert got == _model_bsi([None if d is None else (d - epoch).days for d in days])
    micros = [1_700_000_000_123_456, -5]
    got = bsi_bytes(pa.array(micros, pa.timestamp("us")), DataType.parse("TIMESTAMP(6)"))
    assert got == _model_bsi(micros)
    got = bsi_bytes(pa.array(micros, pa.timestamp("us")), DataType.parse("TIMESTAMP(3)"))
    assert got == _model_bsi([m // 1000 for m in micros])
    decs = [decimal.Decimal("1.25"), decimal.Decimal("-0.50"), None]
    got = bsi_bytes(pa.array(decs, pa.decimal128(10, 2)), DataType.parse("DECIMAL(10, 2)"))
    assert got == _model_bsi([125, -50, None])
    with pytest.raises(UnsupportedFeatureError, match="bsi"):
        bsi_bytes(pa.array([1.5]), DataType.parse("DOUBLE"))
    with pytest.raises(UnsupportedFeatureError, match="bsi"):
        bsi_bytes(pa.array([], pa.decimal128(20, 2)), DataType.parse("DECIMAL(20, 2)"))


def _model_v2_blocks(entries: list[Any], write: Any, block_size: int) -> bytes:
    """``BitmapFileIndexMetaV2.serialize``'s block directory and blocks, filled by ``tryAdd``."""
    out = b""
    blocks: list[list[Any]] = [[0, 4, []]] if entries else []  # offset, bytes, entries
    for e in entries:
        need = 8 + len(write(e[0]))
        last = blocks[-1]
        if last[1] + need > block_size:
            blocks.append([last[0] + last[1], 4, []])
            last = blocks[-1]
        last[1] += need
        last[2].append(e)
    out += struct.pack(">i", len(blocks))
    for b in blocks:
        out += write(b[2][0][0]) + struct.pack(">i", b[0])
    out += struct.pack(">i", sum(b[1] for b in blocks))
    for b in blocks:
        out += struct.pack(">i", len(b[2]))
        for k, at, length in b[2]:
            out += write(k) + struct.pack(">ii", at, length)
    return out


def _model_bitmap_v2(values: list[Any], type_text: str, block_size: int) -> bytes:
    """``BitmapFileIndex.Writer`` (version 2) + ``BitmapFileIndexMetaV2.serialize``, one row at
    a time: id2bitmap iterated in the comparator's order (Java's follows its HashMap, which
    readers do not depend on), values sorted by Java's ``compareTo`` (strings by unsigned
    bytes, doubles by ``Double.compare``), blocks filled by ``tryAdd``."""
    import pyroaring

    def roaring(rows: list[int]) -> bytes:
        bm = pyroaring.BitMap(rows)
        bm.run_optimize()
        return bytes(bm.serialize())

    def java_key(v: Any) -> Any:
        if type_text == "DOUBLE":  # Double.compare: -0.0 < 0.0, NaN last
            return (math.isnan(v), v, math.copysign(1.0, v))
        if type_text == "STRING":
            return v.encode()
        return v

    def write(v: Any) -> bytes:
        form = {"BIGINT": ">q", "INT": ">i", "SMALLINT": ">h", "DOUBLE": ">d"}.get(type_text)
        if form is None:
            return struct.pack(">i", len(v.encode())) + v.encode()
        return struct.pack(form, v)

    id2rows: dict[bytes, list[int]] = {}  # keyed as Java's equals: by the value's bits
    value_of: dict[bytes, Any] = {}
    null_rows: list[int] = []
    for row, v in enumerate(values):
        if v is None:
            null_rows.append(row)
        else:
            value_of.setdefault(write(v), v)
            id2rows.setdefault(write(v), []).append(row)
    keys = sorted(value_of.values(), key=java_key)
    null_bytes = roaring(null_rows)
    offset = 0 if len(null_rows) <= 1 else len(null_bytes)
    entries, bodies = [], []
    for k in keys:
        rows = id2rows[write(k)]
        if len(rows) == 1:
            entries.append((k, -1 - rows[0], -1))
        else:
            bodies.append(roaring(rows))
            entries.append((k, offset, len(bodies[-1])))
            offset += len(bodies[-1])
    out = struct.pack(">bii?", 2, len(values), len(keys), bool(null_rows))
    if null_rows:
        out += struct.pack(">ii", -1 - null_rows[0] if len(null_rows) == 1 else 0, len(null_bytes))
    out += _model_v2_blocks(entries, write, block_size)
    if len(null_rows) > 1:
        out += null_bytes
    return out + b"".join(bodies)


@pytest.mark.parametrize("block_size", [16 * 1024, 40])
@pytest.mark.parametrize(
    ("type_text", "values"),
    [
        ("STRING", ["b", "a", "b", None, "c", None, "a", "ü", "b", "zz", "B", "a\x00"]),
        ("BIGINT", [5, 5, 7, None, -1, 2**40, 5, *([9] * 300), *range(100, 400, 3), 9, -(2**60)]),
        ("INT", [1, None, 1, 2, -7]),
        ("SMALLINT", [3, 3, -3]),
        ("DOUBLE", [1.5, -0.0, 0.0, 1.5, None, float("nan"), -2.5, float("inf")]),
        ("STRING", [None, None, None]),
        ("INT", [None]),
        ("INT", []),
    ],
)
def test_bitmap_v2_bytes_match_the_model(
    type_text: str, values: list[Any], block_size: int
) -> None:
    dtype = DataType.parse(type_text)
    body = bitmap_bytes(pa.array(values, dtype.to_arrow()), dtype, 2, block_size)
    assert body == _model_bitmap_v2(values, type_text, block_size)


def test_bitmap_may_contain_reads_both_versions() -> None:
    from lakeops.format.file_index import bitmap_may_contain

    dtype = DataType.parse("STRING")
    col = pa.array([f"v{i % 50}" for i in range(400)] + [None], pa.string())
    for version in (1, 2):
        for block in (16 * 1024, 30):
            body = bitmap_bytes(col, dtype, version, block)
            assert bitmap_may_contain(body, pa.array(["v7"]), dtype) is True
            assert bitmap_may_contain(body, pa.array(["nope", "v49"]), dtype) is True
            assert bitmap_may_contain(body, pa.array(["nope", "v50"]), dtype) is False
    assert bitmap_may_contain(b"\x03" + body[1:], pa.array(["v7"]), dtype) is None


def test_bitmap_v2_refuses_a_value_larger_than_a_block() -> None:
    dtype = DataType.parse("STRING")
    with pytest.raises(UnsupportedFeatureError, match="index-block-size"):
        bitmap_bytes(pa.array(["x" * 100]), dtype, 2, 64)
