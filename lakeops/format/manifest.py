"""Manifest entries, manifest-file metadata and their Avro schemas (pypaimon 2.1 / Paimon 1.x).

A *manifest* holds :class:`ManifestEntry` records (ADD or DELETE of one data file in one
(partition, bucket)); a *manifest list* holds :class:`ManifestFileMeta` records describing
manifests. Both are Avro object-container files compressed with zstd, ``_VERSION`` 2 — or
ORC / Parquet files of the same records (``manifest.format``,
:mod:`lakeops.format.manifest_format`).
Readers are tolerant of older writers (Paimon 0.9 omits some trailing optional fields).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.format.manifest_format import AVRO_ZSTD, ManifestFormat, read_records
from lakeops.format.paths import check_file_name

__all__ = [
    "FileKind",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "ManifestEntry",
    "ManifestFileMeta",
    "read_manifest",
    "read_manifest_list",
    "write_manifest",
    "write_manifest_list",
]

VERSION = 2


class FileKind:
    """Manifest entry kinds."""

    ADD = 0
    DELETE = 1


def _stats(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {
                "name": "_NULL_COUNTS",
                "type": ["null", {"type": "array", "items": ["null", "long"]}],
                "default": None,
            },
        ],
    }


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


DATA_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "DataFileMeta",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
}

MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestFileMeta",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats("record_PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
        _opt("_TOTAL_BUCKETS", "int"),
        _opt("_EXTRA_FILES", {"type": "array", "items": "string"}),
    ],
}


@dataclass(frozen=True)
class ManifestEntry:
    """ADD or DELETE of one data file in one (partition, bucket)."""

    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[bytes, int, int, str]:
        """What an ADD and its later DELETE share: (partition, bucket, level, file name)."""
        return (self.partition, self.bucket, self.file.level, self.file.file_name)

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_avro(),
        }

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> ManifestEntry:
        return cls(
            int(d["_KIND"]),
            bytes(d["_PARTITION"]),
            int(d["_BUCKET"]),
            int(d["_TOTAL_BUCKETS"]),
            DataFileMeta.from_avro(d["_FILE"]),
        )


@dataclass(frozen=True)
class ManifestFileMeta:
    """One manifest as described in a manifest list."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    total_buckets: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": None,
            "_MAX_ROW_ID": None,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_EXTRA_FILES": None,
        }

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> ManifestFileMeta:
        return cls(
            d["_FILE_NAME"],
            int(d["_FILE_SIZE"]),
            int(d["_NUM_ADDED_FILES"]),
            int(d["_NUM_DELETED_FILES"]),
            SimpleStats.from_avro(d["_PARTITION_STATS"]),
            int(d["_SCHEMA_ID"]),
            d.get("_MIN_BUCKET"),
            d.get("_MAX_BUCKET"),
            d.get("_MIN_LEVEL"),
            d.get("_MAX_LEVEL"),
            d.get("_TOTAL_BUCKETS"),
        )


def write_manifest(entries: Iterable[ManifestEntry], fmt: ManifestFormat = AVRO_ZSTD) -> bytes:
    """Serialize manifest entries into a manifest file of format ``fmt``."""
    return fmt.write(MANIFEST_ENTRY_SCHEMA, (e.to_avro() for e in entries))


def read_manifest(data: bytes, source: str = "manifest") -> list[ManifestEntry]:
    """Parse a manifest file: Avro, ORC or Parquet (``source``: its path relative to the table,
    for errors).

    Every file name an entry holds (its data or changelog file and its extra files) must be a
    plain name (:func:`~lakeops.format.paths.check_file_name`), else a
    :class:`~lakeops.errors.CorruptTableError` naming ``source`` and the entry."""
    entries = [ManifestEntry.from_avro(r) for r in read_records(data, source)]
    for i, e in enumerate(entries):
        check_file_name(e.file.file_name, f"entry {i}: file name", source)
        for extra in e.file.extra_files:
            check_file_name(extra, f"entry {i} ({e.file.file_name}): extra file", source)
    return entries


def write_manifest_list(
    metas: Iterable[ManifestFileMeta], fmt: ManifestFormat = AVRO_ZSTD
) -> bytes:
    """Serialize manifest metadata into a manifest list of format ``fmt``."""
    return fmt.write(MANIFEST_FILE_META_SCHEMA, (m.to_avro() for m in metas))


def read_manifest_list(data: bytes, source: str = "manifest list") -> list[ManifestFileMeta]:
    """Parse a manifest list: Avro, ORC or Parquet (``source``: its path relative to the table,
    for errors); every manifest name must be a plain name, as in :func:`read_manifest`."""
    metas = [ManifestFileMeta.from_avro(r) for r in read_records(data, source)]
    for i, m in enumerate(metas):
        check_file_name(m.file_name, f"entry {i}: manifest name", source)
    return metas
