"""Paimon-compatible bucket assignment for fixed-bucket tables.

Paimon hashes the bucket key's BinaryRow (without the serialization arity prefix) with
MurmurHash3 x86 32-bit, seed 42, reading the row as little-endian 4-byte words (rows are always
8-byte aligned, so there is no tail), then ``bucket = abs(hash % num_buckets)`` with Java's
remainder (the sign follows the dividend). FLOAT/DOUBLE fields hash their IEEE bits with every
NaN as Java's canonical ``Float.NaN``/``Double.NaN`` (:mod:`lakeops.format.floats`): all NaN keys
land in one bucket, and ``-0.0`` hashes apart from ``0.0``.

Everything here is vectorised with numpy. Two paths compute the same hashes:

* keys whose fields are all fixed-width (``DataType.fixed_width``: BOOLEAN, TINYINT … BIGINT,
  FLOAT, DOUBLE, DATE, TIME, DECIMAL with precision <= 18, TIMESTAMP / TIMESTAMP_LTZ with
  precision <= 3) give rows of one length: the null-bit header words, then the two words of every
  field's 8-byte slot. :func:`hash_rows` mixes those words column by column straight from the
  slots (:func:`lakeops.format.binary_row` computes them) without laying the rows out; header
  words that are the same for every row (no nulls there) are mixed once, as scalars;
* any other key is encoded into BinaryRows (:func:`~lakeops.format.binary_row.encode_rows`) and
  hashed by :func:`murmur3_words`, rows sorted by their length in words so each mixing round
  works on a shrinking prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.format.binary_row import EncodedRows, _fixed_slots, encode_rows, null_bits_size
from lakeops.format.types import DataType

__all__ = ["assign_buckets", "bucket_of_hash", "hash_rows", "murmur3_words"]

_SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M = np.uint32(5)
_N = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)

#: uint32 words or hash states: one per row (an array), or one shared by every row (a scalar)
Words = np.ndarray | np.uint32


def _rotl(x: Any, r: int) -> Any:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _round(h: Words, k: Words) -> Words:
    """One MurmurHash3 body round: the state ``h`` after mixing in the word ``k`` (the caller
    silences numpy's overflow warnings)."""
    mixed: Words = _rotl(_rotl(k * _C1, 15) * _C2 ^ h, 13) * _M + _N
    return mixed


def _finish(h: np.ndarray, length: np.ndarray | np.uint32) -> np.ndarray:
    """MurmurHash3's finalisation of the states ``h`` (in place) after ``length`` bytes."""
    h ^= length
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h


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
            h[:k] = _round(h[:k], words[sorted_starts[:k] + j])
        _finish(h, (sorted_counts * 4).astype(np.uint32))
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out.view(np.int32)


def _header_words(cols: Sequence[pa.Array]) -> list[Words]:
    """The 32-bit words of the rows' header (row kind 0 in byte 0, bit ``8 + i`` set when
    field ``i`` is null): a scalar for a word no null of any row touches."""
    words: list[Words] = [np.uint32(0)] * (null_bits_size(len(cols)) // 4)
    for i, arr in enumerate(cols):
        if arr.null_count:
            word, bit = divmod(i + 8, 32)
            nulls = arr.is_null().to_numpy(zero_copy_only=False).astype(np.uint32)
            words[word] = words[word] | (nulls << np.uint32(bit))
    return words


#: Arrow types whose values are their BinaryRow slot's integer as they are (zero-extended from
#: the field's width), by the root of the Paimon type they carry
_DIRECT = {
    "TINYINT": (pa.int8(), np.uint8),
    "SMALLINT": (pa.int16(), np.uint16),
    "INT": (pa.int32(), np.uint32),
    "DATE": (pa.date32(), np.uint32),
    "BIGINT": (pa.int64(), np.uint64),
}


def _slot_words(arr: pa.Array, t: DataType) -> tuple[Words, Words]:
    """The low and high 32-bit words of every row's 8-byte slot of the fixed-width field ``t``
    (as :func:`~lakeops.format.binary_row.encode_rows` writes it): integers and dates straight
    from their Arrow buffer, the rest through the encoder's own slot function."""
    direct = _DIRECT.get(t.root)
    if direct is None or arr.type != direct[0]:
        halves = _fixed_slots(arr, t).view(np.uint32)  # little-endian: low word first
        return halves[0::2], halves[1::2]
    arrow_type, unsigned = direct
    values = arr.fill_null(pa.scalar(0, arr.type)) if arr.null_count else arr
    raw = values.view(pa.int32() if arrow_type == pa.date32() else arrow_type).to_numpy()
    bits = raw.view(unsigned)
    if unsigned is np.uint64:  # strided views: the chunked mixing reads them in place
        halves = bits.view(np.uint32)
        return halves[0::2], halves[1::2]
    return bits.astype(np.uint32), np.uint32(0)


#: rows mixed at once by :func:`_hash_fixed_width`: a chunk's state and scratch words stay in
#: the CPU cache, where whole-column passes would stream every temporary through memory
_CHUNK_ROWS = 1 << 16


def _hash_fixed_width(cols: Sequence[pa.Array], types: Sequence[DataType], n: int) -> np.ndarray:
    """:func:`murmur3_words` of the BinaryRows of fixed-width ``cols`` (see the module
    docstring), without encoding them: the same words, mixed in the same order, a chunk of
    rows at a time in place (measured: 4M BIGINT keys in 11 ms, 34-190 ms by whole-column
    passes, each of which allocated its temporaries)."""
    header = _header_words(cols)
    length = np.uint32(4 * len(header) + 8 * len(cols))
    words: list[Words] = list(header)
    for arr, t in zip(cols, types, strict=True):
        words += _slot_words(arr, t)
    state: Words = np.uint32(_SEED)
    with np.errstate(over="ignore"):
        while words and not isinstance(words[0], np.ndarray):  # shared by every row
            state = _round(state, words.pop(0))
        mixed = [w if isinstance(w, np.ndarray) else _rotl(w * _C1, 15) * _C2 for w in words]
        out = np.empty(n, dtype=np.uint32)
        k = np.empty(min(n, _CHUNK_ROWS), dtype=np.uint32)
        scratch = np.empty_like(k)
        for lo in range(0, n, _CHUNK_ROWS):
            hi = min(n, lo + _CHUNK_ROWS)
            h, kk, tmp = out[lo:hi], k[: hi - lo], scratch[: hi - lo]
            h[...] = state
            for w in mixed:
                if isinstance(w, np.ndarray):  # k = rotl(w * C1, 15) * C2
                    np.multiply(w[lo:hi], _C1, out=kk)
                    _rotl_into(kk, 15, tmp)
                    kk *= _C2
                    h ^= kk
                else:
                    h ^= w
                _rotl_into(h, 13, tmp)  # h = rotl(h ^ k, 13) * 5 + N
                h *= _M
                h += _N
            _finish_into(h, length, tmp)
    result: np.ndarray = out.view(np.int32)
    return result


def _rotl_into(x: np.ndarray, r: int, scratch: np.ndarray) -> None:
    """``x = rotl(x, r)`` in place (``scratch``: a buffer of ``x``'s length)."""
    np.right_shift(x, np.uint32(32 - r), out=scratch)
    np.left_shift(x, np.uint32(r), out=x)
    x |= scratch


def _finish_into(h: np.ndarray, length: np.uint32, scratch: np.ndarray) -> None:
    """:func:`_finish` in place, shifts through ``scratch``."""
    h ^= length
    for shift, factor in ((16, _F1), (13, _F2)):
        np.right_shift(h, np.uint32(shift), out=scratch)
        h ^= scratch
        h *= factor
    np.right_shift(h, np.uint32(16), out=scratch)
    h ^= scratch


def hash_rows(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
) -> np.ndarray:
    """Paimon's ``BinaryRow.hashCode()`` of each row given column-wise (int32 array)."""
    if types and all(t.fixed_width is not None for t in types):
        cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        return _hash_fixed_width(cols, types, len(cols[0]))
    return murmur3_words(encode_rows(columns, types))


def bucket_of_hash(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """``abs(hash % num_buckets)`` with Java's truncating remainder, as int32 (numpy's integer
    ``fmod`` truncates as Java's ``%`` does; int32 hashes stay int32, as ``|remainder| <
    num_buckets`` cannot overflow)."""
    if hashes.dtype == np.int32 and 0 < num_buckets < 2**31:
        if num_buckets & (num_buckets - 1) == 0:
            # a power of two: |h % n| is |h| mod n, the low bits of |h| (|MIN_VALUE| wraps to
            # 2**31, whose low bits are 0, and MIN_VALUE % n is 0)
            low: np.ndarray = np.abs(hashes).view(np.uint32) & np.uint32(num_buckets - 1)
            return low.view(np.int32)
        narrow: np.ndarray = np.abs(np.fmod(hashes, np.int32(num_buckets)))
        return narrow
    h = hashes.astype(np.int64)
    return np.abs(np.fmod(h, num_buckets)).astype(np.int32)


def assign_buckets(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType], num_buckets: int
) -> np.ndarray:
    """The fixed bucket of every row, exactly as Paimon computes it."""
    return bucket_of_hash(hash_rows(columns, types), num_buckets)
