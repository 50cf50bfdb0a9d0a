"""The one owner of a table's path layout (relative to the table root).

::

    schema/schema-<id>          snapshot/snapshot-<id>, snapshot/LATEST, snapshot/EARLIEST
    manifest/manifest-<uuid>-<n>, manifest/manifest-list-<uuid>-<n>
    [<pt1>=<v1>/…/]bucket-<b>/data-<uuid>-<n>.parquet

(bucket directories below ``data-file.path-directory`` when set; where each data, changelog
and index file actually is — external paths, prefixes, index placement — is
:mod:`lakeops.store.locations`).

Partition directory names are Paimon's (:class:`PartitionPaths`): type-aware value strings
(:mod:`lakeops.format.partition_names`, honouring ``partition.legacy-name``) escaped exactly as
Paimon (Hive's ``escapePathName``) does, so a value such as ``../x`` or ``a/b`` becomes one
directory name below the table (``dt=..%2Fx``) and can never address anything outside it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from lakeops.errors import ConfigurationError, CorruptTableError
from lakeops.format import binary_row, partition_names
from lakeops.format.types import DataType

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "POSTPONE_BUCKET",
    "bucket_dir",
    "check_file_name",
    "escape_path_name",
    "manifest_name",
    "index_file_name",
    "index_manifest_name",
    "index_path",
    "manifest_list_name",
    "PartitionPaths",
    "partition_value_string",
    "unescape_path_name",
    "schema_path",
    "snapshot_path",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
MANIFEST_DIR = "manifest"
CHANGELOG_DIR = "changelog"
INDEX_DIR = "index"
#: where the native Spark write path (``lakeops.spark.native``) stages files before it moves
#: them into their buckets; nothing in it is ever referenced by a snapshot
SPARK_STAGING_DIR = "_lakeops_spark_staging"
#: where ``lakeops repair`` moves a stray snapshot file (an id re-used after its expiry); no
#: reader looks there, and orphan cleanup leaves it alone
REPAIR_DIR = "_lakeops_repair"
LATEST_HINT = f"{SNAPSHOT_DIR}/LATEST"
EARLIEST_HINT = f"{SNAPSHOT_DIR}/EARLIEST"

_ESCAPED = frozenset(
    [chr(c) for c in range(0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "}", "[", "]", "^"]
)


def escape_path_name(text: str) -> str:
    """Escape a partition name or value as Paimon's ``PartitionPathUtils.escapePathName`` (Hive's)
    does: ASCII control characters and ``"#%'*/:=?\\{}[]^`` and DEL become ``%XX`` (upper-case
    hex); everything else, non-ASCII included, is kept."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


_HEX = frozenset("0123456789abcdefABCDEF")


def unescape_path_name(text: str) -> str:
    """Inverse of :func:`escape_path_name` (Paimon's ``unescapePathName``)."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        hexdigits = text[i + 1 : i + 3]
        if c == "%" and len(hexdigits) == 2 and all(h in _HEX for h in hexdigits):
            out.append(chr(int(hexdigits, 16)))
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def partition_value_string(value: Any) -> str | None:
    """A partition value as *users* write it (None and blank strings map to None): ISO dates
    and timestamps, plain decimals, ``true``/``false``. For display and user-facing partition
    specs only — directory names come from :class:`PartitionPaths`."""
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


class PartitionPaths:
    """Partition directory names of one table, exactly as Paimon names them.

    ``k1=v1/k2=v2`` (no trailing '/'; '' for an unpartitioned table) where each value is
    :func:`lakeops.format.partition_names.value_name` of the partition's BinaryRow field —
    type-aware, honouring ``partition.legacy-name`` and ``partition.default-name`` — and names
    and values are escaped with :func:`escape_path_name`. Names are cached per partition, so
    callers may ask once per file.
    """

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[DataType],
        default_name: str = DEFAULT_PARTITION_NAME,
        legacy_name: bool = True,
        zone: dt.tzinfo | None = None,
        data_directory: str | None = None,
    ) -> None:
        if len(names) != len(types):
            raise ValueError(f"{len(names)} partition names but {len(types)} types")
        if names and not default_name:
            raise ConfigurationError(
                "option 'partition.default-name' is empty; Paimon cannot name the directory of "
                "NULL or blank partition values with it (keep the default '__DEFAULT_PARTITION__')"
            )
        for name, t in zip(names, types, strict=True):
            partition_names.check_partition_type(name, t, legacy_name)
        self.names = tuple(names)
        self.types = tuple(types)
        self.default_name = default_name
        self.legacy_name = legacy_name
        self.zone = zone
        #: ``data-file.path-directory``: bucket directories are below it
        self.data_directory = data_directory
        self._cache: dict[bytes, str] = {}

    def value_names(self, internal_values: Sequence[Any]) -> list[str]:
        """The unescaped directory value of each field (internal values, see
        :func:`lakeops.format.binary_row.decode_internal`)."""
        return [
            partition_names.value_name(v, t, self.legacy_name, self.default_name, self.zone)
            for v, t in zip(internal_values, self.types, strict=True)
        ]

    def dir_of_internal(self, internal_values: Sequence[Any]) -> str:
        """The partition directory of internal values."""
        return "/".join(
            f"{escape_path_name(n)}={escape_path_name(v)}"
            for n, v in zip(self.names, self.value_names(internal_values), strict=True)
        )

    def dir_of(self, partition: bytes) -> str:
        """The partition directory of a serialized partition BinaryRow (as in manifests)."""
        found = self._cache.get(partition)
        if found is None:
            found = self.dir_of_internal(binary_row.deserialize_internal(partition, self.types))
            self._cache[partition] = found
        return found

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The bucket directory of a serialized partition, relative to the table root."""
        return bucket_dir(self.dir_of(partition), bucket, self.data_directory)


