"""Where a table's data, changelog and bucket-index files live, exactly as Paimon resolves them.

The one place that turns a manifest entry (partition, bucket, file) into a storage path and that
names new files. Paimon's rules (``FileStorePathFactory``, ``DataFilePathFactory``,
``ExternalPathProvider``, ``IndexInDataFileDirPathFactory`` of Paimon master):

* A bucket directory is ``[<data-file.path-directory>/][<partition>/]bucket-<n>`` below the table
  root (``FileStorePathFactory.relativeBucketPath``).
* A data file's location is its manifest entry's ``_EXTERNAL_PATH`` (a URI, e.g.
  ``file:/lake/ext/bucket-0/data-….parquet`` or ``s3://b/ext/…``) when set, otherwise
  ``<bucket directory>/<file name>`` (``DataFilePathFactory.toPath``).
* New files are named ``<prefix><uuid>-<n>.<format>``; the prefix is ``data-file.prefix``
  (default ``data-``) or ``changelog-file.prefix`` (default ``changelog-``).
* With ``data-file.external-paths`` and a strategy other than ``none``, new files go to
  ``<external root>/<relative bucket path>/<file name>`` and the entry records that URI:
  ``round-robin`` cycles through every root from a random start; ``specific-fs`` does the same
  over the roots whose scheme is ``data-file.external-paths.specific-fs``. ``entropy-inject`` and
  ``weight-robin`` are refused for writes (see :mod:`lakeops.options.registry`).
* Bucket index files (dynamic-bucket ``HASH``) live in ``index/`` unless
  ``index-file-in-data-file-dir`` is true: then they sit in the bucket directory, or at an
  external path (recorded as the index entry's ``_EXTERNAL_PATH``) when the table writes
  external paths.

Following an external path is allowed only below a root the table's own
``data-file.external-paths`` names (same scheme and authority, the root a prefix on a ``/``
boundary, no ``..`` or NUL) and on the file system lakeops opened the table with;
anything else is an :class:`~lakeops.errors.UnsupportedFeatureError` naming the entry, the path
and the option. File names themselves are plain names, checked where metadata is decoded
(:func:`lakeops.format.paths.check_file_name`), so ``join(directory, name)`` stays in ``directory``.
This class is the one resolver: readers, writers, compaction, expiry, orphan cleanup and rollback
all locate files through it (see docs/security.md).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.paths import PartitionPaths, bucket_dir, data_directory
from lakeops.io.file_io import join
from lakeops.options import rows_files as F

if TYPE_CHECKING:
    from lakeops.format.schema import TableSchema
    from lakeops.io.file_io import FileIO
    from lakeops.options import TableOptions

__all__ = [
    "ExternalPaths",
    "FileLocations",
    "NewFile",
    "new_name_token",
    "partition_paths",
    "split_uri",
]

EXTERNAL_PATHS = F.DATA_FILE_EXTERNAL_PATHS.key
EXTERNAL_STRATEGY = F.DATA_FILE_EXTERNAL_PATHS_STRATEGY.key
EXTERNAL_SPECIFIC_FS = F.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS.key
PATH_DIRECTORY = F.DATA_FILE_PATH_DIRECTORY.key
DATA_PREFIX = F.DATA_FILE_PREFIX.key
CHANGELOG_PREFIX = F.CHANGELOG_FILE_PREFIX.key
INDEX_IN_DATA_DIR = F.INDEX_FILE_IN_DATA_FILE_DIR.key
#: strategies lakeops writes exactly (the others are refused for writes)
WRITE_STRATEGIES = ("none", "round-robin", "specific-fs")

_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):(.*)")


def split_uri(uri: str) -> tuple[str, str]:
    """``(scheme, path)`` of a location: ``file:/a``, ``file:///a`` and ``/a`` are
    ``("file", "/a")``; ``s3://b/k`` is ``("s3", "b/k")`` (authority and path, no leading '/')."""
    m = _SCHEME.match(uri)
    if m is None or len(m.group(1)) == 1:  # no scheme (or a Windows drive letter)
        return "file", uri
    scheme, rest = m.group(1).lower(), m.group(2)
    if scheme == "file":
        if rest.startswith("//"):
            authority, _, path = rest[2:].partition("/")
            if authority not in ("", "localhost"):
                return scheme, "//" + rest[2:]  # a remote host: never matches a local root
            rest = "/" + path
        return scheme, "/" + rest.lstrip("/")
    return scheme, rest.lstrip("/")


