"""Bucket assignment is Paimon's: murmur3 vectors, and every key of the golden tables."""

from __future__ import annotations

import json
import struct

import numpy as np
import pyarrow as pa
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
