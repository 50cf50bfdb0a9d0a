"""Deletion-vector blobs and index files, against blobs built here from Paimon's layout (a plain
model of ``BitmapDeletionVector`` / ``Bitmap64DeletionVector`` serialization)."""

from __future__ import annotations

import struct
import zlib

import pyroaring
import pytest

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.deletion_vector import (
    DELETION_VECTORS_INDEX,
    DeletionFile,
    blob,
    decode_deletion_vector,
    deletion_files,
    encode_index_file,
    iceberg_blob,
    roll_blobs,
)
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry, combine

POSITIONS = [0, 3, 4, 70_000, 2_000_000]


def _crc(data: bytes) -> bytes:
    return struct.pack(">I", zlib.crc32(data))


def blob32(positions: list[int]) -> bytes:
    """Paimon 0.9: length, magic (big-endian) + portable bitmap, CRC of both."""
    body = struct.pack(">i", 1581511376) + pyroaring.BitMap(positions).serialize()
    return struct.pack(">i", len(body)) + body + _crc(body)


def blob64(positions: list[int]) -> bytes:
    """Paimon 1.x bitmap64: length, magic (little-endian), bitmap count, key 0, bitmap, CRC."""
    body = (
        struct.pack("<i", 1681511377)
        + struct.pack("<q", 1)
        + struct.pack("<i", 0)
        + pyroaring.BitMap(positions).serialize()
    )
    return struct.pack(">i", len(body)) + body + _crc(body)


def _file(*blobs: bytes) -> tuple[bytes, list[DeletionFile]]:
    data = bytearray([1])
    files = []
    for b in blobs:
        (n,) = struct.unpack_from(">i", b)
        is64 = struct.unpack_from("<i", b, 4)[0] == 1681511377
        files.append(DeletionFile("idx", len(data), len(b) if is64 else n))
        data += b
    return bytes(data), files


@pytest.mark.parametrize("make", [blob32, blob64], ids=["32-bit", "64-bit"])
def test_decodes_the_positions_of_each_blob(make) -> None:
    data, (a, b) = _file(make(POSITIONS), make([7]))
    assert decode_deletion_vector(data, a, "idx").tolist() == POSITIONS
    assert decode_deletion_vector(data, b, "idx").tolist() == [7]


def test_damaged_blobs_are_corrupt_never_guessed() -> None:
    data, (df,) = _file(blob32(POSITIONS))
    flipped = bytearray(data)
    flipped[-6] ^= 0xFF  # inside the bitmap: the CRC no longer matches
    with pytest.raises(CorruptTableError, match="checksum"):
        decode_deletion_vector(bytes(flipped), df, "idx")
    with pytest.raises(CorruptTableError, match="manifest says"):
        decode_deletion_vector(data, DeletionFile("idx", df.offset, df.length + 1), "idx")
    with pytest.raises(CorruptTableError, match="version"):
        decode_deletion_vector(b"\x02" + data[1:], df, "idx")
    with pytest.raises(CorruptTableError, match="outside"):
        decode_deletion_vector(data, DeletionFile("idx", len(data), df.length), "idx")


def test_64_bit_positions_past_2_to_the_32_are_refused() -> None:
    body = struct.pack("<i", 1681511377) + struct.pack("<q", 2) + struct.pack("<i", 0)
    body += pyroaring.BitMap([1]).serialize() + struct.pack("<i", 1)
    body += pyroaring.BitMap([2]).serialize()
    b = struct.pack(">i", len(body)) + body + _crc(body)
    data, (df,) = _file(b)
    with pytest.raises(UnsupportedFeatureError, match="2\\^32"):
        decode_deletion_vector(data, df, "idx")


def test_rewritten_index_file_copies_blobs_unchanged() -> None:
    data, files = _file(blob32([1, 2]), blob64(POSITIONS), blob32([9]))
    kept = [
        ("f-a", blob(data, files[1], "idx"), files[1]),
        ("f-b", blob(data, files[2], "idx"), files[2]),
    ]
    content, ranges = encode_index_file(kept)
    assert content[0] == 1 and [r["f0"] for r in ranges] == ["f-a", "f-b"]
    new = [DeletionFile("new", r["f1"], r["f2"]) for r in ranges]
    assert decode_deletion_vector(content, new[0], "new").tolist() == POSITIONS
    assert decode_deletion_vector(content, new[1], "new").tolist() == [9]
    assert len(content) == 1 + len(kept[0][1]) + len(kept[1][1])


