"""The file format of manifests, manifest lists and index manifests (``manifest.format``).

Paimon writes this metadata as Avro by default; ``manifest.format`` = ``orc`` or ``parquet``
makes it write the same records, of the same Paimon row types, through its ORC or Parquet
writer (``manifest.compression`` is then that format's codec; the format's own
``orc.compress`` / ``parquet.compression`` table option overrides it, as in Paimon's writer
factories). Records are the dicts the decoders of :mod:`lakeops.format.manifest` and
:mod:`lakeops.format.index_manifest` take, whatever the format.

**Reading** picks the decoder by the file's magic bytes (Avro ``Obj\\x01``, Parquet ``PAR1``,
ORC ``ORC``), not by the option: a table whose ``manifest.format`` changed over time holds
both kinds, and the magic is unambiguous.

**Writing** converts the Avro schema of the records to Arrow as Paimon's row types convert
(``ParquetSchemaConverter`` / ORC's type description): INT, BIGINT, STRING, BYTES, ARRAY, ROW
and TIMESTAMP(3) map one to one, NOT NULL fields and elements stay non-null (Parquet
``required``), and the two TINYINT fields (``_KIND``, ``_FILE_SOURCE``), which Avro widens
to int, are written as int8 (Parquet ``INT(8, true)``, ORC ``tinyint``).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa

from lakeops.errors import ConfigurationError, CorruptTableError, UnsupportedFeatureError
from lakeops.format.avro_codec import (
    DEFAULT_COMPRESSION,
    avro_codec,
    codec_of,
    read_avro,
    write_avro,
)

__all__ = [
    "AVRO_ZSTD",
    "MANIFEST_FORMATS",
    "ManifestFormat",
    "arrow_schema",
    "read_records",
]

MANIFEST_FORMATS = ("avro", "orc", "parquet")

#: ``manifest.compression`` -> pyarrow ORC codec (Paimon: ORC ``CompressionKind`` by name;
#: LZO is not in pyarrow)
_ORC_CODECS = {
    "none": "uncompressed",
    "zlib": "zlib",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zstd",
}
#: ``manifest.compression`` -> pyarrow Parquet codec (Paimon: parquet-mr
#: ``CompressionCodecName.fromConf``; its LZO, BROTLI and LZ4 need codecs Paimon's bundle
#: does not ship or that pyarrow writes differently, so they are refused)
_PARQUET_CODECS = {
    "uncompressed": "none",
    "snappy": "snappy",
    "gzip": "gzip",
    "zstd": "zstd",
}
#: the fields Paimon types TINYINT (Avro has no 8-bit int and widens them)
_TINYINT_FIELDS = frozenset({"_KIND", "_FILE_SOURCE"})

_MAGIC_AVRO = b"Obj\x01"
_MAGIC_PARQUET = b"PAR1"
_MAGIC_ORC = b"ORC"


@dataclass(frozen=True)
class ManifestFormat:
    """How this table's manifests are written: ``format`` (avro, orc, parquet) and the
    codec in the writing library's naming (fastavro's for Avro, pyarrow's otherwise)."""

    format: str = "avro"
    codec: str = "zstandard"

    @classmethod
    def of(
        cls,
        fmt: str = "avro",
        compression: str = DEFAULT_COMPRESSION,
        *,
        orc_compress: str | None = None,
        parquet_compression: str | None = None,
    ) -> ManifestFormat:
        """The manifest format of a table: ``manifest.format`` with ``manifest.compression``
        (ORC's ``orc.compress`` and Parquet's ``parquet.compression`` win over it when given;
        :func:`lakeops.options.rows_layout.manifest_format` reads them from a table's options);
        :class:`ConfigurationError` for a format or codec Paimon does not write (or lakeops
        cannot write exactly)."""
        fmt = fmt.strip().lower()
        if fmt == "avro":
            return cls("avro", avro_codec(compression))
        if fmt == "orc":
            named = orc_compress if orc_compress is not None else compression
            return cls("orc", _codec(fmt, named, _ORC_CODECS))
        if fmt == "parquet":
            named = parquet_compression if parquet_compression is not None else compression
            return cls(fmt, _codec(fmt, named, _PARQUET_CODECS))
        raise ConfigurationError(
            f"manifest.format {fmt!r} is not a format Paimon writes manifests in; use one of "
            f"{list(MANIFEST_FORMATS)}"
        )

    def write(self, avro_schema: Mapping[str, Any], records: Iterable[dict[str, Any]]) -> bytes:
        """One metadata file of ``records`` (dicts of ``avro_schema``'s record; schemas are
        cached by record name)."""
        if self.format == "avro":
            return write_avro(_parsed(avro_schema), records, self.codec)
        table = pa.Table.from_pylist(list(records), schema=_arrow(avro_schema))
        out = io.BytesIO()
        if self.format == "orc":
            import pyarrow.orc as orc

            orc.write_table(table, out, compression=self.codec)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, out, compression=self.codec)
        return out.getvalue()


