"""Puffin files of deletion vectors, checked byte by byte against Iceberg's Puffin spec (magic
at both ends, the blobs where the footer says, the footer's JSON, its length and flags), and
refused whole when cut short."""

from __future__ import annotations

import json
import struct

import pytest

from lakeops.errors import CorruptTableError
from lakeops.format.puffin import encode_puffin, read_puffin_footer


def test_layout_follows_the_spec() -> None:
    blobs = [("s3://b/t/bucket-0/data-1.parquet", b"\x00\x01blob-one", 3), ("f2", b"two", 1)]
    data, placed = encode_puffin(blobs, {"created-by": "test"})
    assert data[:4] == b"PFA1" and data[-4:] == b"PFA1"
    assert data[-8:-4] == bytes(4)  # no flags: the footer is not compressed
    (size,) = struct.unpack("<i", data[-12:-8])
    footer = json.loads(data[-12 - size : -12])
    assert data[-16 - size : -12 - size] == b"PFA1"  # the footer's own magic
    assert footer["properties"] == {"created-by": "test"}
    offset = 4
    for (path, blob, cardinality), meta, place in zip(blobs, footer["blobs"], placed, strict=True):
        assert data[offset : offset + len(blob)] == blob
        assert meta == {
            "type": "deletion-vector-v1",
            "fields": [2147483645],
            "snapshot-id": -1,
            "sequence-number": -1,
            "offset": offset,
            "length": len(blob),
            "properties": {"referenced-data-file": path, "cardinality": str(cardinality)},
        }
        assert (place.offset, place.length, place.referenced_data_file) == (offset, len(blob), path)
        offset += len(blob)
    assert data[offset : offset + 4] == b"PFA1"
    assert read_puffin_footer(data, "f") == (placed, {"created-by": "test"})


@pytest.mark.parametrize("cut", [1, 5, 13])
def test_a_file_cut_short_is_refused(cut: int) -> None:
    data, _ = encode_puffin([("f", b"blob", 1)])
    with pytest.raises(CorruptTableError, match="Puffin"):
        read_puffin_footer(data[:-cut], "f")
    with pytest.raises(CorruptTableError, match="Puffin"):
        read_puffin_footer(b"PFA1" + data[cut + 4 :], "f")