def _normal(path: str) -> str | None:
    """A path without '.' segments, repeated or trailing '/' (None when it has a '..' segment
    or a NUL: such a path is never followed)."""
    lead = "/" if path.startswith("/") else ""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts or "\x00" in path:
        return None
    return lead + "/".join(parts)


def _same_fs(scheme: str, protocol: str, is_local: bool) -> bool:
    if is_local:
        return scheme in ("file", "local")
    protocol = protocol.lower()
    aliases = {protocol, f"{protocol}a", f"{protocol}n"}
    if protocol in ("s3", "s3a"):
        aliases |= {"s3", "s3a", "s3n"}
    return scheme in aliases


def partition_paths(schema: TableSchema, options: TableOptions) -> PartitionPaths:
    """The :class:`~lakeops.format.paths.PartitionPaths` of a table (its partition keys, types
    and options)."""
    return PartitionPaths(
        schema.partition_keys,
        schema.types_of(schema.partition_keys),
        options.partition_default_name,
        options.partition_legacy_name,
        data_directory=data_directory(F.DATA_FILE_PATH_DIRECTORY.find(schema.options)),
    )


@dataclass(frozen=True)
class NewFile:
    """A file about to be written: its name (as in the manifest), where to write it, and the
    ``_EXTERNAL_PATH`` URI to record (None: it is in the bucket directory)."""

    name: str
    path: str
    external_path: str | None


class ExternalPaths:
    """Paimon's round-robin external-path provider for one bucket (``specific-fs`` is round
    robin over the roots of that scheme)."""

    def __init__(self, roots: Sequence[str], relative_bucket: str) -> None:
        self.roots = tuple(roots)
        self.relative_bucket = relative_bucket
        self.position = random.randrange(len(self.roots))

    def next_uri(self, file_name: str) -> str:
        """The URI of the next file, as Paimon's ``getNextExternalDataPath``."""
        self.position = (self.position + 1) % len(self.roots)
        return f"{self.roots[self.position].rstrip('/')}/{self.relative_bucket}/{file_name}"


