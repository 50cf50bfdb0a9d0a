"""Read access to one table's metadata: schemas, snapshots, manifests and live files.

Metadata files are immutable once written (snapshot ids are never reused), so manifests are
cached per store. ``LATEST``/``EARLIEST`` are hints only: the latest snapshot is found by
starting at the hint and probing upward until ``snapshot-(N+1)`` does not exist (and by listing
when that ends below ``EARLIEST``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from lakeops.errors import (
    ConfigurationError,
    CorruptDataFileError,
    CorruptMetadataError,
    CorruptTableError,
    LakeopsError,
    MissingDataFileError,
    MissingMetadataError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from lakeops.format import paths
from lakeops.format.index_manifest import (
    HASH_INDEX,
    IndexManifestEntry,
    decode_hashes,
    read_index_manifest,
)
from lakeops.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_manifest,
    read_manifest_list,
)
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import FileIO, join
from lakeops.parallel import run_ordered
from lakeops.store.locations import FileLocations

__all__ = [
    "BRANCH_OWN_DIRS",
    "MAX_AVRO_METADATA_BYTES",
    "MAX_JSON_METADATA_BYTES",
    "TableStore",
    "branch_dir",
    "fold_entries",
]

_T = TypeVar("_T")

#: the largest JSON metadata file (snapshot, schema, tag, changelog) lakeops reads; Paimon's
#: are kilobytes (a schema of 10,000 fields is about 1 MiB)
MAX_JSON_METADATA_BYTES = 64 << 20
#: the largest Avro metadata file (manifest, manifest list, index manifest) lakeops reads;
#: Paimon rolls manifests at ``manifest.target-file-size`` (8 MiB)
MAX_AVRO_METADATA_BYTES = 1 << 30


def fold_entries(
    entries: Iterable[ManifestEntry],
) -> dict[tuple[bytes, int, int, str], ManifestEntry]:
    """Apply ADD/DELETE entries in order; what remains are the live files."""
    live: dict[tuple[bytes, int, int, str], ManifestEntry] = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            live[e.identifier] = e
        else:
            live.pop(e.identifier, None)
    return live


#: the metadata a branch keeps of its own, under ``branch/branch-<name>/`` (Paimon's
#: ``SnapshotManager`` / ``SchemaManager`` / ``TagManager`` / ``ConsumerManager`` with a branch);
#: manifests, index files and data files are the table's, shared by every branch
BRANCH_OWN_DIRS = frozenset({"snapshot", "schema", "tag", "changelog", "consumer"})


def branch_dir(name: str) -> str:
    """A branch's directory, relative to the table: ``branch/branch-<name>``."""
    return f"branch/branch-{name}"


