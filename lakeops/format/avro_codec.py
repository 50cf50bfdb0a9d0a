"""Avro container files for manifests, manifest lists and index manifests, in every codec
Paimon writes them with (``manifest.compression``: Avro's ``CodecFactory.fromString`` names,
plus ``zstd`` for zstandard — Paimon's default)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

import fastavro

from lakeops.errors import ConfigurationError, CorruptTableError, UnsupportedFeatureError

__all__ = ["DEFAULT_COMPRESSION", "avro_codec", "read_avro", "write_avro"]

#: Paimon's default ``manifest.compression``
DEFAULT_COMPRESSION = "zstd"

#: ``manifest.compression`` value -> fastavro codec name
_CODECS = {
    "null": "null",
    "none": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
    "zstd": "zstandard",
    "zstandard": "zstandard",
}


def codec_of(compression: str, codecs: Mapping[str, str], *, refusal: str) -> str:
    """The writer codec that ``codecs`` maps a ``manifest.compression`` value to (case and
    surrounding blanks ignored); a value it lacks is refused with ``ConfigurationError``:
    "manifest.compression '<value>' is not <refusal>; use one of <the known values>"."""
    codec = codecs.get(compression.strip().lower())
    if codec is None:
        raise ConfigurationError(
            f"manifest.compression {compression!r} is not {refusal}; use one of {sorted(codecs)}"
        )
    return codec


def avro_codec(compression: str) -> str:
    """The Avro codec for a ``manifest.compression`` value."""
    return codec_of(compression, _CODECS, refusal="an Avro codec Paimon writes")


def write_avro(schema: Any, records: Iterable[dict[str, Any]], codec: str) -> bytes:
    """An Avro container file of ``records`` compressed with fastavro codec ``codec``."""
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec=codec)
    return out.getvalue()


def read_avro(data: bytes, what: str) -> list[dict[str, Any]]:
    """The records of an Avro container file, whatever codec it was written with.

    A codec whose library is missing is an :class:`UnsupportedFeatureError` naming it (the
    table is fine); anything else unreadable is a :class:`CorruptTableError`.
    """
    try:
        return [r for r in fastavro.reader(io.BytesIO(data)) if isinstance(r, dict)]
    except Exception as exc:  # fastavro raises many types for corrupt input
        text = str(exc)
        if "need to install" in text or "Unrecognized codec" in text:
            raise UnsupportedFeatureError(
                f"cannot read {what}: {text} (the file is intact; install the codec library)"
            ) from exc
        raise CorruptTableError(f"cannot read {what}: {exc}") from exc