#: Paimon's default: Avro, zstd
AVRO_ZSTD = ManifestFormat()


def _codec(fmt: str, compression: str, codecs: Mapping[str, str]) -> str:
    refusal = f"a {fmt.upper()} codec lakeops writes manifests in (with manifest.format={fmt})"
    return codec_of(compression, codecs, refusal=refusal)


def read_records(data: bytes, what: str) -> list[dict[str, Any]]:
    """The records of a manifest, manifest list or index manifest in any format, chosen by
    the file's magic bytes. Timestamps come back as datetimes (milliseconds), as from Avro."""
    if data[:4] == _MAGIC_AVRO:
        return read_avro(data, what)
    if data[:4] == _MAGIC_PARQUET:
        import pyarrow.parquet as pq

        return _pylist(lambda: pq.read_table(pa.BufferReader(data)), what)
    if data[:3] == _MAGIC_ORC:
        import pyarrow.orc as orc

        return _pylist(lambda: orc.ORCFile(pa.BufferReader(data)).read(), what)
    raise CorruptTableError(f"cannot read {what}: it is neither Avro, Parquet nor ORC")


def _pylist(read: Any, what: str) -> list[dict[str, Any]]:
    try:
        table = read()
    except pa.ArrowNotImplementedError as exc:  # a codec this pyarrow build lacks
        raise UnsupportedFeatureError(
            f"cannot read {what}: {exc} (the file is intact; it needs a codec pyarrow lacks)"
        ) from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptTableError(f"cannot read {what}: {exc}") from exc
    columns = [c.cast(_millis(c.type)) for c in table.columns]
    rows: list[dict[str, Any]] = pa.Table.from_arrays(columns, table.column_names).to_pylist()
    return rows


def _millis(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp at millisecond unit (ORC reads back nanoseconds)."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("ms", t.tz)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_millis(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_millis(f.type)) for f in t])
    return t


_PARSED: dict[str, Any] = {}
_ARROW: dict[str, pa.Schema] = {}


def _parsed(avro_schema: Mapping[str, Any]) -> Any:
    name = avro_schema["name"]
    if name not in _PARSED:
        _PARSED[name] = fastavro.parse_schema(dict(avro_schema))
    return _PARSED[name]


def _arrow(avro_schema: Mapping[str, Any]) -> pa.Schema:
    name = avro_schema["name"]
    if name not in _ARROW:
        _ARROW[name] = arrow_schema(avro_schema)
    return _ARROW[name]


def arrow_schema(avro_schema: Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema Paimon's ORC and Parquet writers give the record ``avro_schema``."""
    return pa.schema([_field(f) for f in avro_schema["fields"]])


def _field(f: Mapping[str, Any]) -> pa.Field:
    avro_type = f["type"]
    nullable = isinstance(avro_type, list)
    arrow = _type(_non_null(avro_type))
    if f["name"] in _TINYINT_FIELDS:
        arrow = pa.int8()
    return pa.field(f["name"], arrow, nullable=nullable)


def _non_null(avro_type: Any) -> Any:
    if isinstance(avro_type, list):
        (inner,) = [t for t in avro_type if t != "null"]
        return inner
    return avro_type


def _type(t: Any) -> pa.DataType:
    if isinstance(t, str):
        return {
            "int": pa.int32(),
            "long": pa.int64(),
            "string": pa.string(),
            "bytes": pa.binary(),
        }[t]
    if t.get("logicalType") == "timestamp-millis":
        return pa.timestamp("ms")
    if t["type"] == "array":
        items = t["items"]
        element = pa.field("element", _type(_non_null(items)), nullable=isinstance(items, list))
        return pa.list_(element)
    if t["type"] == "record":
        return pa.struct([_field(f) for f in t["fields"]])
    return _type(t["type"])
