"""The one owner of a table's path layout (relative to the table root).

::

    schema/schema-<id>          snapshot/snapshot-<id>, snapshot/LATEST, snapshot/EARLIEST
    manifest/manifest-<uuid>-<n>, manifest/manifest-list-<uuid>-<n>
    [<pt1>=<v1>/…/]bucket-<b>/data-<uuid>-<n>.parquet

Partition directory names escape characters exactly as Paimon (Hive's ``escapePathName``) does,
so a value such as ``../x`` or ``a/b`` becomes one directory name below the table
(``dt=..%2Fx``) and can never address anything outside it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "bucket_dir",
    "data_file_name",
    "escape_path_name",
    "manifest_name",
    "index_file_name",
    "index_manifest_name",
    "index_path",
    "manifest_list_name",
    "partition_dir",
    "partition_value_string",
    "schema_path",
    "snapshot_path",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
MANIFEST_DIR = "manifest"
CHANGELOG_DIR = "changelog"
INDEX_DIR = "index"
LATEST_HINT = f"{SNAPSHOT_DIR}/LATEST"
EARLIEST_HINT = f"{SNAPSHOT_DIR}/EARLIEST"

_ESCAPED = frozenset(
    [chr(c) for c in range(1, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)


def escape_path_name(text: str) -> str:
    """Escape a partition name or value the way Paimon/Hive do (``%XX`` upper-case hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_value_string(value: Any) -> str | None:
    """Paimon's string form of a partition value (None and blank strings map to None)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    text = str(value)
    return None if not text.strip() else text


def partition_dir(
    names: Sequence[str], values: Sequence[Any], default_name: str = DEFAULT_PARTITION_NAME
) -> str:
    """``k1=v1/k2=v2`` for a partition ('' for an unpartitioned table)."""
    parts = []
    for name, value in zip(names, values, strict=True):
        text = partition_value_string(value)
        parts.append(
            f"{escape_path_name(name)}={escape_path_name(default_name if text is None else text)}"
        )
    return "/".join(parts)


def bucket_dir(partition: str, bucket: int) -> str:
    """Directory of one bucket, relative to the table root."""
    return f"{partition}/bucket-{bucket}" if partition else f"bucket-{bucket}"


def _unique(prefix: str, n: int = 0) -> str:
    return f"{prefix}-{uuid.uuid4()}-{n}"


def data_file_name(n: int = 0, prefix: str = "data") -> str:
    """A fresh data file name (``data-<uuid>-<n>.parquet``; ``changelog-…`` for changelog)."""
    return _unique(prefix, n) + ".parquet"


def manifest_name(n: int = 0) -> str:
    return _unique("manifest", n)


def manifest_list_name(n: int = 0) -> str:
    return _unique("manifest-list", n)


def index_manifest_name(n: int = 0) -> str:
    """``index-manifest-<uuid>-<n>`` (in ``manifest/``)."""
    return _unique("index-manifest", n)


def index_file_name(n: int = 0) -> str:
    """``index-<uuid>-<n>`` (a dynamic-bucket hash index, in ``index/``)."""
    return _unique("index", n)


def index_path(name: str) -> str:
    return f"{INDEX_DIR}/{name}"


def schema_path(schema_id: int) -> str:
    return f"{SCHEMA_DIR}/schema-{schema_id}"


def snapshot_path(snapshot_id: int) -> str:
    return f"{SNAPSHOT_DIR}/snapshot-{snapshot_id}"


def manifest_path(name: str) -> str:
    return f"{MANIFEST_DIR}/{name}"
