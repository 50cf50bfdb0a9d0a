"""Index manifests (``manifest/index-manifest-…``) and dynamic-bucket hash index files
(``index/index-…``).

* An **index manifest** is one Avro file (zstd; ORC or Parquet with ``manifest.format``)
  holding the complete live set of a snapshot's index files — every entry ``ADD``; a
  snapshot whose commit changed no index inherits its predecessor's manifest by name.
  Commits fold their changes in with :func:`combine`: deletions first, then each ``ADD``
  replaces the entry of the same (partition, bucket, index type), so a bucket always has
  exactly one ``HASH`` file. The Avro schema is pypaimon 2.1's (Java Paimon reads it; only
  record names differ from Java's own files).
* A **HASH index file** is a bare sequence of 4-byte big-endian signed ints: the distinct
  ``BinaryRow.hashCode()`` of the trimmed primary key of every record ever written to that
  (partition, bucket) (deletes included; hashes are never removed). ``row_count`` is the number
  of ints. Readers ignore these files; writers of ``bucket = -1`` tables depend on them to put an
  existing key back into its bucket.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lakeops.errors import CorruptTableError
from lakeops.format.manifest_format import AVRO_ZSTD, ManifestFormat, read_records
from lakeops.format.paths import check_file_name

__all__ = [
    "DELETION_VECTORS_INDEX",
    "HASH_INDEX",
    "INDEX_MANIFEST_SCHEMA",
    "IndexFileMeta",
    "IndexManifestEntry",
    "combine",
    "decode_hashes",
    "encode_hashes",
    "read_index_manifest",
    "write_index_manifest",
]

HASH_INDEX = "HASH"
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
_VERSION = 1  # index manifests are at version 1 (data manifests at 2)
_ADD, _DELETE = 0, 1

INDEX_MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "IndexManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            "default": None,
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "DeletionVectorMeta",
                        "fields": [
                            {"name": "f0", "type": "string"},
                            {"name": "f1", "type": "int"},
                            {"name": "f2", "type": "int"},
                            {"name": "_CARDINALITY", "default": None, "type": ["null", "long"]},
                        ],
                    },
                },
            ],
        },
        {"name": "_EXTERNAL_PATH", "default": None, "type": ["null", "string"]},
        {
            "name": "_GLOBAL_INDEX",
            "default": None,
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "GlobalIndexMeta",
                    "fields": [
                        {"name": "_ROW_RANGE_START", "type": "long"},
                        {"name": "_ROW_RANGE_END", "type": "long"},
                        {"name": "_INDEX_FIELD_ID", "type": "int"},
                        {
                            "name": "_EXTRA_FIELD_IDS",
                            "default": None,
                            "type": ["null", {"type": "array", "items": "int"}],
                        },
                        {"name": "_INDEX_META", "default": None, "type": ["null", "bytes"]},
                        {"name": "_SOURCE_META", "default": None, "type": ["null", "bytes"]},
                    ],
                },
            ],
        },
    ],
}


@dataclass(frozen=True)
class IndexFileMeta:
    """One index file. Entries of other index types (deletion vectors, global indexes) are
    carried through unchanged in ``extra`` so a commit never drops them."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    extra: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class IndexManifestEntry:
    """ADD (0) or DELETE (1) of an index file of (partition, bucket)."""

    kind: int
    partition: bytes
    bucket: int
    file: IndexFileMeta

    @property
    def key(self) -> tuple[bytes, int, str]:
        return (self.partition, self.bucket, self.file.index_type)

    def to_avro(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "_VERSION": _VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_INDEX_TYPE": self.file.index_type,
            "_FILE_NAME": self.file.file_name,
            "_FILE_SIZE": self.file.file_size,
            "_ROW_COUNT": self.file.row_count,
            "_DELETIONS_VECTORS_RANGES": None,
            "_EXTERNAL_PATH": None,
            "_GLOBAL_INDEX": None,
        }
        record.update(dict(self.file.extra))
        return record

    @classmethod
    def from_avro(cls, d: dict[str, Any]) -> IndexManifestEntry:
        extra = tuple(
            (k, d[k])
            for k in ("_DELETIONS_VECTORS_RANGES", "_EXTERNAL_PATH", "_GLOBAL_INDEX")
            if d.get(k) is not None
        )
        return cls(
            int(d["_KIND"]),
            bytes(d["_PARTITION"]),
            int(d["_BUCKET"]),
            IndexFileMeta(
                str(d["_INDEX_TYPE"]),
                str(d["_FILE_NAME"]),
                int(d["_FILE_SIZE"]),
                int(d["_ROW_COUNT"]),
                extra,
            ),
        )


def write_index_manifest(
    entries: Iterable[IndexManifestEntry], fmt: ManifestFormat = AVRO_ZSTD
) -> bytes:
    """Serialize the (all-ADD) live index entries of a snapshot in format ``fmt``."""
    return fmt.write(INDEX_MANIFEST_SCHEMA, (e.to_avro() for e in entries))


def read_index_manifest(data: bytes, source: str = "index manifest") -> list[IndexManifestEntry]:
    """Parse an index manifest (Avro, ORC or Parquet; Java's or pypaimon's record names alike;
    ``source``: its path relative to the table, for errors). Index file names and the data
    file names of deletion vectors must be plain names
    (:func:`~lakeops.format.paths.check_file_name`)."""
    entries = [IndexManifestEntry.from_avro(r) for r in read_records(data, source)]
    for i, e in enumerate(entries):
        check_file_name(e.file.file_name, f"entry {i}: index file name", source)
        for dv in dict(e.file.extra).get("_DELETIONS_VECTORS_RANGES") or ():
            data_file = dv.get("f0") if isinstance(dv, dict) else None
            check_file_name(
                data_file, f"entry {i} ({e.file.file_name}): deletion vector of data file", source
            )
    return entries


def combine(
    previous: Sequence[IndexManifestEntry],
    changes: Sequence[IndexManifestEntry],
    *,
    unaware_bucket: bool = False,
) -> list[IndexManifestEntry]:
    """The live entries after ``changes``: DELETEs first, then every ADD replaces the entry
    with the same (partition, bucket, index type) — Paimon's bucketed combiner. With
    ``unaware_bucket`` (an append table with ``bucket = -1``) deletion-vector entries are
    combined by file name instead (Paimon's ``UnawareBucketCombiner``: a partition keeps any
    number of deletion-vector index files, all at bucket 0)."""

    def key(e: IndexManifestEntry) -> tuple[bytes, int, str, str]:
        if unaware_bucket and e.file.index_type == DELETION_VECTORS_INDEX:
            return (b"", 0, e.file.index_type, e.file.file_name)
        return (*e.key, "")

    live = {key(e): e for e in previous}
    for e in changes:
        if e.kind == _DELETE and live.get(key(e), e).file.file_name == e.file.file_name:
            live.pop(key(e), None)
    for e in changes:
        if e.kind == _ADD:
            live[key(e)] = e
    return list(live.values())


def encode_hashes(hashes: np.ndarray) -> bytes:
    """A HASH index file: the distinct hashes, sorted, as big-endian int32."""
    return np.unique(hashes.astype(np.int32)).astype(">i4").tobytes()


def decode_hashes(data: bytes, name: str = "index file") -> np.ndarray:
    """The int32 hashes of a HASH index file."""
    if len(data) % 4:
        raise CorruptTableError(f"{name}: {len(data)} bytes is not a whole number of hashes")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)
