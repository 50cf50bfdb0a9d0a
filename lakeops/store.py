"""Read access to one table's metadata: schemas, snapshots, manifests and live files.

Metadata files are immutable once written (snapshot ids are never reused), so manifests are
cached per store. ``LATEST``/``EARLIEST`` are hints only: the latest snapshot is found by
starting at the hint and probing upward until ``snapshot-(N+1)`` does not exist.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from lakeops.errors import CorruptTableError, TableNotFoundError
from lakeops.io.file_io import FileIO, join
from lakeops.spec import paths
from lakeops.spec.index_manifest import (
    HASH_INDEX,
    IndexManifestEntry,
    decode_hashes,
    read_index_manifest,
)
from lakeops.spec.locations import FileLocations
from lakeops.spec.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_manifest,
    read_manifest_list,
)
from lakeops.spec.schema import TableSchema
from lakeops.spec.snapshot import Snapshot

__all__ = ["TableStore", "fold_entries"]


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


class TableStore:
    """Metadata of the table stored at ``root`` on ``file_io``."""

    _CACHE_SIZE = 512

    def __init__(self, file_io: FileIO, root: str) -> None:
        self.file_io = file_io
        self.root = root
        self._manifest_cache: OrderedDict[str, list[ManifestEntry]] = OrderedDict()
        self._index_cache: dict[str, list[IndexManifestEntry]] = {}
        self._schema_cache: dict[int, TableSchema] = {}

    def path(self, relative: str) -> str:
        return join(self.root, relative)

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
        try:
            schema = TableSchema.from_json(
                self.file_io.read_bytes(self.path(paths.schema_path(schema_id)))
            )
        except FileNotFoundError:
            raise CorruptTableError(f"schema-{schema_id} of table {self.root} is missing") from None
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
            return int(self.file_io.read_bytes(self.path(name)).decode().strip())
        except (OSError, ValueError):  # missing, or replaced while read: hints are only hints
            return None

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(paths.snapshot_path(snapshot_id)))

    def snapshot_ids(self) -> list[int]:
        names = self.file_io.list_names(self.path(paths.SNAPSHOT_DIR))
        return sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())

    def latest_snapshot_id(self) -> int | None:
        """The newest snapshot id, or None for a table without snapshots."""
        hint = self._hint(paths.LATEST_HINT)
        if hint is not None and self.snapshot_exists(hint):
            latest = hint
            while self.snapshot_exists(latest + 1):
                latest += 1
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
        relative = paths.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(self.path(relative))
        except FileNotFoundError:
            from lakeops.errors import LakeopsError

            raise LakeopsError(
                f"snapshot {snapshot_id} does not exist in table {self.root}"
            ) from None
        return Snapshot.from_json(data, relative)

    def changelog(self, snapshot_id: int) -> Snapshot:
        """A long-lived changelog (``changelog/changelog-<id>``) of an expired snapshot."""
        relative = f"{paths.CHANGELOG_DIR}/changelog-{snapshot_id}"
        return Snapshot.from_json(self.file_io.read_bytes(self.path(relative)), relative)

    def changelog_or_snapshot(self, snapshot_id: int) -> Snapshot:
        """A snapshot, or the kept changelog of an expired one."""
        if self.snapshot_exists(snapshot_id):
            return self.snapshot(snapshot_id)
        try:
            return self.changelog(snapshot_id)
        except FileNotFoundError:
            from lakeops.errors import LakeopsError

            raise LakeopsError(
                f"snapshot {snapshot_id} of {self.root} has expired and its "
                "changelog was not kept (see changelog.num-retained.*)"
            ) from None

    def latest_snapshot(self) -> Snapshot | None:
        sid = self.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    # ---------------------------------------------------------------- manifests
    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        relative = paths.manifest_path(paths.check_file_name(name, "manifest list", "snapshot"))
        return read_manifest_list(self.file_io.read_bytes(self.path(relative)), relative)

    def manifest(self, name: str) -> list[ManifestEntry]:
        cached = self._manifest_cache.get(name)
        if cached is not None:
            self._manifest_cache.move_to_end(name)
            return cached
        relative = paths.manifest_path(paths.check_file_name(name, "manifest", "manifest list"))
        entries = read_manifest(self.file_io.read_bytes(self.path(relative)), relative)
        self._manifest_cache[name] = entries
        if len(self._manifest_cache) > self._CACHE_SIZE:
            self._manifest_cache.popitem(last=False)
        return entries

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
            data = self.file_io.read_bytes(self.path(relative))
            self._index_cache[name] = read_index_manifest(data, relative)
        return self._index_cache[name]

    def locations(self, schema: TableSchema | None = None) -> FileLocations:
        """Where this table's files live (:mod:`lakeops.spec.locations`), by ``schema``'s
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
        return decode_hashes(self.file_io.read_bytes(path), meta.file_name)

    def live_entries(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        """Every data file live in ``snapshot`` (ADD entries that were not deleted)."""
        if snapshot is None:
            return []
        entries: list[ManifestEntry] = []
        for meta in self.data_manifests(snapshot):
            entries.extend(self.manifest(meta.file_name))
        return list(fold_entries(entries).values())
