"""Bucket assignment is Paimon's: murmur3 vectors, and every key of the golden tables."""

from __future__ import annotations

import json
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeops.format.binary_row import EncodedRows, encode_rows
from lakeops.format.bucket_hash import assign_buckets, bucket_of_hash, hash_rows, murmur3_words
from lakeops.format.types import DataType
from tests.conftest import GOLDEN


def reference_murmur3(data: bytes, seed: int = 42) -> int:
    """Textbook MurmurHash3 x86_32 over 4-byte little-endian words (no tail), per row."""
    h = seed
    for (k,) in struct.iter_unpack("<I", data):
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def test_published_vector_of_paimons_murmur() -> None:
    # Paimon's own compatibility vector (20 bytes, seed 42) -> 0xb39f33e6
    data = bytes([3, 10, 20, 30, 40, 50, 67, 89, 111, 51, 33, 67, 70, 25, 48, 10, 54, 100, 43, 21])
    rows = EncodedRows(np.frombuffer(data + bytes(4), np.uint8), np.array([0, 20]))
    assert murmur3_words(rows)[0] == np.uint32(0xB39F33E6).astype(np.int32)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=50))
def test_vectorised_hash_equals_reference(values: list[str]) -> None:
    types = [DataType.parse("STRING")]
    encoded = encode_rows([pa.array(values)], types)
    expected = [reference_murmur3(encoded.row(i)) for i in range(len(values))]
    assert hash_rows([pa.array(values)], types).tolist() == expected


def test_java_remainder_semantics() -> None:
    hashes = np.array([-7, 7, -(2**31), 2**31 - 1], dtype=np.int32)
    assert bucket_of_hash(hashes, 4).tolist() == [3, 3, 0, 3]


@pytest.mark.parametrize("warehouse", ["pypaimon-wh", "java-compacted-wh"])
def test_every_golden_key_lies_in_its_bucket(warehouse: str) -> None:
    tables = sorted((GOLDEN / warehouse / "db.db").iterdir())
    assert tables, "golden warehouse is empty"
    checked = 0
    for table_dir in tables:
        schema = json.loads((table_dir / "schema" / "schema-0").read_text())
        types = {f["name"]: DataType.parse(f["type"]) for f in schema["fields"]}
        keys = [k for k in schema["primaryKeys"] if k not in schema["partitionKeys"]]
        num_buckets = int(schema["options"]["bucket"])
        for path in table_dir.rglob("bucket-*/*.parquet"):
            bucket = int(next(p for p in path.parts if p.startswith("bucket-"))[7:])
            data = pq.read_table(path)
            got = assign_buckets([data[k] for k in keys], [types[k] for k in keys], num_buckets)
            assert (got == bucket).all(), f"{path}: keys hashed to {set(got.tolist())}"
            checked += data.num_rows
    assert checked > 1000


# --------------------------------------------------------------- fixed-width fast path
# every fixed-width key type, with edge values the random draws may miss
FIXED_WIDTH_EDGES: dict[str, list[object]] = {
    "BOOLEAN": [True, False],
    "TINYINT": [-128, 127, -1, 0],
    "SMALLINT": [-(2**15), 2**15 - 1, -1, 0],
    "INT": [-(2**31), 2**31 - 1, -1, 0],
    "BIGINT": [-(2**63), 2**63 - 1, -1, 0],
    "FLOAT": [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.5e-45],
    "DOUBLE": [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5e-324],
    "DATE": [-(2**31), 2**31 - 1, -1, 0],
    "TIME": [0, 86_399_999, 1],
    "DECIMAL(9, 2)": [-(10**7) + 0.01, 10**7 - 0.01, 0, -0.01],
    "DECIMAL(18, 0)": [-(10**18) + 1, 10**18 - 1, 0, -1],
    "TIMESTAMP(3)": [-(2**62), 2**62, -1, 0],
    "TIMESTAMP(0)": [-(2**40), 2**40, -1, 0],
    "TIMESTAMP_LTZ(3)": [-(2**62), 2**62, -1, 0],
}


