"""Paimon's ``range-bitmap`` file index bytes, judged by a plain row-at-a-time model of Java's
``RangeBitmap.Appender`` / ``ChunkedDictionary.Appender`` / ``FixedLengthChunk`` /
``VariableLengthChunk`` / ``BitSliceIndexBitmap.Appender`` written from Paimon 1.x's source
(Paimon 0.9 has no range-bitmap and pypaimon 2.1 reads none), bitmaps by pyroaring."""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.range_bitmap import range_bitmap_bounds, range_bitmap_bytes
from lakeops.format.types import DataType

FORMS = {"BIGINT": ">q", "INT": ">i", "SMALLINT": ">h", "TINYINT": ">b", "DOUBLE": ">d"}


def _roaring(rows: list[int]) -> bytes:
    import pyroaring

    bm = pyroaring.BitMap(rows)
    bm.run_optimize()
    return bytes(bm.serialize())


def _ser(v: Any, type_text: str) -> bytes:
    if type_text == "STRING":
        return struct.pack(">i", len(v.encode())) + v.encode()
    if type_text == "BOOLEAN":
        return b"\x01" if v else b"\x00"
    if type_text.startswith("DECIMAL"):
        return struct.pack(">q", int(v.scaleb(-v.as_tuple().exponent)))
    return struct.pack(FORMS[type_text], v)


def _order(v: Any, type_text: str) -> Any:
    if type_text == "STRING":
        return v.encode()
    if type_text == "DOUBLE":  # Double.compare
        return (math.isnan(v), v, math.copysign(1.0, v))
    return v


def _model_dictionary(ser: list[bytes], variable: bool, chunk: int) -> bytes:
    """``ChunkedDictionary.Appender`` + its chunks, one sorted value at a time."""
    headers, areas, keys_offset, current = [], [], 0, None
    for code, s in enumerate(ser):
        if current is not None:
            first, first_code, taken = current
            if variable:
                fits = len(s) <= chunk - sum(len(t) for t in taken) and chunk - 4 * len(taken) >= 4
            else:
                fits = len(s) <= chunk - sum(len(t) for t in taken)
            if fits:
                taken.append(s)
                continue
            headers.append((first, first_code, taken, keys_offset))
            keys_offset += sum(len(t) for t in taken) + (4 * len(taken) if variable else 0)
        current = (s, code, [])
    if current is not None:
        headers.append((current[0], current[1], current[2], keys_offset))
    heads, offs = b"", b""
    for first, code, taken, at in headers:
        offs += struct.pack(">i", len(heads))
        area = b"".join(taken)
        if variable:
            pos, o = 0, b""
            for t in taken:
                o += struct.pack(">i", pos)
                pos += len(t)
            heads += (
                b"\x01" + first + struct.pack(">iiiii", code, at, len(taken), len(o), len(area))
            )
            areas.append(o + area)
        else:
            heads += (
                b"\x01" + first + struct.pack(">iiiii", code, at, len(taken), len(area), len(first))
            )
            areas.append(area)
    dictionary = struct.pack(">ibiii", 13, 1, len(headers), len(offs), len(heads)) + offs + heads
    dictionary += b"".join(areas)
    return dictionary


def _model_bsi(rows_of_code: list[list[int]]) -> bytes:
    """``BitSliceIndexBitmap.Appender(0, codes - 1)``, one (row, code) at a time."""
    top = len(rows_of_code) - 1
    # Java: max(Long.SIZE - Long.numberOfLeadingZeros(max), 1), max an int widened to a long
    n_slices = max((top & (2**64 - 1)).bit_length(), 1)
    slices: list[list[int]] = [[] for _ in range(n_slices)]
    ebm: list[int] = []
    for code, rids in enumerate(rows_of_code):
        for rid in rids:
            for b in range(n_slices):
                if code >> b & 1:
                    slices[b].append(rid)
            ebm.append(rid)
    ebm_bytes, bodies = _roaring(sorted(ebm)), [_roaring(sorted(x)) for x in slices]
    index, at = b"", 0
    for body in bodies:
        index += struct.pack(">ii", at, len(body))
        at += len(body)
    bsi = struct.pack(">ibbii", 10 + len(index), 1, n_slices, len(ebm_bytes), len(index))
    bsi += index + ebm_bytes + b"".join(bodies)
    return bsi


def _model(values: list[Any], type_text: str, chunk: int) -> bytes:
    tree: dict[bytes, list[int]] = {}  # the TreeMap, keyed as Java compares (bits for doubles)
    value_of: dict[bytes, Any] = {}
    for rid, v in enumerate(values):
        if v is not None:
            value_of.setdefault(_ser(v, type_text), v)
            tree.setdefault(_ser(v, type_text), []).append(rid)
    keys = sorted(value_of.values(), key=lambda v: _order(v, type_text))
    ser = [_ser(k, type_text) for k in keys]
    dictionary = _model_dictionary(ser, type_text == "STRING", chunk)
    bsi = _model_bsi([tree[x] for x in ser])
    header = struct.pack(">bii", 1, len(values), len(keys))
    if keys:
        header += ser[0] + ser[-1]
    header += struct.pack(">i", len(dictionary))
    return struct.pack(">i", len(header)) + header + dictionary + bsi


CASES = [
    ("STRING", ["b", "a", "b", None, "c", None, "a", "ü", "b", "zz", "B", "a\x00", "abcdefgh"]),
    ("BIGINT", [5, 5, 7, None, -1, 2**40, 5, *([9] * 30), *range(100, 400, 3), 9, -(2**60)]),
    ("INT", [1, None, 1, 2, -7]),
    ("SMALLINT", [3, 3, -3, None, 300]),
    ("TINYINT", [3, 3, -3]),
    ("BOOLEAN", [True, False, None, True]),
    ("DOUBLE", [1.5, -0.0, 0.0, 1.5, None, float("nan"), -2.5, float("inf")]),
    ("DECIMAL(10, 2)", [Decimal("1.50"), Decimal("-3.25"), None, Decimal("1.50")]),
    ("STRING", [None, None, None]),
    ("INT", [7]),
    ("INT", []),
]


@pytest.mark.parametrize("chunk", [None, 0, 9, 16])
@pytest.mark.parametrize(("type_text", "values"), CASES)
def test_range_bitmap_bytes_match_the_model(
    type_text: str, values: list[Any], chunk: int | None
) -> None:
    dtype = DataType.parse(type_text)
    default = 0 if type_text in ("BOOLEAN", "TINYINT", "SMALLINT") else 16 * 1024
    body = range_bitmap_bytes(pa.array(values, dtype.to_arrow()), dtype, chunk)
    assert body == _model(values, type_text, default if chunk is None else chunk)


def test_bounds_read_back_min_and_max() -> None:
    dtype = DataType.parse("BIGINT")
    body = range_bitmap_bytes(pa.array([5, None, -2, 9], pa.int64()), dtype)
    assert range_bitmap_bounds(body, dtype) == (3, struct.pack(">q", -2), struct.pack(">q", 9))
    empty = range_bitmap_bytes(pa.array([None], pa.int64()), dtype)
    assert range_bitmap_bounds(empty, dtype) == (0, b"", b"")


def test_types_paimon_cannot_index_are_refused() -> None:
    for text in ("BYTES", "DECIMAL(20, 2)", "TIMESTAMP(9)"):
        dtype = DataType.parse(text)
        with pytest.raises(UnsupportedFeatureError, match="range-bitmap"):
            range_bitmap_bytes(pa.array([], dtype.to_arrow()), dtype)