class FileLocations:
    """Locations of one table's files (relative layout plus external roots)."""

    def __init__(
        self,
        root: str,
        options: Mapping[str, str],
        protocol: str = "file",
        is_local: bool = True,
    ) -> None:
        self.root = root
        self.protocol = protocol
        self.is_local = is_local
        self.data_directory = data_directory(F.DATA_FILE_PATH_DIRECTORY.find(options))
        self.data_prefix = F.DATA_FILE_PREFIX.get(options)
        self.changelog_prefix = F.CHANGELOG_FILE_PREFIX.get(options)
        self.index_in_data_dir = F.INDEX_FILE_IN_DATA_FILE_DIR.get(options)
        listed = list(F.DATA_FILE_EXTERNAL_PATHS.get(options))
        #: every root the table names: files below them may be read
        self.external_roots = tuple(listed)
        self.strategy = F.DATA_FILE_EXTERNAL_PATHS_STRATEGY.get(options).strip().lower()
        self.write_roots: tuple[str, ...] = ()
        if listed and self.strategy != "none":
            specific = (F.DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS.find(options) or "").strip().lower()
            roots = listed
            if self.strategy == "specific-fs":
                roots = [p for p in listed if split_uri(p)[0] == specific and _SCHEME.match(p)]
            self.write_roots = tuple(roots)

        self.partitions: PartitionPaths | None = None

    @classmethod
    def of(cls, file_io: FileIO, root: str, schema: Any, options: Any = None) -> FileLocations:
        """The locations of a table (a :class:`~lakeops.format.schema.TableSchema` and, optionally,
        its parsed :class:`~lakeops.options.TableOptions`)."""
        from lakeops.options import TableOptions

        parsed = options if options is not None else TableOptions.from_schema(schema)
        loc = cls(root, schema.options, file_io.protocol, file_io.is_local)
        loc.partitions = partition_paths(schema, parsed)
        return loc

    def _partition_dir(self, partition: bytes) -> str:
        if self.partitions is None:
            raise ValueError("FileLocations built without the table's partition layout")
        return self.partitions.dir_of(partition)

    def relative_bucket(self, partition: bytes, bucket: int) -> str:
        """Bucket directory of a serialized partition, relative to the table root."""
        return self.bucket_dir(self._partition_dir(partition), bucket)

    def bucket_path(self, partition: bytes, bucket: int) -> str:
        """Absolute bucket directory of a serialized partition."""
        return join(self.root, self.relative_bucket(partition, bucket))

    def entry_path(
        self, partition: bytes, bucket: int, file_name: str, external: str | None
    ) -> str:
        """Storage path of a data/changelog file of a manifest entry."""
        return self.data_file(self.bucket_path(partition, bucket), file_name, external)

    def sibling(self, external: str | None, file_name: str) -> str | None:
        """The ``_EXTERNAL_PATH`` of a new file ``file_name`` beside the file at ``external``
        (None: beside a file in its bucket directory). ``external`` must resolve
        (:meth:`resolve_external`)."""
        if not external:
            return None
        self.resolve_external(external)
        return f"{external.rsplit('/', 1)[0]}/{file_name}"

    def index_entry_path(self, partition: bytes, bucket: int, meta: Any) -> str:
        """Storage path of an index manifest entry's file (an ``IndexFileMeta``)."""
        external = dict(meta.extra).get("_EXTERNAL_PATH")
        return self.index_file(self._partition_dir(partition), bucket, meta.file_name, external)

    def new_index_file(self, partition: bytes, bucket: int, n: int = 0) -> NewFile:
        """Where a new bucket index file goes (``IndexPathFactory.newPath``)."""
        name = f"index-{uuid.uuid4()}-{n}"
        if not self.index_in_data_dir:
            return NewFile(name, join(self.root, "index", name), None)
        pdir = self._partition_dir(partition)
        external = self.external_paths(pdir, bucket)
        return self.new_file(join(self.root, self.bucket_dir(pdir, bucket)), name, external)

    def external_paths_of(self, partition: bytes, bucket: int) -> ExternalPaths | None:
        """:meth:`external_paths` of a serialized partition."""
        return self.external_paths(self._partition_dir(partition), bucket)

    # ------------------------------------------------------------------ reading
    def bucket_dir(self, partition_dir: str, bucket: int) -> str:
        """The bucket directory relative to the table root (``relativeBucketPath``)."""
        return bucket_dir(partition_dir, bucket, self.data_directory)

    def data_file(self, directory: str, file_name: str, external_path: str | None) -> str:
        """Storage path of a data/changelog file of the bucket in ``directory`` (absolute)."""
        if external_path:
            return self.resolve_external(external_path, file_name)
        return join(directory, file_name)

    def resolve_external(self, uri: str, entry: str | None = None) -> str:
        """The storage path of an ``_EXTERNAL_PATH`` URI (of the file ``entry``, for errors).

        It must lie below one of the roots the table's own ``data-file.external-paths`` names:
        same scheme, same authority, the root's path a prefix on a ``/`` boundary, no ``..``
        segment or NUL anywhere; and on the file system lakeops opened the table with.
        Anything else is an :class:`~lakeops.errors.UnsupportedFeatureError` naming the entry
        and the option, raised before anything is read or deleted."""
        what = f"file {entry!r} at external path {uri!r}" if entry else f"external path {uri!r}"
        scheme, raw = split_uri(uri)
        path = _normal(raw)
        roots = [(s, _normal(p)) for s, p in map(split_uri, self.external_roots)]
        if path is None or not any(
            r_scheme == scheme and r_path is not None and path.startswith(r_path.rstrip("/") + "/")
            for r_scheme, r_path in roots
        ):
            raise UnsupportedFeatureError(
                f"{what} lies outside every root the table's option '{EXTERNAL_PATHS}' "
                f"names ({', '.join(self.external_roots) or 'none'}); lakeops does not follow "
                f"it (no read, no expiry, no orphan cleanup, no rollback). Add its root to "
                f"'{EXTERNAL_PATHS}' if the location is trusted, else repair the metadata"
            )
        self._refuse_other_fs(what, scheme, "read it")
        return path

    def _refuse_other_fs(self, what: str, scheme: str, action: str) -> None:
        """Refuse (UnsupportedFeatureError) a location whose scheme is not the table's file
        system: ``"<what> is on another file system … lakeops cannot <action> …"``."""
        if not _same_fs(scheme, self.protocol, self.is_local):
            raise UnsupportedFeatureError(
                f"{what} is on another file system ({scheme}) than the table "
                f"({self.protocol}); lakeops cannot {action} (option '{EXTERNAL_PATHS}')"
            )

    def index_file(
        self, partition_dir: str, bucket: int, file_name: str, external_path: str | None
    ) -> str:
        """Storage path of a bucket index file (``IndexPathFactory.toPath(IndexFileMeta)``)."""
        if external_path:
            return self.resolve_external(external_path, file_name)
        if self.index_in_data_dir:
            return join(self.root, self.bucket_dir(partition_dir, bucket), file_name)
        return join(self.root, "index", file_name)

    # ------------------------------------------------------------------ writing
    def check_writable(self) -> None:
        """Refuse (before writing) an external-path strategy lakeops cannot follow exactly."""
        if not self.external_roots or self.strategy == "none":
            return
        if self.strategy not in WRITE_STRATEGIES:
            raise UnsupportedFeatureError(
                f"option '{EXTERNAL_STRATEGY}' = {self.strategy!r} is not written by lakeops "
                f"(it writes {', '.join(WRITE_STRATEGIES)}); set it to 'round-robin'"
            )
        if not self.write_roots:
            raise ConfigurationError(
                f"no root of '{EXTERNAL_PATHS}' has the scheme that "
                f"'{EXTERNAL_SPECIFIC_FS}' names; Paimon refuses this table too"
            )
        for root in self.write_roots:
            scheme = split_uri(root)[0]
            if _SCHEME.match(root) is None:
                raise ConfigurationError(
                    f"external path {root!r} has no scheme (e.g. file:/…, s3://…); Paimon "
                    f"refuses it (option '{EXTERNAL_PATHS}')"
                )
            self._refuse_other_fs(f"external path {root!r}", scheme, "write there")

    def external_paths(self, partition_dir: str, bucket: int) -> ExternalPaths | None:
        """The external-path provider of one bucket, or None when files stay in the table."""
        if not self.write_roots or self.strategy == "none":
            return None
        self.check_writable()
        return ExternalPaths(self.write_roots, self.bucket_dir(partition_dir, bucket))

    def new_file(self, directory: str, file_name: str, external: ExternalPaths | None) -> NewFile:
        """Where to write ``file_name`` of the bucket in ``directory`` (``newPathFromName``)."""
        if external is None:
            return NewFile(file_name, join(directory, file_name), None)
        uri = external.next_uri(file_name)
        return NewFile(file_name, self.resolve_external(uri), uri)

    def new_name(
        self, changelog: bool, extension: str = "parquet", n: int = 0, token: str | None = None
    ) -> str:
        """A fresh data or changelog file name: ``<prefix><uuid>-<n>.<extension>``.

        ``token`` (12 hex digits, :func:`new_name_token`) replaces the uuid's first 12 digits,
        so every file one job writes can be found by :meth:`job_name_prefixes` (the name stays
        uuid-shaped; the other 18 random digits keep it unique)."""
        prefix = self.changelog_prefix if changelog else self.data_prefix
        random_part = str(uuid.uuid4())
        if token is not None:
            random_part = f"{token[:8]}-{token[8:12]}{random_part[13:]}"
        return f"{prefix}{random_part}-{n}.{extension}"

    def job_name_prefixes(self, token: str) -> tuple[str, str]:
        """The data and changelog file-name prefixes of every file named with ``token``."""
        tail = f"{token[:8]}-{token[8:12]}-"
        return self.data_prefix + tail, self.changelog_prefix + tail

    def job_directories(self, partition: bytes, bucket: int) -> list[str]:
        """Every directory a new file of the bucket may be written to: the bucket directory,
        and the bucket's directory below each external root the table writes to."""
        directories = [self.bucket_path(partition, bucket)]
        external = self.external_paths_of(partition, bucket)
        if external is not None:
            for root in external.roots:
                probe = f"{root.rstrip('/')}/{external.relative_bucket}/probe"
                directories.append(self.resolve_external(probe).rsplit("/", 1)[0])
        return directories


def new_name_token() -> str:
    """A random token of 12 hex digits naming the files of one job (see
    :meth:`FileLocations.new_name`)."""
    return uuid.uuid4().hex[:12]
