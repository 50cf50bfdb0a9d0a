"""BLOB files (``*.blob``): the values of one BLOB column of some rows, as Paimon's
``BlobFileFormat`` / pypaimon's ``BlobFormatWriter`` write them (version 1).

Layout, little endian throughout:

* one **record** per non-null row, back to back from offset 0: magic ``1481511375``
  (uint32), the value's bytes, the record's whole length (uint64: magic + value + 12) and a
  CRC32 of everything before it in the record (uint32);
* the **index**: the record length of every row in order (``-1``: null, ``-2``: a
  placeholder that falls back to an older file of the row, written by updates of BLOB
  columns), delta-encoded zigzag varints (Paimon's ``DeltaVarintCompressor``);
* the **footer**: the index length (uint32) and the version byte (``1``).

A null row's record takes no bytes; row ``i``'s record starts at the sum of the lengths of
the non-null rows before it. Which column and rows a file holds is in its manifest entry
(``_WRITE_COLS``: the column; ``_FIRST_ROW_ID``: the first row), not in the file.

Decoding works on whole arrays (numpy), and checks the footer, every record's magic number
and recorded length; placeholders come out marked (:func:`decode_blob_versions`), for the
reader of a row range to take those rows from older files. Encoding
(:func:`encode_blob_file`) writes the same layout: the records and index as whole arrays,
the CRC of each record by ``zlib.crc32`` over its bytes (one call per value: BLOB values are
few and large).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import CorruptDataFileError, UnsupportedFeatureError

__all__ = [
    "BLOB_EXTENSION",
    "MAGIC",
    "decode_blob_file",
    "decode_blob_versions",
    "decode_index",
    "encode_blob_file",
    "encode_index",
    "is_blob_file",
]

BLOB_EXTENSION = "blob"
MAGIC = 1481511375
_VERSION = 1
_NULL = -1
_PLACEHOLDER = -2
#: magic (4) before the value; length (8) and CRC (4) after it
_HEAD, _TAIL = 4, 12


def is_blob_file(file_name: str) -> bool:
    """Whether ``file_name`` is a BLOB file (Paimon's ``BlobFileFormat.isBlobFile``)."""
    return file_name.endswith("." + BLOB_EXTENSION)


def decode_index(index: bytes, source: str) -> np.ndarray:
    """The record lengths (int64) a BLOB file's index holds (delta zigzag varints)."""
    raw = np.frombuffer(index, dtype=np.uint8)
    if raw.size == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(raw < 0x80)
    if ends.size == 0 or ends[-1] != raw.size - 1:
        raise CorruptDataFileError(f"BLOB file {source}: its index ends inside a number")
    starts = np.concatenate(([0], ends[:-1] + 1))
    widths = ends - starts + 1
    if widths.max() > 10:
        raise CorruptDataFileError(f"BLOB file {source}: its index holds an overlong number")
    shift = (np.arange(raw.size) - np.repeat(starts, widths)) * 7
    parts = (raw & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    zigzag = np.add.reduceat(parts, starts)
    deltas = (zigzag >> np.uint64(1)).astype(np.int64) ^ -(zigzag & np.uint64(1)).astype(np.int64)
    return np.cumsum(deltas)


def encode_index(lengths: np.ndarray) -> bytes:
    """``lengths`` (int64) as a BLOB file's index: deltas from the previous length (the first
    from 0), zigzag-encoded, as little-endian base-128 varints."""
    if lengths.size == 0:
        return b""
    deltas: np.ndarray = np.diff(lengths.astype(np.int64), prepend=0).astype(np.int64)
    zigzag = (np.left_shift(deltas, 1) ^ np.right_shift(deltas, 63)).astype(np.uint64)
    # bytes per number: 1 + the 7-bit groups above the first
    widths = np.ones(zigzag.size, dtype=np.int64)
    rest = zigzag >> np.uint64(7)
    while np.any(rest):
        widths += (rest > 0).astype(np.int64)
        rest = rest >> np.uint64(7)
    owner = np.repeat(np.arange(zigzag.size), widths)
    starts = np.concatenate(([0], np.cumsum(widths)[:-1]))
    group = np.arange(owner.size) - np.repeat(starts, widths)
    groups = (zigzag[owner] >> (group * 7).astype(np.uint64)) & np.uint64(0x7F)
    last = group == np.repeat(widths, widths) - 1
    encoded: bytes = (groups | np.where(last, 0, 0x80).astype(np.uint64)).astype(np.uint8).tobytes()
    return encoded


def encode_blob_file(
    values: pa.Array | pa.ChunkedArray, placeholders: np.ndarray | None = None
) -> bytes:
    """The bytes of a BLOB file holding ``values`` (binary; nulls become null rows, and the
    rows ``placeholders`` marks placeholders, whatever ``values`` holds there)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], pa.large_binary())
    values = values.cast(pa.large_binary())
    if placeholders is not None and placeholders.any():
        values = pc.if_else(pa.array(placeholders), pa.scalar(None, pa.large_binary()), values)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    sizes = pc.binary_length(values).to_numpy(zero_copy_only=False)
    lengths = np.where(valid, np.nan_to_num(sizes, nan=0).astype(np.int64) + _HEAD + _TAIL, _NULL)
    if placeholders is not None:
        lengths = np.where(placeholders, _PLACEHOLDER, lengths)
    out = bytearray()
    magic = struct.pack("<I", MAGIC)
    for value, length in zip(values.to_pylist(), lengths.tolist(), strict=True):
        if value is None:
            continue
        record = magic + value + struct.pack("<Q", length)
        out += record
        out += struct.pack("<I", zlib.crc32(record) & 0xFFFFFFFF)
    index = encode_index(lengths)
    out += index
    out += struct.pack("<IB", len(index), _VERSION)
    return bytes(out)


def _u32(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    b = [buf[at + k].astype(np.uint64) << np.uint64(8 * k) for k in range(4)]
    out: np.ndarray = b[0] | b[1] | b[2] | b[3]
    return out


def _u64(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    out: np.ndarray = _u32(buf, at) | (_u32(buf, at + 4) << np.uint64(32))
    return out


def decode_blob_file(data: bytes, source: str) -> pa.LargeBinaryArray:
    """Every row's value of a BLOB file's bytes (null rows null), in row order; a file holding
    placeholders is refused (they need the file's older versions:
    :func:`decode_blob_versions`)."""
    values, placeholders = decode_blob_versions(data, source)
    if placeholders.any():
        raise UnsupportedFeatureError(
            f"BLOB file {source} holds placeholders (rows whose value an older file holds, "
            "written by an update of the BLOB column); read it with the files of its row range"
        )
    return values


def decode_blob_versions(data: bytes, source: str) -> tuple[pa.LargeBinaryArray, np.ndarray]:
    """Every row's value of a BLOB file's bytes, in row order (null rows and placeholders
    null), and which rows are placeholders (bool: their value is in an older file of the row,
    written before an update of the BLOB column)."""
    if len(data) < 5:
        raise CorruptDataFileError(f"BLOB file {source} is shorter than its footer")
    index_length, version = struct.unpack_from("<IB", data, len(data) - 5)
    if version != _VERSION:
        raise UnsupportedFeatureError(
            f"BLOB file {source} has format version {version}; lakeops reads version 1"
        )
    index_start = len(data) - 5 - index_length
    if index_start < 0:
        raise CorruptDataFileError(f"BLOB file {source}: its index is longer than the file")
    lengths = decode_index(data[index_start : len(data) - 5], source)
    placeholders = lengths == _PLACEHOLDER
    valid = lengths >= 0
    if np.any(lengths[valid] < _HEAD + _TAIL) or np.any(
        (lengths[~valid] != _NULL) & ~placeholders[~valid]
    ):
        raise CorruptDataFileError(f"BLOB file {source}: its index holds an invalid length")
    sizes = np.where(valid, lengths, 0)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    if offsets[-1] != index_start:
        raise CorruptDataFileError(
            f"BLOB file {source}: its records take {int(offsets[-1])} bytes, but its index "
            f"starts at byte {index_start}"
        )
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = offsets[:-1][valid]
    if starts.size and np.any(_u32(buf, starts) != MAGIC):
        raise CorruptDataFileError(f"BLOB file {source}: a record lacks the magic number")
    ends = starts + lengths[valid]
    if starts.size and np.any(_u64(buf, ends - _TAIL) != lengths[valid].astype(np.uint64)):
        raise CorruptDataFileError(f"BLOB file {source}: a record's length field is wrong")
    # the values' bytes, back to back: mark [start + 4, end - 12) of every record
    marks = np.zeros(len(buf) + 1, dtype=np.int64)
    np.add.at(marks, starts + _HEAD, 1)
    np.add.at(marks, ends - _TAIL, -1)
    values = buf[np.cumsum(marks[:-1]) > 0]
    value_sizes = np.where(valid, sizes - _HEAD - _TAIL, 0)
    value_offsets = np.concatenate(([0], np.cumsum(value_sizes))).astype(np.int64)
    validity = pa.array(valid).buffers()[1] if not valid.all() else None
    decoded = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(lengths),
        [validity, pa.py_buffer(value_offsets.tobytes()), pa.py_buffer(values.tobytes())],
        null_count=int((~valid).sum()),
    )
    return decoded, placeholders