class TableStore:
    """Metadata of the table stored at ``root`` on ``file_io`` — of its main branch, or of
    ``branch`` (whose snapshots, schemas, tags, changelogs and consumers live under
    ``branch/branch-<name>/``; see :data:`BRANCH_OWN_DIRS`)."""

    _CACHE_SIZE = 512

    def __init__(self, file_io: FileIO, root: str, branch: str | None = None) -> None:
        self.file_io = file_io
        self.root = root
        #: the branch this store reads and writes (None: main)
        self.branch = branch
        self._branch_prefix = "" if branch is None else branch_dir(branch) + "/"
        self._manifest_cache: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        # guards the manifest cache only (never held while reading): maintenance and the
        # cross-partition bootstrap read manifests on several threads
        self._cache_lock = threading.Lock()
        self._index_cache: dict[str, list[IndexManifestEntry]] = {}
        #: manifest lists by name (immutable, uniquely named files; bounded as manifests are)
        self._list_cache: OrderedDict[str, list[ManifestFileMeta]] = OrderedDict()
        self._schema_cache: dict[int, TableSchema] = {}

    def path(self, relative: str) -> str:
        """The storage path of ``relative`` (``snapshot/snapshot-3``, ``manifest/…``): under
        the branch's directory for what a branch keeps of its own."""
        if self._branch_prefix and relative.split("/", 1)[0] in BRANCH_OWN_DIRS:
            return join(self.root, self._branch_prefix + relative)
        return join(self.root, relative)

    def load(
        self,
        relative: str,
        what: str,
        decode: Callable[[bytes], _T],
        max_bytes: int = MAX_JSON_METADATA_BYTES,
        way_out: str = "",
    ) -> _T:
        """Read and decode the metadata file at ``relative`` (to the table directory).

        Every failure names the file: a missing file, one larger than ``max_bytes``, nesting
        too deep for the parser, or content that does not decode are
        :class:`CorruptMetadataError` (``way_out`` is appended: what the operator can do).
        A :class:`ConfigurationError` from decoding (a missing codec library, a type or feature
        lakeops does not serve) is raised as it is: the file is fine.
        """
        tail = f" {way_out}" if way_out else ""
        try:
            data = self.file_io.read_bytes(self.path(relative), max_bytes)
        except FileNotFoundError:
            raise MissingMetadataError(
                f"{what} {relative} of table {self.root} is missing.{tail}", path=relative
            ) from None
        if len(data) > max_bytes:
            raise CorruptMetadataError(
                f"{what} {relative} of table {self.root} is larger than {max_bytes >> 20} MiB, "
                f"far beyond any file Paimon writes; lakeops does not read it.{tail}",
                path=relative,
            )
        try:
            return decode(data)
        except ConfigurationError:
            raise  # a well-formed file asking for something lakeops does not serve
        except RecursionError:
            raise CorruptMetadataError(
                f"{what} {relative} of table {self.root} is nested too deeply to be "
                f"Paimon metadata.{tail}",
                path=relative,
            ) from None
        except (LakeopsError, KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise CorruptMetadataError(
                f"{what} {relative} of table {self.root} cannot be read: {exc}.{tail}",
                path=relative,
            ) from None

    # ------------------------------------------------------------------ schemas
    def schema_ids(self) -> list[int]:
        names = self.file_io.list_names(self.path(paths.SCHEMA_DIR))
        return sorted(
            int(n.split("-", 1)[1])
            for n in names
            if n.startswith("schema-") and n.split("-", 1)[1].isdigit()
        )

    def schema(self, schema_id: int) -> TableSchema:
        """Schema ``schema_id`` (cached: a published schema file never changes)."""
        cached = self._schema_cache.get(schema_id)
        if cached is not None:
            return cached
        schema = self.load(paths.schema_path(schema_id), "schema", TableSchema.from_json)
        self._schema_cache[schema_id] = schema
        return schema

    def latest_schema(self) -> TableSchema:
        ids = self.schema_ids()
        if not ids:
            raise TableNotFoundError(f"no table at {self.root} (no schema files)")
        return self.schema(ids[-1])

    # ---------------------------------------------------------------- snapshots
    def _hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_bytes(self.path(name), 64).decode().strip())
        except (OSError, ValueError):  # missing, or replaced while read: hints are only hints
            return None

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(paths.snapshot_path(snapshot_id)))

    def snapshot_ids(self) -> list[int]:
        names = self.file_io.list_names(self.path(paths.SNAPSHOT_DIR))
        return sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())

    def earliest_hint(self) -> int | None:
        """The id the ``EARLIEST`` hint names (None when it is missing or unreadable). Expiry
        moves it before it deletes snapshots, so every id below it is announced expired."""
        return self._hint(paths.EARLIEST_HINT)

    def latest_snapshot_id(self) -> int | None:
        """The newest snapshot id, or None for a table without snapshots.

        Found from the ``LATEST`` hint by probing upward; the hint is trusted only when the
        snapshot it leads to is not below ``EARLIEST`` (a snapshot below it was announced
        expired, so a newer one exists: a stale hint that names an id re-created after its
        expiry must not stop the probe there). Otherwise the snapshot directory is listed."""
        hint = self._hint(paths.LATEST_HINT)
        if hint is not None and self.snapshot_exists(hint):
            latest = hint
            while self.snapshot_exists(latest + 1):
                latest += 1
            earliest = self.earliest_hint()
            if earliest is None or latest >= earliest:
                return latest
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        hint = self._hint(paths.EARLIEST_HINT)
        if hint is not None and self.snapshot_exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id``; a :class:`SnapshotNotFoundError` if there is none, a
        :class:`CorruptMetadataError` naming the file (and the way out) if it is unreadable."""
        try:
            return self._load_snapshot(snapshot_id)
        except MissingMetadataError:
            expired = self.expired_error(snapshot_id)
            if expired is not None:
                raise expired from None
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} does not exist in table {self.root}",
                snapshot_id=snapshot_id,
            ) from None

    def expired_error(self, snapshot_id: int, what: str = "") -> SnapshotExpiredError | None:
        """A :class:`SnapshotExpiredError` for ``snapshot_id`` when it is older than the
        earliest retained snapshot (expiry removed it), else None. ``what``: what was asked of
        it, for the message (default: the snapshot)."""
        earliest = self.earliest_snapshot_id()
        if earliest is None or snapshot_id >= earliest:
            return None
        latest = self.latest_snapshot_id()
        return SnapshotExpiredError(
            f"{what or f'snapshot {snapshot_id}'} of table {self.root} has expired: snapshot "
            f"expiry removed snapshots before {earliest} (the table is healthy; nothing needs "
            f"restoring or rolling back). Read again, from a retained snapshot ({earliest}.."
            f"{latest}); tag a snapshot to keep it for later reads",
            snapshot_id=snapshot_id,
        )

    def _load_snapshot(self, snapshot_id: int) -> Snapshot:
        return self.load(
            paths.snapshot_path(snapshot_id),
            "snapshot",
            lambda data: Snapshot.from_json(data, paths.snapshot_path(snapshot_id)),
            way_out=(
                "Nothing that must read this snapshot runs: reads of it, commits on it (if "
                "it is the latest), expiry and orphan cleanup stop rather than guess what it "
                "references. Restore the file from a backup; older snapshots still read "
                "(time travel with snapshot_id). `lakeops check` lists every problem"
            ),
        )

    def changelog(self, snapshot_id: int) -> Snapshot:
        """A long-lived changelog (``changelog/changelog-<id>``) of an expired snapshot
        (:class:`MissingMetadataError`, a FileNotFoundError, if there is none)."""
        relative = f"{paths.CHANGELOG_DIR}/changelog-{snapshot_id}"
        return self.load(relative, "changelog", lambda data: Snapshot.from_json(data, relative))

    def changelog_or_snapshot(self, snapshot_id: int) -> Snapshot:
        """A snapshot, or the kept changelog of an expired one (else
        :class:`SnapshotNotFoundError`)."""
        if self.snapshot_exists(snapshot_id):
            return self.snapshot(snapshot_id)
        try:
            return self.changelog(snapshot_id)
        except FileNotFoundError:
            expired = self.expired_error(
                snapshot_id,
                f"the changelog of snapshot {snapshot_id} (not kept longer: see "
                "changelog.num-retained.*)",
            )
            raise expired or SnapshotNotFoundError(
                f"snapshot {snapshot_id} of {self.root} does not exist and no changelog of it "
                "was kept (see changelog.num-retained.*)",
                snapshot_id=snapshot_id,
            ) from None

    def latest_snapshot(self) -> Snapshot | None:
        sid = self.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    # ---------------------------------------------------------------- manifests
    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        """The manifests a manifest list names (cached: a list is never rewritten)."""
        with self._cache_lock:
            cached = self._list_cache.get(name)
            if cached is not None:
                self._list_cache.move_to_end(name)
                return list(cached)
        relative = paths.manifest_path(paths.check_file_name(name, "manifest list", "snapshot"))
        metas = self.load(
            relative,
            "manifest list",
            lambda data: read_manifest_list(data, relative),
            MAX_AVRO_METADATA_BYTES,
        )
        self.remember_manifest_list(name, metas)
        return list(metas)

    def remember_manifest_list(self, name: str, metas: Sequence[ManifestFileMeta]) -> None:
        """Cache the content of manifest list ``name`` (read, or just written by a commit)."""
        with self._cache_lock:
            self._list_cache[name] = list(metas)
            if len(self._list_cache) > self._CACHE_SIZE:
                self._list_cache.popitem(last=False)

    def manifest(self, name: str) -> list[ManifestEntry]:
        """The entries of manifest ``name`` (cached; safe to call from several threads)."""
        with self._cache_lock:
            cached = self._manifest_cache.get(name)
            if cached is not None:
                self._manifest_cache.move_to_end(name)
                return cached
        relative = paths.manifest_path(paths.check_file_name(name, "manifest", "manifest list"))
        entries = self.load(
            relative,
            "manifest",
            lambda data: read_manifest(data, relative),
            MAX_AVRO_METADATA_BYTES,
        )
        with self._cache_lock:
            self._manifest_cache[name] = entries
            if len(self._manifest_cache) > self._CACHE_SIZE:
                self._manifest_cache.popitem(last=False)
        return entries

    def manifests(
        self, names: Sequence[str], parallelism: int | None = 1
    ) -> list[list[ManifestEntry]]:
        """``[self.manifest(n) for n in names]``, ``parallelism`` manifests read at once (the
        work waits on storage); the first failure in the order of ``names`` is raised."""
        return run_ordered(self.manifest, names, parallelism)

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Base + delta manifests of a snapshot: together they describe every live file."""
        return self.manifest_list(snapshot.base_manifest_list) + self.manifest_list(
            snapshot.delta_manifest_list
        )

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The ADD/DELETE entries this snapshot's commit made."""
        return [
            e
            for m in self.manifest_list(snapshot.delta_manifest_list)
            for e in self.manifest(m.file_name)
        ]

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The changelog files this snapshot's commit added (none without a producer)."""
        if not snapshot.changelog_manifest_list:
            return []
        return [
            e
            for m in self.manifest_list(snapshot.changelog_manifest_list)
            for e in self.manifest(m.file_name)
            if e.kind == FileKind.ADD
        ]

    def index_entries(self, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
        """The live index files of ``snapshot`` (its index manifest; [] if it has none)."""
        return self.index_manifest_entries(snapshot.index_manifest if snapshot else None)

    def index_manifest_entries(self, name: str | None) -> list[IndexManifestEntry]:
        """The entries of the index manifest ``name`` ([] for None)."""
        if not name:
            return []
        if name not in self._index_cache:
            relative = paths.manifest_path(
                paths.check_file_name(name, "index manifest", "snapshot")
            )
            self._index_cache[name] = self.load(
                relative,
                "index manifest",
                lambda data: read_index_manifest(data, relative),
                MAX_AVRO_METADATA_BYTES,
            )
        return self._index_cache[name]

    def locations(self, schema: TableSchema | None = None) -> FileLocations:
        """Where this table's files live (:mod:`lakeops.store.locations`), by ``schema``'s
        options (default: the latest schema)."""
        return FileLocations.of(self.file_io, self.root, schema or self.latest_schema())

    def hash_index(
        self, entry: IndexManifestEntry, schema: TableSchema | None = None
    ) -> np.ndarray:
        """The int32 key hashes of the HASH index file of an index manifest entry (in
        ``index/``, or in its bucket directory / at its external path, see
        :meth:`FileLocations.index_entry_path`)."""
        meta = entry.file
        if meta.index_type != HASH_INDEX:
            raise CorruptTableError(f"{meta.file_name} is a {meta.index_type} index, not HASH")
        path = self.locations(schema).index_entry_path(entry.partition, entry.bucket, meta)
        root = self.root.rstrip("/") + "/"
        name = path[len(root) :] if path.startswith(root) else path
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise MissingDataFileError(
                f"index file {name} of table {self.root} is missing: a snapshot references it",
                path=name,
            ) from None
        if len(data) != meta.file_size:
            raise CorruptDataFileError(
                f"index file {name} is {len(data)} bytes, but its index manifest entry records "
                f"{meta.file_size}: it was truncated or replaced, and lakeops does not read it",
                path=name,
            )
        return decode_hashes(data, meta.file_name)

    def live_entries(
        self, snapshot: Snapshot | None, *, parallelism: int | None = 1
    ) -> list[ManifestEntry]:
        """Every data file live in ``snapshot`` (ADD entries that were not deleted). Its
        manifests are read ``parallelism`` at once and folded in their order, so the result
        does not depend on ``parallelism``."""
        if snapshot is None:
            return []
        names = [meta.file_name for meta in self.data_manifests(snapshot)]
        entries: list[ManifestEntry] = []
        for manifest in self.manifests(names, parallelism):
            entries.extend(manifest)
        return list(fold_entries(entries).values())