def _dv_entry(kind: int, name: str, data_files: list[str], bucket: int = 0) -> IndexManifestEntry:
    ranges = [{"f0": f, "f1": 1 + 30 * i, "f2": 22} for i, f in enumerate(data_files)]
    meta = IndexFileMeta(
        DELETION_VECTORS_INDEX, name, 100, len(ranges), (("_DELETIONS_VECTORS_RANGES", ranges),)
    )
    return IndexManifestEntry(kind, b"p", bucket, meta)


def test_deletion_files_by_data_file_and_a_file_in_two_index_files_is_corrupt() -> None:
    entries = [_dv_entry(0, "i1", ["d1", "d2"]), _dv_entry(0, "i2", ["d3"], bucket=1)]
    got = deletion_files(entries, {"i1": "/t/index/i1"})
    assert got[(b"p", 0, "d2")] == DeletionFile("/t/index/i1", 31, 22)
    assert got[(b"p", 1, "d3")].path == "i2"
    with pytest.raises(CorruptTableError, match="two index files"):
        deletion_files([_dv_entry(0, "i1", ["d1"]), _dv_entry(0, "i2", ["d1"])])


def test_unaware_bucket_deletion_vector_entries_combine_by_file_name() -> None:
    """Paimon's UnawareBucketCombiner: a partition keeps many index files at bucket 0; the
    bucketed combiner keeps one per (partition, bucket, type)."""
    previous = [_dv_entry(0, "i1", ["d1"]), _dv_entry(0, "i2", ["d2"])]
    changes = [_dv_entry(1, "i1", ["d1"]), _dv_entry(0, "i3", ["d3"])]
    names = sorted(e.file.file_name for e in combine(previous, changes, unaware_bucket=True))
    assert names == ["i2", "i3"]
    assert [e.file.file_name for e in combine(previous, changes)] == ["i3"]


@pytest.mark.parametrize("target", [1, 40, 100, 1 << 20])
def test_roll_blobs_closes_a_file_once_a_vector_takes_it_past_the_target(target: int) -> None:
    """Paimon's ``writeWithRolling``: a file takes vectors in order until its size (version
    byte included) exceeds the target; the model counts positions as the writer does."""
    sizes = [32, 8, 70, 12, 12, 12, 200, 9]
    blobs = [(f"f{i}", bytes(n), None) for i, n in enumerate(sizes)]
    groups = roll_blobs(blobs, target)  # type: ignore[arg-type]
    assert [b for g in groups for b in g] == blobs and all(groups)
    for g in groups[:-1]:
        assert 1 + sum(len(b[1]) for b in g) > target  # closed past the target
        assert 1 + sum(len(b[1]) for b in g[:-1]) <= target  # ... by its last vector
    assert 1 + sum(len(b[1]) for b in groups[-1][:-1]) <= target


def _iceberg_positions(data: bytes) -> list[int]:
    """The positions of an Iceberg ``deletion-vector-v1`` blob, read by its spec: length of
    magic + vector (big-endian), magic D1 D3 39 64, a portable 64-bit roaring bitmap (count,
    then per bitmap its key and a 32-bit portable bitmap), CRC-32 of magic + vector."""
    (n,) = struct.unpack_from(">i", data)
    body = data[4 : 4 + n]
    assert len(data) == n + 8 and data[4 + n :] == _crc(body)
    assert body[:4] == bytes.fromhex("D1D33964")
    (count,) = struct.unpack_from("<q", body, 4)
    out: list[int] = []
    rest = body[12:]
    for _ in range(count):
        (key,) = struct.unpack_from("<i", rest)
        bitmap = pyroaring.BitMap.deserialize(rest[4:])
        out += [(key << 32) + p for p in bitmap]
        rest = rest[4 + len(bitmap.serialize()) :]
    return out


@pytest.mark.parametrize("make", [blob32, blob64], ids=["32-bit", "64-bit"])
def test_iceberg_blobs_hold_the_same_positions(make) -> None:
    """A 64-bit blob is Iceberg's layout already and is copied; a 32-bit one is re-encoded."""
    data, files = _file(blob32([9]), make(POSITIONS))
    out, cardinality = iceberg_blob(data, files[1], "idx")
    assert _iceberg_positions(out) == POSITIONS and cardinality == len(POSITIONS)
    if make is blob64:
        assert out == blob64(POSITIONS)
