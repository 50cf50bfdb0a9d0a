"""Rollback as a commit: a new snapshot whose live files hold what an older one held.

Paimon's own rollback deletes the newer snapshots and lets the next commit take their ids. That
reuses snapshot ids, hides concurrent writers' snapshots and deletes files that published
snapshots (and the readers on them) still reference. lakeops rolls back forward instead: it
publishes snapshot N+1 as an ``OVERWRITE`` whose delta deletes every file live in N that the
target did not hold and adds the target's files that N no longer holds (the target's index
files likewise: a dynamic bucket's key index, a bucket's deletion vectors), through the same
exclusive, re-planned commit as every write. A writer that commits afterwards builds on the
rolled-back table; one that publishes first makes the rollback re-plan on top of it. The newer
snapshots stay, readable, until expiry removes them.

A data or index file that a newer snapshot deleted is never added back under its own name:
Paimon's expiry deletes the files an expired snapshot's delta deleted without asking whether a
later snapshot added them again (lakeops' expiry asks only the first snapshot it keeps), and
pypaimon's reader drops every file a manifest ever deleted. The rollback copies such files to
new names (same bytes, same metadata) and adds the copies; an index file's deletion vectors
then name the copies of their data files (the blobs stay where they are: only the manifest
names the data files), since Paimon's readers apply a deletion-vector table's vectors to its
files without merging them.
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

DV_RANGES = "_DELETIONS_VECTORS_RANGES"
EXTERNAL_PATH = "_EXTERNAL_PATH"

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
    # (a tag's changelog may be gone with its snapshot: Paimon's expiry keeps only its data)
    check_snapshots(store, copies.locations, [target], live=True, changelog=False)
    check_snapshots(store, copies.locations, [latest] if latest else [], live=True)
    same = _SameBytes(store, copies.locations)
    wanted = _by_content(store.live_entries(target))
    wanted_index = {_index_key(e): e for e in store.index_entries(target)}
    nothing = PlannedChange(())

    def plan(latest: Snapshot | None) -> PlannedChange:
        now = _by_content(store.live_entries(latest))
        entries = [_as(FileKind.DELETE, e) for e in _surplus(now, wanted, same)]
        # the target's files live now under other names (earlier rollbacks' copies), and
        # those copied now: a deletion vector of the target names the original
        renamed: dict[str, str] = {}
        for gone in _surplus(wanted, now, same, held_as=renamed):
            copy = copies.of(gone)
            renamed[gone.file.file_name] = copy.file.file_name
            entries.append(copy)
        now_index = {_index_key(e): e for e in store.index_entries(latest)}
        kept, missing = _index_matches(wanted_index, now_index, renamed, same)
        index = [
            IndexManifestEntry(FileKind.DELETE, i.partition, i.bucket, i.file)
            for key, i in now_index.items()
            if key not in kept
        ]
        # never under its old name again (expiry may delete that): a copy
        index += [copies.index_of(i, renamed) for i in missing]
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
    copies.discard(
        keep={e.file.file_name for e in store.delta_entries(snapshot)}
        | {e.file.file_name for e in store.index_entries(snapshot)}
    )
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
    renamed: dict[str, str] = {}
    if _surplus(now, wanted, same) or _surplus(wanted, now, same, held_as=renamed):
        return False
    now_index = {_index_key(e): e for e in store.index_entries(latest)}
    wanted_index = {_index_key(e): e for e in store.index_entries(target)}
    kept, missing = _index_matches(wanted_index, now_index, renamed, same)
    return not missing and kept == set(now_index)


def _index_matches(
    wanted: dict[tuple[bytes, int, str, str], IndexManifestEntry],
    now: dict[tuple[bytes, int, str, str], IndexManifestEntry],
    renamed: dict[str, str],
    same: _SameBytes,
) -> tuple[set[tuple[bytes, int, str, str]], list[IndexManifestEntry]]:
    """(the keys of ``now`` that hold an index file of ``wanted``, the files of ``wanted``
    none holds). A file is held by itself unless its deletion vectors name a data file that
    lives on under another name (``renamed``), or else by a file of ``now`` alike in the
    manifest (those names mapped) whose bytes are the same (an earlier rollback's copy)."""
    kept: set[tuple[bytes, int, str, str]] = set()
    missing: list[IndexManifestEntry] = []
    by_content: dict[tuple[object, ...], list[tuple[bytes, int, str, str]]] = {}
    for key, other in now.items():  # each file of ``now`` described once
        by_content.setdefault(_index_content(other, {}), []).append(key)
    for key, entry in wanted.items():
        if key in now and not _names_any(entry, renamed):
            kept.add(key)
            continue
        path = same.locations.index_entry_path(entry.partition, entry.bucket, entry.file)
        held = next(
            (
                k
                for k in by_content.get(_index_content(entry, renamed), ())
                if k not in kept
                and same.files(
                    path,
                    same.locations.index_entry_path(now[k].partition, now[k].bucket, now[k].file),
                )
            ),
            None,
        )
        if held is None:
            missing.append(entry)
        else:
            kept.add(held)
    return kept, missing


def _index_content(e: IndexManifestEntry, renamed: dict[str, str]) -> tuple[object, ...]:
    """What the index manifest says of an index file but its name and place, its deletion
    vectors' data files named through ``renamed``."""
    extra = dict(e.file.extra)
    extra.pop(EXTERNAL_PATH, None)
    if DV_RANGES in extra:
        extra[DV_RANGES] = [
            {**r, "f0": renamed.get(r["f0"], r["f0"])} for r in extra[DV_RANGES] or ()
        ]
    return (
        e.partition,
        e.bucket,
        e.file.index_type,
        e.file.file_size,
        e.file.row_count,
        repr(sorted(extra.items())),
    )


class _Copies:
    """Copies of data and index files under new names, made once per file (an index file
    once per renaming of the data files its deletion vectors name) and attempt-independent.

    A file a rollback adds back is always a copy: Paimon's expiry deletes the files an expired
    snapshot dropped when the first snapshot it keeps does not hold them, without asking
    whether a later snapshot added them again, and lakeops' expiry does the same."""

    def __init__(self, store: TableStore, schema: TableSchema) -> None:
        self.store = store
        self.locations = FileLocations.of(store.file_io, store.root, schema)
        # original name -> (entry, the copy's paths: data file first, then its extra files)
        self.made: dict[str, tuple[ManifestEntry, list[str]]] = {}
        # (original index file, the renamings it applies) -> (entry, the copy's path)
        self.made_index: dict[
            tuple[str, tuple[tuple[str, str], ...]], tuple[IndexManifestEntry, list[str]]
        ] = {}

    def index_of(self, e: IndexManifestEntry, renamed: dict[str, str]) -> IndexManifestEntry:
        """An ADD entry of a copy of ``e``'s index file (the same bytes under a new name),
        its deletion vectors' ranges naming ``renamed[f]`` for a data file ``f`` renamed
        (the blobs stay where they are: only the manifest names the data files)."""
        extra = dict(e.file.extra)
        ranges = extra.get(DV_RANGES) or ()
        renaming = tuple(sorted((r["f0"], renamed[r["f0"]]) for r in ranges if r["f0"] in renamed))
        key = (e.file.file_name, renaming)
        made = self.made_index.get(key)
        if made is not None:
            return made[0]
        source = self.locations.index_entry_path(e.partition, e.bucket, e.file)
        new = self.locations.new_index_file(e.partition, e.bucket)
        fio = self.store.file_io
        try:
            fio.mkdirs(new.path.rsplit("/", 1)[0])
            fio.fs.copy(source, new.path)
        except BaseException:
            fio.delete(new.path)
            raise
        names = dict(renaming)
        if DV_RANGES in extra:
            extra[DV_RANGES] = [{**r, "f0": names.get(r["f0"], r["f0"])} for r in ranges]
        extra.pop(EXTERNAL_PATH, None)
        if new.external_path:
            extra[EXTERNAL_PATH] = new.external_path
        meta = replace(e.file, file_name=new.name, extra=tuple(extra.items()))
        entry = IndexManifestEntry(FileKind.ADD, e.partition, e.bucket, meta)
        self.made_index[key] = (entry, [new.path])
        return entry

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
        made: list[tuple[ManifestEntry | IndexManifestEntry, list[str]]] = [
            *self.made.values(),
            *self.made_index.values(),
        ]
        for entry, paths in made:
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
    held_as: dict[str, str] | None = None,
) -> list[ManifestEntry]:
    """The files of ``have`` that ``other`` does not hold: a file of ``have`` is held by a
    file of ``other`` of the same name, or else by a file alike in the manifest whose bytes
    are the same (a copy; ``held_as`` gets its name under the original's); each file of
    ``other`` holds one file of ``have`` at most."""
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
                if held_as is not None:
                    held_as[e.file.file_name] = match.file.file_name
    return out


def _names_any(e: IndexManifestEntry, renamed: dict[str, str]) -> bool:
    """Whether the deletion vectors of index file ``e`` name a data file of ``renamed``."""
    return any(r["f0"] in renamed for r in dict(e.file.extra).get(DV_RANGES) or ())


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
        return self.files(self._path(a), self._path(b))

    def files(self, a: str, b: str) -> bool:
        """Whether the files at paths ``a`` and ``b`` hold the same bytes."""
        fs = self.store.file_io.fs
        with fs.open(a, "rb") as x, fs.open(b, "rb") as y:
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
