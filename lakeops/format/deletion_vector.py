"""Deletion-vector index files (``DELETION_VECTORS`` entries of an index manifest).

A deletion vector marks rows of one data file as deleted by their **position** in the file
(0-based, in file order). Paimon keeps the vectors of a (partition, bucket) in index files:

* an **index file** is one version byte (``1``) followed by blobs; its index-manifest entry's
  ``_DELETIONS_VECTORS_RANGES`` lists, per data file name, where its blob starts (``f1``: the
  offset of the blob's length field) and ``f2`` (a length, see below);
* a **32-bit blob** (Paimon 0.9's only kind, ``BitmapDeletionVector``) is: length ``n`` (int32
  big-endian) = ``f2``; ``n`` bytes = magic ``1581511376`` (int32 big-endian) + a RoaringBitmap
  in the portable serialization; CRC-32 of those ``n`` bytes (int32 big-endian);
* a **64-bit blob** (``deletion-vectors.bitmap64``, Paimon 1.x) is: length ``n`` (int32
  big-endian) = ``f2 - 8``; ``n`` bytes = magic ``1681511377`` (int32 little-endian) + a 64-bit
  roaring bitmap (bitmap count as int64 little-endian, then per bitmap its high 32 bits as an
  int32 little-endian and a portable RoaringBitmap of the low 32 bits); CRC-32 of the ``n`` bytes.

Tables with buckets keep one index file per bucket; unaware-bucket append tables keep any number
per partition, all at bucket 0, each listing the data files whose vectors it holds.
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyroaring

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format.index_manifest import DELETION_VECTORS_INDEX, IndexManifestEntry

__all__ = [
    "DELETION_VECTORS_INDEX",
    "DeletionFile",
    "blob",
    "decode_deletion_vector",
    "deletion_files",
    "encode_blob",
    "encode_index_file",
    "iceberg_blob",
    "roll_blobs",
]

_VERSION_V1 = 1
_MAGIC_32 = 1581511376
_MAGIC_64 = 1681511377


@dataclass(frozen=True)
class DeletionFile:
    """Where the deletion vector of one data file is: index file ``path`` (storage path),
    blob ``offset`` and ``length`` as the index manifest records them, ``cardinality`` (rows
    deleted) when recorded."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


def deletion_files(
    entries: Iterable[IndexManifestEntry], path_of: Mapping[str, str] | None = None
) -> dict[tuple[bytes, int, str], DeletionFile]:
    """The deletion file of each data file, keyed by (partition, bucket, data file name), from
    a snapshot's live index entries (``path_of``: storage path by index file name; the name
    itself when absent). Entries of other index types are ignored."""
    out: dict[tuple[bytes, int, str], DeletionFile] = {}
    for e in entries:
        if e.file.index_type != DELETION_VECTORS_INDEX:
            continue
        path = (path_of or {}).get(e.file.file_name, e.file.file_name)
        for r in dict(e.file.extra).get("_DELETIONS_VECTORS_RANGES") or ():
            key = (e.partition, e.bucket, str(r["f0"]))
            card = r.get("_CARDINALITY")
            df = DeletionFile(path, int(r["f1"]), int(r["f2"]), None if card is None else int(card))
            if key in out and out[key] != df:
                raise CorruptTableError(
                    f"data file {key[2]} has deletion vectors in two index files "
                    f"({out[key].path} and {path})"
                )
            out[key] = df
    return out


def blob(data: bytes, df: DeletionFile, source: str) -> bytes:
    """The whole stored blob of ``df`` (length field, bitmap data, CRC) in index file bytes
    ``data``, after checking it decodes (:func:`decode_deletion_vector`): what a rewritten
    index file copies unchanged."""
    decode_deletion_vector(data, df, source)
    (n,) = struct.unpack_from(">i", data, df.offset)
    return data[df.offset : df.offset + 4 + n + 4]


def encode_index_file(
    blobs: Sequence[tuple[str, bytes, DeletionFile]],
) -> tuple[bytes, list[dict[str, Any]]]:
    """A deletion-vector index file holding ``blobs`` (data file name, whole stored blob as
    :func:`blob` returns it, its old deletion file) in order, and its
    ``_DELETIONS_VECTORS_RANGES`` (each blob's new offset; length and cardinality kept)."""
    out = bytearray([_VERSION_V1])
    ranges: list[dict[str, Any]] = []
    for name, data, df in blobs:
        ranges.append({"f0": name, "f1": len(out), "f2": df.length, "_CARDINALITY": df.cardinality})
        out += data
    return bytes(out), ranges


def roll_blobs(
    blobs: Sequence[tuple[str, bytes, DeletionFile]], target_size: int
) -> list[list[tuple[str, bytes, DeletionFile]]]:
    """``blobs`` in order, split into the index files Paimon's ``writeWithRolling`` writes:
    a file takes blobs until one takes its size (version byte included) past ``target_size``,
    then the next file begins; no file is empty."""
    groups: list[list[tuple[str, bytes, DeletionFile]]] = []
    current: list[tuple[str, bytes, DeletionFile]] = []
    size = 1  # the version byte
    for item in blobs:
        current.append(item)
        size += len(item[1])
        if size > target_size:
            groups.append(current)
            current, size = [], 1
    if current:
        groups.append(current)
    return groups


