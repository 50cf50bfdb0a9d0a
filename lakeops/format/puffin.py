"""Puffin files holding Iceberg deletion vectors (``deletion-vector-v1`` blobs), as Iceberg's
format version 3 reads them.

Layout (Iceberg's Puffin spec, version 1):

* the magic ``PFA1``, then the blobs back to back;
* the footer: the magic again, the footer payload (UTF-8 JSON, uncompressed), the payload's
  length (int32 little-endian), four flag bytes (all zero: nothing compressed) and the magic.

The footer payload lists each blob: ``type`` (``deletion-vector-v1``), ``fields``
(``[2147483645]``: Iceberg's row-position field), ``snapshot-id`` and ``sequence-number``
(``-1``: inherited from the manifest entry, as the spec requires for vectors), ``offset`` and
``length`` in the file, and the properties ``referenced-data-file`` (the data file's path as
the data manifest names it) and ``cardinality`` (rows deleted).

A ``deletion-vector-v1`` blob is byte for byte what Paimon writes for a 64-bit deletion vector
(``deletion-vectors.bitmap64``): the length of magic + vector (int32 big-endian), the magic
``D1 D3 39 64``, the 64-bit roaring bitmap in its portable layout, and a CRC-32 of magic +
vector (int32 big-endian) — so those blobs are copied unchanged.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeops.errors import CorruptTableError

__all__ = [
    "DELETION_VECTOR_V1",
    "MAGIC",
    "PuffinBlob",
    "encode_puffin",
    "read_puffin_footer",
]

MAGIC = b"PFA1"
#: the blob type of an Iceberg deletion vector
DELETION_VECTOR_V1 = "deletion-vector-v1"
#: Iceberg's reserved ``_pos`` field id, the field a deletion vector is about
_ROW_POSITION_FIELD_ID = 2147483645


@dataclass(frozen=True)
class PuffinBlob:
    """One deletion vector of a Puffin file: the data file it deletes rows of (its path as
    the data manifest names it), where its blob lies in the file and how many rows it
    deletes."""

    referenced_data_file: str
    offset: int
    length: int
    cardinality: int


def encode_puffin(
    blobs: Sequence[tuple[str, bytes, int]], properties: Mapping[str, str] | None = None
) -> tuple[bytes, list[PuffinBlob]]:
    """A Puffin file of ``deletion-vector-v1`` blobs — each ``(referenced data file, blob
    bytes, cardinality)`` in order — with the file-level ``properties``, and where each blob
    went."""
    out = bytearray(MAGIC)
    placed: list[PuffinBlob] = []
    for path, data, cardinality in blobs:
        placed.append(PuffinBlob(path, len(out), len(data), cardinality))
        out += data
    footer = {
        "blobs": [
            {
                "type": DELETION_VECTOR_V1,
                "fields": [_ROW_POSITION_FIELD_ID],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": b.offset,
                "length": b.length,
                "properties": {
                    "referenced-data-file": b.referenced_data_file,
                    "cardinality": str(b.cardinality),
                },
            }
            for b in placed
        ],
        "properties": dict(properties or {}),
    }
    payload = json.dumps(footer, separators=(",", ":")).encode()
    out += MAGIC + payload + struct.pack("<i", len(payload)) + bytes(4) + MAGIC
    return bytes(out), placed


def read_puffin_footer(data: bytes, source: str) -> tuple[list[PuffinBlob], dict[str, str]]:
    """The deletion vectors a Puffin file lists and its file-level properties. A file that is
    not a whole Puffin file (a write cut short), has a compressed footer, or lists another
    blob type is :class:`~lakeops.errors.CorruptTableError`."""
    if len(data) < 20 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise CorruptTableError(f"{source}: not a whole Puffin file")
    if data[-8:-4] != bytes(4):
        raise CorruptTableError(f"{source}: a compressed Puffin footer (not written by lakeops)")
    (size,) = struct.unpack_from("<i", data, len(data) - 12)
    start = len(data) - 12 - size
    if size < 2 or start < 8 or data[start - 4 : start] != MAGIC:
        raise CorruptTableError(f"{source}: a Puffin footer of {size} bytes does not fit")
    try:
        footer = json.loads(data[start : start + size])
        blobs = [
            PuffinBlob(
                str(b["properties"]["referenced-data-file"]),
                int(b["offset"]),
                int(b["length"]),
                int(b["properties"]["cardinality"]),
            )
            for b in footer["blobs"]
            if b["type"] == DELETION_VECTOR_V1
        ]
        if len(blobs) != len(footer["blobs"]):
            raise CorruptTableError(f"{source}: a Puffin blob that is not a deletion vector")
        properties = {str(k): str(v) for k, v in dict(footer.get("properties", {})).items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(f"{source}: unreadable Puffin footer ({exc})") from exc
    for b in blobs:
        if b.offset < 4 or b.offset + b.length > start - 4:
            raise CorruptTableError(f"{source}: a Puffin blob at {b.offset} lies outside it")
    return blobs, properties
