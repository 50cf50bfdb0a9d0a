"""Which format and codec each data or changelog file gets, as Paimon 0.9 chooses them, and the
pyarrow writers that produce them.

Paimon (``KeyValueFileWriterFactory.WriteFormatContext``) picks per output level:

* the format: ``file.format.per.level`` (``'0:orc,5:parquet'``, lower-cased) for that level,
  else ``file.format`` (``parquet`` by default since 0.9); changelog files written for a level
  take that level's format, or ``changelog-file.format`` when set (newer releases);
* the codec: ``file.compression.per.level`` for that level, else ``file.compression``
  (``zstd``), at ``file.compression.zstd-level`` (1); ``changelog-file.compression`` for
  changelog files when set;
* the file name ``data-<uuid>-<n>.<format>`` (``changelog-…`` for changelog files).

lakeops writes Parquet (``parquet_layout``), ORC (``orc_layout``) and Avro (``avro_layout``,
through fastavro). A codec pyarrow lacks for a format (``lzo``, ORC ``brotli``) falls back to
zstd: Paimon's readers decode every codec, so only the file size differs. Avro files take the
codec Paimon's Avro format derives from the compression (``avro_layout.avro_codec``: zstandard
for ``zstd``, else snappy, or the ``avro.codec`` option).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.kv import avro_layout, orc_layout, parquet_layout
from lakeops.options.rows_files import DATA_EVOLUTION_ENABLED
from lakeops.options.rows_layout import (
    CHANGELOG_FILE_COMPRESSION,
    CHANGELOG_FILE_FORMAT,
    FILE_COMPRESSION,
    FILE_COMPRESSION_PER_LEVEL,
    FILE_COMPRESSION_ZSTD_LEVEL,
    FILE_FORMAT,
    FILE_FORMAT_PER_LEVEL,
)
from lakeops.options.rules import WRITABLE_FORMATS

__all__ = [
    "WRITABLE_FORMATS",
    "FileSettings",
    "check_writable",
    "formats_in_use",
    "settings_for",
    "writer_kwargs",
]


#: what a blank value stands for (Paimon's defaults, as when the option is unset)
_DEFAULT_FORMAT = str(FILE_FORMAT.default)
_DEFAULT_CODEC = str(FILE_COMPRESSION.default)

# Paimon's codec names (parquet-mr CompressionCodecName / ORC CompressionKind, any case) to
# pyarrow's, per format
_PARQUET_CODECS = {
    "none": "none",
    "uncompressed": "none",
    "snappy": "snappy",
    "gzip": "gzip",
    "zlib": "gzip",
    "brotli": "brotli",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "zstd": "zstd",
}
_ORC_CODECS = {
    "none": "uncompressed",
    "uncompressed": "uncompressed",
    "snappy": "snappy",
    "zlib": "zlib",
    "gzip": "zlib",
    "lz4": "lz4",
    "zstd": "zstd",
}


@dataclass(frozen=True)
class FileSettings:
    """The format and codec of one file to write (pyarrow's codec name for Parquet and ORC,
    fastavro's for Avro; ``zstd_level`` is the zstd / zstandard level)."""

    format: str
    compression: str
    zstd_level: int

    @property
    def extension(self) -> str:
        return self.format


def _per_level(value: str) -> dict[int, str]:
    """``'0:orc, 5:parquet'`` → ``{0: 'orc', 5: 'parquet'}`` (values trimmed, lower-cased)."""
    out: dict[int, str] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        level, sep, name = part.partition(":")
        try:
            out[int(level.strip())] = name.strip().lower()
        except ValueError:
            raise UnsupportedFeatureError(
                f"cannot parse per-level option entry {part.strip()!r}: write it as "
                "'<level>:<value>', e.g. '0:orc,5:parquet'"
            ) from None
        if not sep:
            raise UnsupportedFeatureError(
                f"per-level option entry {part.strip()!r} has no ':<value>'"
            )
    return out


def _default_format(options: Mapping[str, str]) -> str:
    """``file.format``, trimmed and lower case (blank: Paimon's default)."""
    return FILE_FORMAT.get(options).strip().lower() or _DEFAULT_FORMAT


def _changelog_format(options: Mapping[str, str]) -> str | None:
    """``changelog-file.format`` when it is set (not blank), trimmed and lower case."""
    value = CHANGELOG_FILE_FORMAT.find(options, blank_is_unset=True)
    return None if value is None else value.strip().lower()


def _format_for(options: Mapping[str, str], level: int, changelog: bool) -> str:
    changelog_format = _changelog_format(options) if changelog else None
    if changelog_format is not None:
        return changelog_format
    per_level = _per_level(FILE_FORMAT_PER_LEVEL.get(options))
    return per_level.get(level, _default_format(options))


def _codec_for(options: Mapping[str, str], level: int, changelog: bool) -> str:
    codec = CHANGELOG_FILE_COMPRESSION.find(options, blank_is_unset=True) if changelog else None
    if codec is not None:
        return codec.strip().lower()
    per_level = _per_level(FILE_COMPRESSION_PER_LEVEL.get(options))
    default = FILE_COMPRESSION.get(options).strip().lower() or _DEFAULT_CODEC
    return per_level.get(level, default)


def settings_for(options: Mapping[str, str], level: int, changelog: bool = False) -> FileSettings:
    """The format and codec of a file written at ``level`` (a changelog file if ``changelog``)."""
    fmt = _format_for(options, level, changelog)
    if fmt not in WRITABLE_FORMATS:
        raise UnsupportedFeatureError(_refusal(fmt, "write this table"))
    codec = _codec_for(options, level, changelog)
    zstd = FILE_COMPRESSION_ZSTD_LEVEL.get(options, blank_is_unset=True)
    if fmt == "avro":
        avro, avro_level = avro_layout.avro_codec(options, codec, zstd)
        return FileSettings(fmt, avro, zstd if avro_level is None else avro_level)
    codecs = _PARQUET_CODECS if fmt == "parquet" else _ORC_CODECS
    return FileSettings(fmt, codecs.get(codec, codecs["zstd"]), zstd)


def formats_in_use(options: Mapping[str, str]) -> set[str]:
    """Every format a write or compaction of a table with ``options`` may produce."""
    out = {_default_format(options), *_per_level(FILE_FORMAT_PER_LEVEL.get(options)).values()}
    changelog_format = _changelog_format(options)
    if changelog_format is not None:
        out.add(changelog_format)
    return out


def _refusal(fmt: str, what: str) -> str:
    return (
        f"cannot {what}: it asks for {fmt.upper() or 'an empty'} data files (options "
        "'file.format' / 'file.format.per.level' / 'changelog-file.format'), and lakeops "
        "writes Parquet, ORC and Avro only; use 'parquet', 'orc' or 'avro' for every level"
    )


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` unless lakeops can write every data file of
    ``schema`` exactly as Paimon would, in every format its options ask for. BLOB columns,
    whose values live in ``.blob`` files, are written by appends of append tables with data
    evolution (what Paimon requires of them); the formats are checked on the other columns."""
    blobs = [f.name for f in schema.fields if f.type.root == "BLOB"]
    evolving = bool(DATA_EVOLUTION_ENABLED.get(schema.options))
    if blobs and (schema.primary_keys or not evolving):
        raise UnsupportedFeatureError(
            f"cannot {what}: BLOB columns {blobs} keep their values in .blob files, which "
            "lakeops writes for append tables with 'data-evolution.enabled' (as Paimon "
            "requires) only; write this table with Paimon or pypaimon"
        )
    if blobs:
        schema = replace(schema, fields=tuple(f for f in schema.fields if f.name not in blobs))
    for fmt in sorted(formats_in_use(schema.options)):
        if fmt == "parquet":
            parquet_layout.check_writable(schema, what)
        elif fmt == "orc":
            orc_layout.check_writable(schema, what)
        elif fmt == "avro":
            avro_layout.check_writable(schema, what)
        else:
            raise UnsupportedFeatureError(_refusal(fmt, what))
    key = FILE_COMPRESSION_ZSTD_LEVEL.key
    value = (FILE_COMPRESSION_ZSTD_LEVEL.text(schema.options) or "1").strip() or "1"
    if not value.lstrip("-").isdigit():
        raise UnsupportedFeatureError(f"cannot {what}: option {key!r} = {value!r} is no integer")


def writer_kwargs(settings: FileSettings) -> dict[str, Any]:
    """Codec keyword arguments for the pyarrow writer of ``settings.format``."""
    if settings.format == "parquet":
        kwargs: dict[str, Any] = {"compression": settings.compression}
        if settings.compression == "zstd":
            kwargs["compression_level"] = settings.zstd_level
        return kwargs
    return {"compression": settings.compression}