def encode_blob(positions: np.ndarray, *, bitmap64: bool = False) -> tuple[bytes, int, int]:
    """The stored blob (length field, bitmap data, CRC) of a vector deleting ``positions``
    (row positions of one data file, each below 2^32, repeats allowed), the length its manifest
    range records (``f2``) and its cardinality: Paimon's ``BitmapDeletionVector.serializeTo``
    (32-bit, what Paimon 0.9 writes and reads) or, with ``bitmap64``,
    ``Bitmap64DeletionVector.serializeTo`` (one bitmap, of high bits 0)."""
    values = np.sort(np.asarray(positions, dtype=np.uint64))
    if len(values) and int(values[-1]) >= 1 << 32:
        raise UnsupportedFeatureError(
            f"a deletion vector at row {int(values[-1])} (data files beyond 4294967295 rows are "
            "not written by lakeops)"
        )
    if len(values) > 1:
        values = values[np.append(True, values[1:] != values[:-1])]
    # a sorted array.array is what pyroaring adds fastest
    bitmap = pyroaring.BitMap(array.array("I", values.astype(np.uint32).tobytes()))
    bitmap.run_optimize()
    portable = bitmap.serialize()
    if bitmap64:
        body = struct.pack("<i", _MAGIC_64)
        body += struct.pack("<q", 1 if len(values) else 0)
        if len(values):
            body += struct.pack("<i", 0) + portable
        recorded = len(body) + 8
    else:
        body = struct.pack(">i", _MAGIC_32) + portable
        recorded = len(body)
    crc = struct.unpack(">i", struct.pack(">I", zlib.crc32(body)))[0]
    return struct.pack(">i", len(body)) + body + struct.pack(">i", crc), recorded, len(values)


def iceberg_blob(data: bytes, df: DeletionFile, source: str) -> tuple[bytes, int]:
    """The deletion vector ``df`` of index file bytes ``data`` as an Iceberg
    ``deletion-vector-v1`` blob, and its cardinality: a 64-bit blob is that layout already and
    is copied unchanged (after it decodes); a 32-bit blob is re-encoded as a 64-bit one of the
    same positions."""
    positions = decode_deletion_vector(data, df, source)
    if struct.unpack_from(">i", data, df.offset + 4)[0] == _MAGIC_32:
        encoded, _, cardinality = encode_blob(positions, bitmap64=True)
        return encoded, cardinality
    (n,) = struct.unpack_from(">i", data, df.offset)
    return data[df.offset : df.offset + 4 + n + 4], len(positions)


def _portable_bitmap(data: bytes, source: str) -> np.ndarray:
    try:
        bitmap = pyroaring.BitMap.deserialize(data)
    except (ValueError, TypeError) as exc:
        raise CorruptTableError(f"{source}: unreadable roaring bitmap ({exc})") from exc
    return np.asarray(bitmap.to_array(), dtype=np.uint64)


def decode_deletion_vector(data: bytes, df: DeletionFile, source: str) -> np.ndarray:
    """The deleted positions (sorted, uint64) of the blob ``df`` of index file bytes ``data``.
    Checks the version byte, the recorded length, the magic number and the CRC; a blob that
    does not match is :class:`~lakeops.errors.CorruptTableError` (never a guess)."""
    if not data or data[0] != _VERSION_V1:
        version = data[0] if data else None
        raise CorruptTableError(f"{source}: deletion-vector index file version {version}, not 1")
    end = df.offset + 4
    if df.offset < 1 or end > len(data):
        raise CorruptTableError(f"{source}: deletion vector at {df.offset} lies outside the file")
    (n,) = struct.unpack_from(">i", data, df.offset)
    if n < 4 or end + n + 4 > len(data):
        raise CorruptTableError(f"{source}: deletion vector at {df.offset} has length {n}")
    blob = data[end : end + n]
    (crc,) = struct.unpack_from(">i", data, end + n)
    if crc != struct.unpack(">i", struct.pack(">I", zlib.crc32(blob)))[0]:
        raise CorruptTableError(f"{source}: deletion vector at {df.offset} fails its checksum")
    if struct.unpack_from(">i", blob)[0] == _MAGIC_32:
        if n != df.length:
            raise CorruptTableError(
                f"{source}: deletion vector at {df.offset} is {n} bytes, manifest says {df.length}"
            )
        return _portable_bitmap(blob[4:], source)
    if struct.unpack_from("<i", blob)[0] == _MAGIC_64:
        if n != df.length - 8:
            raise CorruptTableError(
                f"{source}: deletion vector at {df.offset} is {n} bytes, manifest says {df.length}"
            )
        return _bitmap64(blob[4:], source)
    raise CorruptTableError(f"{source}: deletion vector at {df.offset} has an unknown magic number")


def _bitmap64(body: bytes, source: str) -> np.ndarray:
    """Positions of a 64-bit roaring bitmap whose only non-empty bitmap is the one of high bits 0
    (a data file of fewer than 2^32 rows: every file Paimon writes)."""
    if len(body) < 8:
        raise CorruptTableError(f"{source}: truncated 64-bit deletion vector")
    (count,) = struct.unpack_from("<q", body)
    if count == 0:
        return np.empty(0, dtype=np.uint64)
    if count != 1 or len(body) < 12 or struct.unpack_from("<i", body, 8)[0] != 0:
        raise UnsupportedFeatureError(
            f"{source}: a 64-bit deletion vector with positions at or past 2^32 (rows of a data "
            "file beyond 4294967295), which lakeops does not read; nothing was read"
        )
    return _portable_bitmap(body[12:], source)
