"""BLOB file decoding (lakeops.format.blob_file) against files encoded here straight from the
spec of Paimon's BlobFormatWriter (records, delta zigzag varint index, footer), and checked
against real pypaimon files in tests/interop/test_blob_read_interop.py."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from lakeops.errors import CorruptDataFileError, UnsupportedFeatureError
from lakeops.format.blob_file import (
    MAGIC,
    decode_blob_file,
    decode_blob_versions,
    decode_index,
    encode_blob_file,
    is_blob_file,
)


def _varint(value: int) -> bytes:
    z = value << 1 if value >= 0 else ((-value) << 1) - 1
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _encode(values: list[bytes | None], lengths: list[int] | None = None) -> bytes:
    body = bytearray()
    out_lengths = []
    for v in values:
        if v is None:
            out_lengths.append(-1)
            continue
        record = struct.pack("<I", MAGIC) + v
        length = len(record) + 12
        record += struct.pack("<Q", length)
        record += struct.pack("<I", zlib.crc32(record) & 0xFFFFFFFF)
        body += record
        out_lengths.append(length)
    lengths = out_lengths if lengths is None else lengths
    index = bytearray()
    prev = 0
    for i, n in enumerate(lengths):
        index += _varint(n if i == 0 else n - prev)
        prev = n
    return bytes(body) + bytes(index) + struct.pack("<IB", len(index), 1)


def test_random_files_decode_to_their_values() -> None:
    rng = random.Random(5)
    for _ in range(50):
        values: list[bytes | None] = []
        for _ in range(rng.randrange(0, 30)):
            kind = rng.random()
            if kind < 0.2:
                values.append(None)
            elif kind < 0.3:
                values.append(b"")
            else:
                values.append(rng.randbytes(rng.choice([1, 7, 200, 70_000])))
        got = decode_blob_file(_encode(values), "t.blob")
        assert got.to_pylist() == values
        assert got.null_count == sum(v is None for v in values)


def test_encoded_files_are_the_spec_s_bytes() -> None:
    """lakeops' writer gives byte for byte what the row-at-a-time model of Paimon's
    BlobFormatWriter gives (records, CRCs, index, footer), nulls and empty values included."""
    import pyarrow as pa

    rng = random.Random(9)
    for _ in range(40):
        values: list[bytes | None] = [
            None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 1, 127, 128, 70_000]))
            for _ in range(rng.randrange(0, 25))
        ]
        assert encode_blob_file(pa.array(values, pa.large_binary())) == _encode(values)


def test_index_is_delta_zigzag_varints() -> None:
    nums = [16, -1, 300, 300, -1, -1, 1 << 40, 17]
    raw = b"".join(_varint(n - p) for n, p in zip(nums, [0, *nums[:-1]], strict=True))
    assert decode_index(raw, "t.blob").tolist() == nums
    assert is_blob_file("data-1-0.blob") and not is_blob_file("data-1-0.parquet")


def test_corrupt_files_and_placeholders_are_refused() -> None:
    good = _encode([b"abc", b"de"])
    bad_magic = b"\x00" + good[1:]
    with pytest.raises(CorruptDataFileError, match="magic"):
        decode_blob_file(bad_magic, "t.blob")
    with pytest.raises(CorruptDataFileError, match="index"):
        decode_blob_file(_encode([b"abc"], lengths=[99]), "t.blob")
    with pytest.raises(UnsupportedFeatureError, match="placeholder"):
        decode_blob_file(_encode([b"abc"], lengths=[19, -2]), "t.blob")
    with pytest.raises(UnsupportedFeatureError, match="version"):
        decode_blob_file(good[:-1] + b"\x02", "t.blob")
    with pytest.raises(CorruptDataFileError):
        decode_blob_file(b"\x01", "t.blob")


def test_placeholders_decode_marked_and_encode_as_written_here() -> None:
    """A placeholder (length -2) holds no record: it decodes as null and marked, and
    ``encode_blob_file`` writes the same bytes as the hand encoding, whatever value the
    placeholder row carries."""
    values: list[bytes | None] = [None, b"abc", None, b"", None]
    lengths = [-2, 4 + 3 + 12, -1, 16, -2]
    data = _encode(values, lengths)
    got, placeholders = decode_blob_versions(data, "t.blob")
    assert got.to_pylist() == values
    assert placeholders.tolist() == [True, False, False, False, True]
    import numpy as np
    import pyarrow as pa

    carried = pa.array([b"ignored", b"abc", None, b"", None], pa.large_binary())
    assert encode_blob_file(carried, np.array(placeholders)) == data
