"""Rollback as a commit: a new snapshot whose live files hold what an older one held.

Paimon's own rollback deletes the newer snapshots and lets the next commit take their ids. That
reuses snapshot ids, hides concurrent writers' snapshots and deletes files that published
snapshots (and the readers on them) still reference. lakeops rolls back forward instead: it
publishes snapshot N+1 as an ``OVERWRITE`` whose delta deletes every file live in N that the
target did not hold and adds the target's files that N no longer holds (the target's index
files likewise), through the same exclusive, re-planned commit as every write. A writer that
commits afterwards builds on the rolled-back table; one that publishes first makes the rollback
re-plan on top of it. The newer snapshots stay, readable, until expiry removes them.

A data file that a newer snapshot deleted is never added back under its own name: Paimon's
expiry deletes the files an expired snapshot's delta deleted without asking whether a later
snapshot added them again, and pypaimon's reader drops every file a manifest ever deleted. The
rollback copies such files to new names (same bytes, same metadata) and adds the copies.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from lakeops.commit.committer import Committer
from lakeops.commit.confine import check_snapshots
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.errors import CommitStateUnknownError, SnapshotNotFoundError
from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.io.data_formats import format_of
from lakeops.maintenance.iceberg import iceberg_after_commit
from lakeops.store import TableStore
from lakeops.store.context import TableContext
from lakeops.store.locations import FileLocations

log = logging.getLogger(__name__)

__all__ = ["holds", "rollback_to"]


def rollback_to(table: TableContext, snapshot: int | Snapshot) -> Snapshot | None:
    """Publish a snapshot with the contents of ``snapshot`` (an id of a retained snapshot, or
    a snapshot itself — a tag's, whose snapshot may have expired: the tag kept its files);
    returns it, or None when the latest snapshot already has exactly those files."""
    store, schema = table.store, table.schema
    if isinstance(snapshot, Snapshot):
        target = snapshot
    elif not store.snapshot_exists(snapshot):
        ids = store.snapshot_ids()
        raise SnapshotNotFoundError(
            f"cannot roll back to snapshot {snapshot}: it does not exist "
            f"(snapshots {ids[0] if ids else None}..{ids[-1] if ids else None})",
            snapshot_id=snapshot,
        )
    else:
        target = store.snapshot(snapshot)
    copies = _Copies(store, schema)
    # every file of the target and of the latest snapshot is located first, so a table whose
    # metadata points outside it is refused before anything is copied or committed
    latest = store.latest_snapshot()
    check_snapshots(store, copies.locations, [target, *([latest] if latest else [])], live=True)
    same = _SameBytes(store, copies.locations)
    wanted = _by_content(store.live_entries(target))
    wanted_index = {_index_key(e): e for e in store.index_entries(target)}
    nothing = PlannedChange(())

    def plan(latest: Snapshot | None) -> PlannedChange:
        now = _by_content(store.live_entries(latest))
        entries = [_as(FileKind.DELETE, e) for e in _surplus(now, wanted, same)]
        entries += [copies.of(e) for e in _surplus(wanted, now, same)]
        now_index = {_index_key(e): e for e in store.index_entries(latest)}
        index = [
            IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file)
            for key, e in now_index.items()
            if key not in wanted_index
        ]
        index += [
            IndexManifestEntry(FileKind.ADD, e.partition, e.bucket, e.file)
            for key, e in wanted_index.items()
            if key not in now_index
        ]
        if not entries and not index:
            return nothing
        return PlannedChange(entries, (), index)

    if plan(store.latest_snapshot()) is nothing:
        copies.discard(keep=())
        return None
    try:
        snapshot = Committer(table).commit_planned(plan, CommitKind.OVERWRITE)
    except CommitStateUnknownError:
        raise  # the snapshot may reference the copies: keep them
    except BaseException:
        copies.discard(keep=())
        raise
    copies.discard(keep={e.file.file_name for e in store.delta_entries(snapshot)})
    try:  # the rollback is published: like any commit, it must not fail for the Iceberg view
        iceberg_after_commit(table, snapshot)
    except Exception:
        log.warning("%s: Iceberg metadata after rollback failed", store.root, exc_info=True)
    return snapshot


def holds(store: TableStore, snapshot_id: int) -> bool:
    """Whether the latest snapshot already holds exactly what ``snapshot_id`` held."""
    if not store.snapshot_exists(snapshot_id):
        return False
    target, latest = store.snapshot(snapshot_id), store.latest_snapshot()
    same = _SameBytes(store, store.locations())
    wanted = _by_content(store.live_entries(target))
    now = _by_content(store.live_entries(latest))
    same_files = not _surplus(now, wanted, same) and not _surplus(wanted, now, same)
    return same_files and {_index_key(e) for e in store.index_entries(target)} == {
        _index_key(e) for e in store.index_entries(latest)
    }


class _Copies:
    """Copies of data files under new names, made once per file and attempt-independent."""

    def __init__(self, store: TableStore, schema: TableSchema) -> None:
        self.store = store
        self.locations = FileLocations.of(store.file_io, store.root, schema)
        # original name -> (entry, the copy's paths: data file first, then its extra files)
        self.made: dict[str, tuple[ManifestEntry, list[str]]] = {}

    def of(self, e: ManifestEntry) -> ManifestEntry:
        """An ADD entry of a copy of ``e``'s file (the same bytes under a new name)."""
        made = self.made.get(e.file.file_name)
        if made is not None:
            return made[0]
        f = e.file
        source = self.locations.entry_path(e.partition, e.bucket, f.file_name, f.external_path)
        name = self.locations.new_name(changelog=False, extension=format_of(f.file_name))
        external = self.locations.sibling(f.external_path, name)
        target = self.locations.entry_path(e.partition, e.bucket, name, external)
        fio = self.store.file_io
        # extra files (a data file's ``.index``) go with their data file: each copy gets its own,
        # so expiry of the original's snapshots cannot take the copy's index away
        extras = {x: _extra_copy_name(x, f.file_name, name) for x in f.extra_files}
        folder, source_folder = target.rsplit("/", 1)[0], source.rsplit("/", 1)[0]
        written = [target, *(f"{folder}/{x}" for x in extras.values())]
        try:
            fio.mkdirs(folder)
            fio.fs.copy(source, target)
            for old, new in extras.items():
                fio.fs.copy(f"{source_folder}/{old}", f"{folder}/{new}")
        except BaseException:
            for path in written:
                fio.delete(path)
            raise
        entry = ManifestEntry(
            FileKind.ADD,
            e.partition,
            e.bucket,
            e.total_buckets,
            replace(f, file_name=name, external_path=external, extra_files=tuple(extras.values())),
        )
        self.made[f.file_name] = (entry, written)
        return entry

    def discard(self, keep: set[str] | tuple[()]) -> None:
        """Delete the copies whose names are not in ``keep``."""
        for entry, paths in self.made.values():
            if entry.file.file_name not in keep:
                for path in paths:
                    self.store.file_io.delete(path)


def _extra_copy_name(extra: str, original: str, copy: str) -> str:
    """The name of a copy's extra file: the original's extra file name with the copy's data
    file name in place of the original's (``<data>.index`` → ``<copy>.index``)."""
    if extra.startswith(original):
        return copy + extra[len(original) :]
    return f"{copy}-{extra}"


def _content(e: ManifestEntry) -> tuple[object, ...]:
    """Everything the manifest says of a live file except its name: a copy made by a rollback
    says the same. Two different files can say the same too (after a rollback, sequence
    numbers are given out again, and two full compactions of a bucket can write files alike in
    size, keys, sequence range and level), so alike files of different names are compared byte
    for byte before they count as one (:class:`_SameBytes`)."""
    return (
        e.partition,
        e.bucket,
        replace(e.file, file_name="", external_path=None, extra_files=()),
    )


def _by_content(entries: list[ManifestEntry]) -> dict[tuple[object, ...], list[ManifestEntry]]:
    """Live files by what the manifest says of them (several files may say alike: an append
    table's unaware-bucket writes each number their rows from 0), so each maps to a list."""
    out: dict[tuple[object, ...], list[ManifestEntry]] = {}
    for e in entries:
        out.setdefault(_content(e), []).append(e)
    return out


def _surplus(
    have: dict[tuple[object, ...], list[ManifestEntry]],
    other: dict[tuple[object, ...], list[ManifestEntry]],
    same: _SameBytes,
) -> list[ManifestEntry]:
    """The files of ``have`` that ``other`` does not hold: a file of ``have`` is held by a
    file of ``other`` of the same name, or else by a file alike in the manifest whose bytes
    are the same (a copy); each file of ``other`` holds one file of ``have`` at most."""
    out: list[ManifestEntry] = []
    for key, entries in have.items():
        alike = other.get(key, [])
        names = {e.file.file_name for e in alike}
        own = {e.file.file_name for e in entries}
        free = [e for e in alike if e.file.file_name not in own]
        for e in entries:
            if e.file.file_name in names:
                continue
            match = next((o for o in free if same(e, o)), None)
            if match is None:
                out.append(e)
            else:
                free.remove(match)
    return out


class _SameBytes:
    """Whether two data files hold the same bytes (remembered per pair of names)."""

    CHUNK = 8 << 20

    def __init__(self, store: TableStore, locations: FileLocations) -> None:
        self.store = store
        self.locations = locations
        self.known: dict[frozenset[str], bool] = {}

    def __call__(self, a: ManifestEntry, b: ManifestEntry) -> bool:
        pair = frozenset((a.file.file_name, b.file.file_name))
        if pair not in self.known:
            self.known[pair] = self._compare(a, b)
        return self.known[pair]

    def _path(self, e: ManifestEntry) -> str:
        f = e.file
        return self.locations.entry_path(e.partition, e.bucket, f.file_name, f.external_path)

    def _compare(self, a: ManifestEntry, b: ManifestEntry) -> bool:
        fs = self.store.file_io.fs
        with fs.open(self._path(a), "rb") as x, fs.open(self._path(b), "rb") as y:
            while True:
                left, right = x.read(self.CHUNK), y.read(self.CHUNK)
                if left != right:
                    return False
                if not left:
                    return True


def _as(kind: int, e: ManifestEntry) -> ManifestEntry:
    return ManifestEntry(kind, e.partition, e.bucket, e.total_buckets, e.file)


def _index_key(e: IndexManifestEntry) -> tuple[bytes, int, str, str]:
    return (e.partition, e.bucket, e.file.index_type, e.file.file_name)