def data_directory(text: str | None) -> str | None:
    """The ``data-file.path-directory`` option's ``text``, checked (None when unset or empty):
    the sub-directory of the table that holds every bucket directory (Paimon's
    ``FileStorePathFactory.dataFilePath``).

    Paimon resolves it against the table root as a URI: an absolute path, a scheme or ``..``
    would take Paimon's files out of the table, so lakeops refuses those (and ``\\`` and NUL)
    rather than place files where Paimon would not look; a trailing ``/`` is dropped."""
    raw = (text or "").strip()
    value = raw.rstrip("/")
    if not raw:
        return None
    if (
        raw.startswith("/")
        or ".." in value.split("/")
        or any(c in value for c in (":", "\\", "\x00"))
    ):
        raise ConfigurationError(
            f"option 'data-file.path-directory' = {raw!r} is not a relative directory inside "
            "the table (no leading '/', no scheme, no '..', no '\\'); name a sub-directory "
            "such as 'data'"
        )
    return value


#: the bucket of postponed files in a ``bucket = -2`` table (``BucketMode.POSTPONE_BUCKET``)
POSTPONE_BUCKET = -2


def bucket_dir(partition: str, bucket: int, data_dir: str | None = None) -> str:
    """Directory of one bucket, relative to the table root:
    ``[<data-file.path-directory>/][<partition>/]bucket-<n>`` (``relativeBucketPath``); the
    postpone bucket (-2) is ``bucket-postpone``."""
    name = "postpone" if bucket == POSTPONE_BUCKET else str(bucket)
    rel = f"{partition}/bucket-{name}" if partition else f"bucket-{name}"
    return f"{data_dir}/{rel}" if data_dir else rel


#: characters a file name read from metadata never contains: path separators (both, so a name
#: means the same on every file system) and NUL (which truncates a path in C libraries)
_NOT_IN_NAMES = ("/", "\\", "\x00")


def check_file_name(name: object, what: str, source: str) -> str:
    """``name`` if it is a plain file name, else a :class:`~lakeops.errors.CorruptTableError`.

    Every file name that metadata names — data, changelog and extra files of manifest entries,
    manifests of a manifest list, the manifest lists and index manifest of a snapshot, index
    files and the data files of deletion vectors — is one name inside a directory the table
    layout chooses (Paimon writes ``data-<uuid>-<n>.parquet``, ``manifest-<uuid>-<n>``, …).
    A name that is empty, ``.`` or ``..``, or contains ``/``, ``\\`` or NUL could address a
    file outside the table, so it is refused where the metadata is decoded. ``what`` names the
    entry (e.g. ``"data file"``), ``source`` the metadata file (relative to the table root).
    """
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(c in name for c in _NOT_IN_NAMES)
    ):
        raise CorruptTableError(
            f"{source}: {what} {name!r} is not a plain file name (it must be non-empty, not "
            "'.' or '..', and contain no '/', '\\' or NUL); lakeops follows no metadata "
            "that points outside the table's own directories"
        )
    return name


def _unique(prefix: str, n: int = 0) -> str:
    return f"{prefix}-{uuid.uuid4()}-{n}"


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
