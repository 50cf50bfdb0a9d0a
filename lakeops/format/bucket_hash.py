"""Paimon-compatible bucket assignment for fixed-bucket tables.

Paimon hashes the bucket key's BinaryRow (without the serialization arity prefix) with
MurmurHash3 x86 32-bit, seed 42, reading the row as little-endian 4-byte words (rows are always
8-byte aligned, so there is no tail), then ``bucket = abs(hash % num_buckets)`` with Java's
remainder (the sign follows the dividend). FLOAT/DOUBLE fields hash their IEEE bits with every
NaN as Java's canonical ``Float.NaN``/``Double.NaN`` (:mod:`lakeops.format.floats`): all NaN keys
land in one bucket, and ``-0.0`` hashes apart from ``0.0``. Everything here is vectorised with
numpy: rows are sorted by their length in words so each mixing round works on a shrinking prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeops.format.binary_row import EncodedRows, encode_rows
from lakeops.format.types import DataType

__all__ = ["assign_buckets", "bucket_of_hash", "hash_rows", "murmur3_words"]

_SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_words(rows: EncodedRows) -> np.ndarray:
    """MurmurHash3 (x86, 32-bit, seed 42) of every encoded row, as signed int32."""
    n = len(rows)
    words = rows.buffer.view("<u4")
    start_words = rows.offsets[:-1] // 4
    num_words = (np.diff(rows.offsets) // 4).astype(np.int64)
    order = np.argsort(-num_words, kind="stable")
    sorted_counts = num_words[order]
    sorted_starts = start_words[order]
    h = np.full(n, _SEED, dtype=np.uint32)
    max_words = int(sorted_counts[0]) if n else 0
    # rows with more than j words form a prefix of `order` of length active[j]
    active = np.searchsorted(-sorted_counts, -np.arange(max_words), side="left")
    with np.errstate(over="ignore"):
        for j in range(max_words):
            k = int(active[j])
            k1 = words[sorted_starts[:k] + j] * _C1
            k1 = _rotl(k1, 15) * _C2
            hk = h[:k] ^ k1
            h[:k] = _rotl(hk, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= (sorted_counts * 4).astype(np.uint32)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out.view(np.int32)


def hash_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
) -> np.ndarray:
    """Paimon's ``BinaryRow.hashCode()`` of each row given column-wise (int32 array)."""
    return murmur3_words(encode_rows(columns, types))


def bucket_of_hash(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``abs(hash % num_buckets)`` with Java's truncating remainder, as int32."""
    h = hashes.astype(np.int64)
    return np.abs(np.fmod(h, num_buckets)).astype(np.int32)


def assign_buckets(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int
) -> np.ndarray:
    """The fixed bucket of every row, exactly as Paimon computes it."""
    return bucket_of_hash(hash_rows(columns, types), num_buckets)