def _random_fixed_width(t: DataType, rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random values of ``t`` (every bit pattern for floats: NaN payloads and signed
    zeros included), the edge values first, about a fifth of them null."""
    arrow = t.to_arrow()
    edges = next(v for k, v in FIXED_WIDTH_EDGES.items() if DataType.parse(k) == t)
    if t.root in ("FLOAT", "DOUBLE"):
        bits = rng.integers(0, 2**64, n, dtype=np.uint64)
        floats = bits.view(np.float64) if t.root == "DOUBLE" else bits.view(np.float32)[:n]
        values = pa.concat_arrays([pa.array(edges, arrow), pa.array(floats).cast(arrow)])
    elif t.root == "DECIMAL":
        scale, bound = t.scale or 0, 10 ** (t.precision or 10)
        digits = rng.integers(-bound + 1, bound, n)
        unscaled = [Decimal(str(e)) for e in edges]
        unscaled += [Decimal(int(d)).scaleb(-scale) for d in digits]
        values = pa.array(unscaled, arrow)
    elif t.root == "BOOLEAN":
        values = pa.array(edges + rng.integers(0, 2, n).astype(bool).tolist(), arrow)
    else:
        low, high = (
            min(e for e in edges if isinstance(e, int)),
            max(e for e in edges if isinstance(e, int)),
        )
        ints = rng.integers(low, high, n, dtype=np.int64, endpoint=True)
        storage = pa.int32() if t.root in ("DATE", "TIME") else pa.int64()
        values = pa.array(edges + ints.tolist(), storage).cast(arrow)
    nulls = rng.random(len(values)) < 0.2
    nulls[: len(edges)] = False
    return pc.if_else(pa.array(nulls), pa.scalar(None, arrow), values)


def _generic(columns: list[pa.Array | pa.ChunkedArray], types: list[DataType]) -> np.ndarray:
    """The general path's hashes: lay the BinaryRows out, then hash them."""
    return murmur3_words(encode_rows(columns, types))


@pytest.mark.parametrize("type_text", sorted(FIXED_WIDTH_EDGES))
def test_fixed_width_fast_path_is_bit_identical(type_text: str) -> None:
    t = DataType.parse(type_text)
    rng = np.random.default_rng(abs(hash(type_text)) % 2**32)
    values = _random_fixed_width(t, rng, 3000)
    no_nulls = values.drop_null()
    for column in (
        values,
        no_nulls,
        values.slice(7, 1500),
        pa.chunked_array([values[:5], values[5:]]),
    ):
        assert hash_rows([column], [t]).tolist() == _generic([column], [t]).tolist(), type_text
    # the whole key of every slot width, nulls in fields on both 32-bit words of the header
    # (fields 0..23 set bits of the first, 24..55 of the second) and in a 16-byte header
    types = [DataType.parse(name) for name in sorted(FIXED_WIDTH_EDGES)] * 5
    columns = [_random_fixed_width(c, rng, 400)[:400] for c in types]
    for width in (2, 25, 57, len(types)):
        assert hash_rows(columns[:width], types[:width]).tolist() == (
            _generic(columns[:width], types[:width]).tolist()
        )


def test_fixed_width_fast_path_matches_java_float_semantics() -> None:
    # every NaN hashes as Java's canonical NaN; -0.0 apart from 0.0 (the general path's rules)
    t = DataType.parse("DOUBLE")
    payload_nan = np.array([0x7FF0000000000001, 0xFFF8000000000000], np.uint64).view(np.float64)
    nans = hash_rows([pa.array(payload_nan)], [t])
    assert nans.tolist() == hash_rows([pa.array([float("nan")] * 2)], [t]).tolist()
    zeros = hash_rows([pa.array([0.0, -0.0])], [t])
    assert zeros[0] != zeros[1]


@pytest.mark.parametrize("num_buckets", [1, 2, 3, 4, 7, 16, 1000, 1024, 2**30, 2**31 - 1])
def test_bucket_of_hash_is_javas_abs_of_the_remainder(num_buckets: int) -> None:
    """Against Java's ``Math.abs(h % n)`` stated with Python integers (no overflow: Java's
    truncating remainder has the magnitude of ``|h| mod n``), powers of two included."""
    rng = np.random.default_rng(num_buckets)
    hashes = rng.integers(-(2**31), 2**31, 5000, dtype=np.int64).astype(np.int32)
    hashes[:6] = [-(2**31), 2**31 - 1, 0, -1, 1, -(2**31) + 1]
    expected = [abs(int(h)) % num_buckets for h in hashes.tolist()]
    got = bucket_of_hash(hashes, num_buckets)
    assert got.dtype == np.int32
    assert got.tolist() == expected


def test_bucket_of_hash_keeps_int64_hashes() -> None:
    hashes = np.array([-7, 7, -(2**31), 2**31 - 1], dtype=np.int64)
    assert bucket_of_hash(hashes, 4).tolist() == [3, 3, 0, 3]
    assert bucket_of_hash(hashes.astype(np.int32), 4).dtype == np.int32


def test_fixed_width_fast_path_across_chunks() -> None:
    """More rows than one chunk of the in-place mixing, the last chunk partial."""
    from lakeops.format.bucket_hash import _CHUNK_ROWS

    rng = np.random.default_rng(7)
    types = [DataType.parse("BIGINT"), DataType.parse("INT")]
    n = 2 * _CHUNK_ROWS + 123
    columns = [_random_fixed_width(t, rng, n) for t in types]
    assert hash_rows(columns, types).tolist() == _generic(columns, types).tolist()
    assert hash_rows(columns[:1], types[:1]).tolist() == _generic(columns[:1], types[:1]).tolist()
