"""Snapshot expiry (Paimon's retention rules) with a decoupled changelog lifecycle.

Which snapshots expire, from the earliest up (``snapshot.*`` options):

* beyond ``snapshot.num-retained.max`` of the newest, always;
* then, while older than ``snapshot.time-retained``, as long as ``snapshot.num-retained.min``
  newest snapshots remain — at most ``snapshot.expire.limit`` per pass.

For each expired snapshot the data files its commit deleted are removed (they are no longer in
any retained snapshot — files still live, such as upgraded ones, are kept), then the manifests
and manifest lists no retained snapshot references — all found first, deleted only after
``EARLIEST`` moved and the snapshot files went (oldest first), so a kill at any point leaves no
snapshot whose files are gone. Files written by commits still in progress are never referenced
by an expired snapshot, so writers can keep running.

A pass reads the snapshots it expires and the first one it keeps, not the retained history:
a manifest or data file, once a snapshot no longer holds it, never returns under its name, so
what an expired snapshot shares with any later snapshot the first kept one holds too. Its cost
grows with what it removes (and with the tags and branches, which it always honours).

Changelog: when ``changelog.num-retained.*`` / ``changelog.time-retained`` keep more than the
snapshots do, the changelog of an expiring snapshot outlives it — its metadata is kept as
``changelog/changelog-<id>`` (and its changelog files and manifests stay) until the changelog
retention expires it, so incremental reads still see it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lakeops.commit.confine import check_snapshots, entry_paths_with_extras, index_paths
from lakeops.errors import ConfigurationError, MissingMetadataError, SnapshotNotFoundError
from lakeops.format import paths
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.maintenance.iceberg import (
    expire_iceberg_metadata,
    iceberg_head_files,
    sweep_iceberg_puffins,
)
from lakeops.options import TableOptions
from lakeops.options.option import Option
from lakeops.options.rows_retention import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_EXPIRATION_TIME,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
)
from lakeops.parallel import IO_THREADS, check_parallelism, delete_files, imap_ordered, run_ordered
from lakeops.store import TableStore
from lakeops.store.consumers import expire_consumers
from lakeops.store.context import TableContext
from lakeops.store.keep_alive import KeptAlive, consumer_floor, kept_alive, protected_snapshots
from lakeops.store.locations import FileLocations

__all__ = ["ExpireResult", "Retention", "expire_snapshots"]


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Retention:
    """Retention of snapshots and of changelog."""

    retain_min: int
    retain_max: int
    time_retained_ms: int
    expire_limit: int
    changelog_min: int
    changelog_max: int
    changelog_time_ms: int

    @classmethod
    def from_options(
        cls,
        schema: TableSchema,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained_ms: int | None = None,
        limit: int | None = None,
    ) -> Retention:
        """The table's retention options, each overridden by the argument of the same
        meaning when given (``retain_min`` = ``snapshot.num-retained.min``, ``retain_max`` =
        ``snapshot.num-retained.max``, ``time_retained_ms`` = ``snapshot.time-retained``,
        ``limit`` = ``snapshot.expire.limit``)."""
        o = schema.options

        def given(value: int | None, row: Option[int]) -> int:
            return value if value is not None else row.get(o)

        def changelog(row: Option[int], snapshots: int) -> int:
            value = row.find(o)
            return value if value is not None else snapshots

        smin = given(retain_min, SNAPSHOT_NUM_RETAINED_MIN)
        smax = given(retain_max, SNAPSHOT_NUM_RETAINED_MAX)
        stime = given(time_retained_ms, SNAPSHOT_TIME_RETAINED)
        # changelog retention defaults to the effective snapshot retention
        r = cls(
            retain_min=smin,
            retain_max=smax,
            time_retained_ms=stime,
            expire_limit=given(limit, SNAPSHOT_EXPIRE_LIMIT),
            changelog_min=changelog(CHANGELOG_NUM_RETAINED_MIN, smin),
            changelog_max=changelog(CHANGELOG_NUM_RETAINED_MAX, smax),
            changelog_time_ms=changelog(CHANGELOG_TIME_RETAINED, stime),
        )
        if r.retain_min < 1 or r.retain_max < r.retain_min:
            raise ConfigurationError(
                "snapshot retention needs 1 <= snapshot.num-retained.min "
                "<= snapshot.num-retained.max"
            )
        return r

    @property
    def changelog_decoupled(self) -> bool:
        return (
            self.changelog_max > self.retain_max
            or self.changelog_min > self.retain_min
            or self.changelog_time_ms > self.time_retained_ms
        )


@dataclass(frozen=True)
class ExpireResult:
    """What one expiry pass removed: the snapshot and changelog ids it expired (ascending),
    how many data, changelog and manifest files it deleted, and the ids of expired snapshots
    whose changelog it kept (``changelog.*`` retention longer than ``snapshot.*``)."""

    expired_snapshots: tuple[int, ...] = ()
    expired_changelogs: tuple[int, ...] = ()
    data_files_deleted: int = 0
    changelog_files_deleted: int = 0
    manifests_deleted: int = 0
    kept_changelogs: tuple[int, ...] = ()


@dataclass
class _Tally:
    """The counts of an expiry pass while it runs (frozen into an :class:`ExpireResult`)."""

    expired_snapshots: list[int] = field(default_factory=list)
    expired_changelogs: list[int] = field(default_factory=list)
    data_files_deleted: int = 0
    changelog_files_deleted: int = 0
    manifests_deleted: int = 0
    kept_changelogs: list[int] = field(default_factory=list)

    def freeze(self) -> ExpireResult:
        return ExpireResult(
            expired_snapshots=tuple(self.expired_snapshots),
            expired_changelogs=tuple(self.expired_changelogs),
            data_files_deleted=self.data_files_deleted,
            changelog_files_deleted=self.changelog_files_deleted,
            manifests_deleted=self.manifests_deleted,
            kept_changelogs=tuple(self.kept_changelogs),
        )


def _end_exclusive(
    ids: list[int],
    time_of: Callable[[int], int],
    keep_min: int,
    keep_max: int,
    older_than: int,
    limit: int,
) -> int:
    """Paimon's ExpireSnapshots: the first id that stays. ``time_of(id)`` is asked for the
    candidates in ascending order only, up to the first one too young to expire."""
    earliest, latest = ids[0], ids[-1]
    lowest = max(latest - keep_max + 1, earliest)
    end = min(latest - keep_min + 1, earliest + limit)
    for sid in range(lowest, end):
        if time_of(sid) >= older_than:  # early exit: snapshot.time-retained protects the rest
            return sid
    return end


class _SnapshotWindow:
    """The snapshots of one pass, read on demand and ``threads`` ids ahead at once (never
    beyond ``last``), so that a pass reads the snapshots it may expire and the first one it
    keeps — not the retained history."""

    def __init__(self, store: TableStore, last: int, threads: int) -> None:
        self.store = store
        self.last = last
        self.threads = threads
        self.read: dict[int, Snapshot] = {}

    def get(self, sid: int) -> Snapshot:
        if sid not in self.read:
            ahead = range(sid, min(sid + self.threads, self.last + 1))
            wanted = [i for i in ahead if i not in self.read] or [sid]
            for i, s in zip(
                wanted, run_ordered(self.store.snapshot, wanted, self.threads), strict=True
            ):
                self.read[i] = s
        return self.read[sid]

    def time_of(self, sid: int) -> int:
        return self.get(sid).time_millis

    def span(self, first: int, last: int) -> dict[int, Snapshot]:
        """Snapshots ``first`` … ``last`` (those not read yet read ``threads`` at once)."""
        missing = [i for i in range(first, last + 1) if i not in self.read]
        for i, s in zip(
            missing, run_ordered(self.store.snapshot, missing, self.threads), strict=True
        ):
            self.read[i] = s
        return {i: self.read[i] for i in range(first, last + 1)}


def _lists(s: Snapshot) -> list[str]:
    return [
        n for n in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list) if n
    ]


class DeleteProgress:
    """Counts the files a maintenance pass deletes for a ``progress(done, total)`` callback:
    ``total`` grows as each batch of files to delete is found, ``done`` as deletions finish
    (both reported in the calling thread)."""

    def __init__(self, report: Callable[[int, int], None] | None) -> None:
        self.report = report
        self.done = 0
        self.total = 0

    def found(self, files: int) -> None:
        self.total += files
        if self.report is not None:
            self.report(self.done, self.total)

    def deleted(self, _path: str) -> None:
        self.done += 1
        if self.report is not None:
            self.report(self.done, self.total)


def expire_snapshots(
    table: TableContext,
    retention: Retention,
    now_ms: int | None = None,
    *,
    parallelism: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExpireResult:
    """One expiry pass; see the module docstring. ``parallelism``: how many metadata files
    the pass reads at once while it finds what to delete, and how many files the final step of
    each expiry deletes at once (default :data:`~lakeops.parallel.IO_THREADS`: the work waits
    on storage); the order of the steps does not change, nor does the result.
    ``progress(done, total)``: files deleted so far and found to delete so far, called in the
    calling thread. A pass that finds snapshots or manifests it reads removed by another expiry
    running beside it (every Paimon writer expires after its commit) stops there and returns
    what it did; the other one finishes the job."""
    check_parallelism(parallelism)
    store = table.store
    result = _Tally()
    current: list[int] = []
    try:
        _expire_pass(table, retention, now_ms, parallelism, progress, result, current)
    except (SnapshotNotFoundError, MissingMetadataError) as exc:
        if not _overtaken(store, current, result):
            raise
        # another job's expiry (a Paimon writer's, after its commit) removed what this pass
        # was reading: it stops, leaving the rest to that expiry
        log.warning(
            "%s: another expiry removed snapshots this pass was reading (%s); it stopped there",
            store.root,
            exc,
        )
    return result.freeze()


def _overtaken(store: TableStore, current: list[int], result: _Tally) -> bool:
    """Whether another expiry ran beside this pass: the oldest of the snapshots ``current``
    at its start that it did not expire itself is gone (a missing file is corruption only
    while the snapshot that names it stays)."""
    mine = set(result.expired_snapshots)
    oldest = next((i for i in current if i not in mine), None)
    return oldest is not None and not store.snapshot_exists(oldest)


def _expire_pass(
    table: TableContext,
    retention: Retention,
    now_ms: int | None,
    parallelism: int | None,
    progress: Callable[[int, int], None] | None,
    result: _Tally,
    current: list[int],
) -> None:
    """The pass :func:`expire_snapshots` runs, counted in ``result``; ``current`` receives
    the snapshot ids retained at its start."""
    threads = IO_THREADS if parallelism is None else parallelism
    tracker = DeleteProgress(progress)
    store, schema, options = table.store, table.schema, table.options
    now = int(time.time() * 1000) if now_ms is None else now_ms
    expiration = _consumer_expiration(schema)
    if expiration is not None:
        # consumers not updated for consumer.expiration-time go first, as Paimon's
        # ConsumerManager.expire before snapshot expiry: a stopped reader holds nothing back
        expire_consumers(store, expiration, now)
    retained, leftovers = _bounds(store)
    current.extend(retained)
    locations = FileLocations.of(store.file_io, store.root, schema, options)
    first = end = keep_changelog_from = 0
    # no pass reads beyond the last snapshot it could keep first (Paimon's bounds)
    last = (
        min(current[-1] - retention.retain_min + 1, current[0] + retention.expire_limit)
        if current
        else 0
    )
    window = _SnapshotWindow(store, last, threads)
    if current:
        # the latest snapshot is read too (one file): a corrupt one stops maintenance, named,
        # as it stops every writer, rather than a pass that runs around it
        window.get(current[-1])
    if len(current) > 1:
        end = _end_exclusive(
            current,
            window.time_of,
            retention.retain_min,
            retention.retain_max,
            now - retention.time_retained_ms,
            retention.expire_limit,
        )
        # a streaming consumer's next snapshot, and every one after it, stays (as Paimon)
        floor = consumer_floor(store, expiration, now)
        if floor is not None:
            end = max(min(end, floor), current[0])
        first = current[0]
        if retention.changelog_decoupled and end > first:
            # only which of first … end - 1 keep their changelog matters: the candidates are
            # bounded by end (the same answer as an unbounded search, clipped to end)
            keep_changelog_from = _end_exclusive(
                current,
                window.time_of,
                retention.changelog_min,
                retention.changelog_max,
                now - retention.changelog_time_ms,
                end - first,
            )
        else:
            keep_changelog_from = end
    # the snapshots this pass expires, and the first one it keeps (whose live files and
    # manifests are what the expired ones share with every later snapshot: a manifest or data
    # file, once dropped from a snapshot, never comes back under its name)
    snapshots = window.span(first, end) if end > first else {}
    # every file this pass may delete is located (inside the table, or below a root the
    # table names) before the first delete; a crafted entry refuses the whole pass
    check_snapshots(store, locations, snapshots.values(), parallelism=threads)
    # snapshot files below EARLIEST are what an interrupted pass announced expired but did
    # not delete yet (their other files are orphans now, for remove_orphan_files)
    for sid in leftovers:
        store.file_io.delete(store.path(paths.snapshot_path(sid)))
        result.expired_snapshots.append(sid)
    if end > first:
        _expire_range(
            store,
            schema,
            options,
            snapshots,
            first,
            end,
            keep_changelog_from,
            result,
            parallelism,
            tracker,
        )
    _expire_changelogs(store, schema, options, retention, now, result, parallelism, tracker)


def _bounds(store: TableStore) -> tuple[list[int], list[int]]:
    """The retained snapshot ids (``EARLIEST`` … latest) and the ids below ``EARLIEST`` whose
    files an interrupted pass left (it deletes them oldest first, so they lie right below
    ``EARLIEST``), found from the hints and probes of single names — not by listing the
    history (a stale ``EARLIEST`` hint falls back to the listing, and then nothing lies
    below)."""
    earliest = store.earliest_snapshot_id()
    latest = store.latest_snapshot_id()
    if earliest is None or latest is None or latest < earliest:
        return [], []
    leftovers = []
    sid = earliest - 1
    while sid > 0 and store.snapshot_exists(sid):
        leftovers.append(sid)
        sid -= 1
    return list(range(earliest, latest + 1)), sorted(leftovers)


def _retained_manifests(
    store: TableStore, oldest: Snapshot, alive: KeptAlive, first: int, threads: int
) -> set[str]:
    """The manifest lists of the oldest retained snapshot, those tags and branches keep
    alive, and those of the kept changelogs from ``first`` on (an interrupted pass may have
    written them; an older changelog's lists belong to a snapshot older than ``first`` and are
    never shared with a later one), and the manifests they name (the lists read ``threads`` at
    once, folded as they come: bounded in memory)."""
    kept = run_ordered(store.changelog, [i for i in _changelog_ids(store) if i >= first], threads)
    lists = sorted(
        {*_lists(oldest)}
        | alive.manifest_lists(store)
        | {k.changelog_manifest_list for k in kept if k.changelog_manifest_list}
    )
    names: set[str] = set(lists)
    for metas in imap_ordered(store.manifest_list, lists, threads):
        names.update(m.file_name for m in metas)
    return names


def _expire_range(
    store: TableStore,
    schema: TableSchema,
    options: TableOptions,
    snapshots: dict[int, Snapshot],
    first: int,
    end: int,
    keep_changelog_from: int,
    result: _Tally,
    parallelism: int | None = None,
    tracker: DeleteProgress | None = None,
) -> None:
    """Expire snapshots ``first`` … ``end - 1``, crash-safe: every file to delete is found
    first; then the kept changelogs are written, ``EARLIEST`` moves and the snapshot files go
    (oldest first); only then their files. A kill at any point leaves intact snapshots and at
    most unreferenced files (for ``remove_orphan_files``), never a snapshot whose files are
    gone. The finding (steps 1 to 3b) reads its metadata ``parallelism`` files at once and
    folds it in the serial order, so it finds the same files; the last step deletes on a pool
    (``parallelism`` files at once)."""
    threads = IO_THREADS if parallelism is None else parallelism
    fio = store.file_io
    locations = FileLocations.of(fio, store.root, schema, options)
    # what stays: the retained snapshots, and every snapshot a tag or a branch keeps alive
    tagged = kept_alive(store)
    alive = _readable(store, tagged)
    protected = alive.snapshots
    keep = [snapshots[end], *protected]
    live: set[str] = set()
    for kept in (snapshots[end], *protected):  # data files and their extra (index) files
        for e in store.live_entries(kept, parallelism=threads):
            live.add(e.file.file_name)
            live.update(e.file.extra_files)
    # and what Iceberg readers are shown while the Iceberg head is behind the table
    live |= iceberg_head_files(store)
    expired = range(first, end)
    kept_changelogs = [sid for sid in expired if sid >= keep_changelog_from]
    # storage paths, deleted after the snapshot files
    doomed = _doomed_data_files(store, locations, snapshots, first, end, live, result, threads)
    doomed += _doomed_changelog_files(
        store,
        locations,
        [snapshots[sid] for sid in expired if sid < keep_changelog_from],
        result,
        threads,
    )
    doomed += _doomed_manifests(
        store, snapshots, snapshots[end], alive, first, end, kept_changelogs, result, threads
    )
    doomed += _doomed_index_files(store, locations, snapshots, keep, expired, result, threads)
    # 4. kept changelogs, then EARLIEST, then the snapshot files oldest first
    for sid in kept_changelogs:
        fio.overwrite_atomic(
            store.path(f"{paths.CHANGELOG_DIR}/changelog-{sid}"),
            snapshots[sid].to_json().encode(),
        )
        result.kept_changelogs.append(sid)
    fio.overwrite_atomic(store.path(paths.EARLIEST_HINT), str(end).encode())
    for sid in expired:
        fio.delete(store.path(paths.snapshot_path(sid)))
        result.expired_snapshots.append(sid)
    # 4b. Iceberg metadata of the expired snapshots, before their data files go
    expire_iceberg_metadata(store, end)
    # 5. what only they referenced (nothing references them any more: any order will do) —
    #    unless a tag or branch appeared meanwhile: it may name an expired snapshot (a tag is
    #    created, then its creator checks its snapshot still exists), so its files stay for
    #    remove_orphan_files, which respects it
    if {_key(s) for s in protected_snapshots(store)} - {_key(s) for s in tagged.snapshots}:
        log.warning(
            "%s: a tag or branch was created while snapshots %s..%s expired; their files are "
            "left for remove_orphan_files",
            store.root,
            first,
            end - 1,
        )
        result.data_files_deleted = result.changelog_files_deleted = 0
        result.manifests_deleted = 0
        return
    tracker = tracker or DeleteProgress(None)
    tracker.found(len(doomed))
    delete_files(fio.delete, doomed, parallelism, tracker.deleted)
    # 6. the Iceberg Puffin files that copied deletion-vector index files now gone
    sweep_iceberg_puffins(store)


def _doomed_data_files(
    store: TableStore,
    locations: FileLocations,
    snapshots: dict[int, Snapshot],
    first: int,
    end: int,
    live: set[str],
    result: _Tally,
    threads: int,
) -> list[str]:
    """Step 1: the data files the expired commits deleted, with their extra files (snapshot
    ``end`` is the first that stays, and its own deletions removed files still present in the
    expired snapshot ``end - 1``), unless a kept snapshot still has them."""
    doomed: list[str] = []
    deltas = [snapshots[sid] for sid in range(first + 1, end + 1)]
    for entries in imap_ordered(store.delta_entries, deltas, threads):
        for e in entries:
            if e.kind != FileKind.DELETE:
                continue
            # a file whose index was rewritten stays live under its name: only its old
            # extra files go
            names = (e.file.file_name, *e.file.extra_files)
            paths = _entry_path(locations, e)
            doomed += [p for p, n in zip(paths, names, strict=True) if n not in live]
            if e.file.file_name not in live:
                result.data_files_deleted += 1
    return doomed


def _doomed_changelog_files(
    store: TableStore,
    locations: FileLocations,
    expiring: list[Snapshot],
    result: _Tally,
    threads: int,
) -> list[str]:
    """Step 2: the changelog files of the expired snapshots whose changelog is not kept (a
    kept one stays as ``changelog/changelog-<id>``)."""
    doomed: list[str] = []
    dropped = [s for s in expiring if s.changelog_manifest_list]
    for entries in imap_ordered(store.changelog_entries, dropped, threads):
        for e in entries:
            doomed += _entry_path(locations, e)
            result.changelog_files_deleted += 1
    return doomed


def _doomed_manifests(
    store: TableStore,
    snapshots: dict[int, Snapshot],
    oldest: Snapshot,
    alive: KeptAlive,
    first: int,
    end: int,
    kept_changelogs: list[int],
    result: _Tally,
    threads: int,
) -> list[str]:
    """Step 3: the manifests and manifest lists of the expired snapshots that no retained
    snapshot, tag, branch or kept changelog references, each once."""
    doomed: list[str] = []
    retained = _retained_manifests(store, oldest, alive, first, threads)
    for sid in kept_changelogs:
        lst = snapshots[sid].changelog_manifest_list
        if lst:
            retained.add(lst)
            retained.update(m.file_name for m in store.manifest_list(lst))
    expired_lists = [lst for sid in range(first, end) for lst in _lists(snapshots[sid])]
    for lst, metas in zip(
        expired_lists, imap_ordered(store.manifest_list, expired_lists, threads), strict=True
    ):
        for name in [m.file_name for m in metas] + [lst]:
            if name not in retained:
                doomed.append(store.path(paths.manifest_path(name)))
                retained.add(name)  # deleted once
                result.manifests_deleted += 1
    return doomed


def _doomed_index_files(
    store: TableStore,
    locations: FileLocations,
    snapshots: dict[int, Snapshot],
    keep: list[Snapshot],
    expired: range,
    result: _Tally,
    threads: int,
) -> list[str]:
    """Step 3b: the index manifests and hash index files (dynamic buckets) of the expired
    snapshots that no retained snapshot uses, each once."""
    doomed: list[str] = []
    index_manifests = sorted(
        {s.index_manifest for s in [*keep, *snapshots.values()] if s.index_manifest}
    )
    for _ in imap_ordered(store.index_manifest_entries, index_manifests, threads):
        pass  # read ahead into the store's cache of index manifests
    kept_index: set[str] = set()
    for s in keep:
        if s.index_manifest:
            kept_index.add(s.index_manifest)
            kept_index.update(e.file.file_name for e in store.index_entries(s))
    for sid in expired:
        snap = snapshots[sid]
        if not snap.index_manifest or snap.index_manifest in kept_index:
            continue
        for index_entry in store.index_entries(snap):
            name = index_entry.file.file_name
            if name not in kept_index:
                doomed += index_paths(locations, [index_entry])
                kept_index.add(name)  # deleted once
        doomed.append(store.path(paths.manifest_path(snap.index_manifest)))
        kept_index.add(snap.index_manifest)
        result.manifests_deleted += 1
    return doomed


def _key(s: Snapshot) -> tuple[int, str, str]:
    return (s.id, s.base_manifest_list, s.delta_manifest_list)


def _readable(store: TableStore, kept: KeptAlive) -> KeptAlive:
    """The snapshots whose data manifests can still be read (a tag whose files an older expiry
    already deleted protects nothing more, and must not stop expiry for good; a tag whose
    changelog Paimon's expiry deleted still protects its data)."""

    def readable(s: Snapshot) -> bool:
        try:
            for lst in (s.base_manifest_list, s.delta_manifest_list):
                store.manifest_list(lst)
        except FileNotFoundError:
            return False
        return True

    return kept.where(readable)


def _kept_changelog_files(
    store: TableStore, locations: FileLocations, kept: Snapshot, result: _Tally
) -> list[str]:
    """The changelog files, changelog manifests and changelog manifest list of a kept
    changelog (none when its list is gone: nothing else names those files any more)."""
    lst = kept.changelog_manifest_list
    if not lst:
        return []
    try:
        metas = store.manifest_list(lst)
        entries = store.changelog_entries(kept)
    except FileNotFoundError:
        return []
    doomed = [p for e in entries for p in _entry_path(locations, e)]
    result.changelog_files_deleted += len(doomed)
    doomed += [store.path(paths.manifest_path(m.file_name)) for m in metas]
    result.manifests_deleted += len(metas)
    return [*doomed, store.path(paths.manifest_path(lst))]


def _consumer_expiration(schema: TableSchema) -> int | None:
    return CONSUMER_EXPIRATION_TIME.find(schema.options, blank_is_unset=True)


def _entry_path(locations: FileLocations, e: ManifestEntry) -> list[str]:
    """The storage path of ``e``'s file and of its extra files (an entry outside the table was
    refused before the pass deleted anything: :func:`~lakeops.commit.confine.check_snapshots`)."""
    return entry_paths_with_extras(locations, [e])


def _changelog_ids(store: TableStore) -> list[int]:
    names = store.file_io.list_names(store.path(paths.CHANGELOG_DIR))
    return sorted(int(n[10:]) for n in names if n.startswith("changelog-") and n[10:].isdigit())


def _expire_changelogs(
    store: TableStore,
    schema: TableSchema,
    options: TableOptions,
    retention: Retention,
    now: int,
    result: _Tally,
    parallelism: int | None = None,
    tracker: DeleteProgress | None = None,
) -> None:
    """Long-lived changelogs beyond the changelog retention go, with their files (deleted
    ``parallelism`` at once, after the changelog metadata)."""
    ids = _changelog_ids(store)
    if not ids:
        return
    snapshot_count = len(_bounds(store)[0])
    fio = store.file_io
    locations = FileLocations.of(fio, store.root, schema, options)
    total = len(ids) + snapshot_count
    for sid in ids:
        kept = store.changelog(sid)
        too_many = total > retention.changelog_max
        too_old = (
            kept.time_millis < now - retention.changelog_time_ms and total > retention.changelog_min
        )
        if not (too_many or too_old):
            break
        # located first (a changelog naming a file outside the table is refused before any of
        # its files goes), then the changelog metadata goes, then its files (crash-safe). A
        # kept changelog holds its changelog only: the data manifest lists of its snapshot
        # went with the snapshot (as Paimon's expiry deletes them), so they are not read
        doomed = _kept_changelog_files(store, locations, kept, result)
        fio.delete(store.path(f"{paths.CHANGELOG_DIR}/changelog-{sid}"))
        tracker = tracker or DeleteProgress(None)
        tracker.found(len(doomed))
        delete_files(fio.delete, doomed, parallelism, tracker.deleted)
        result.expired_changelogs.append(sid)
        total -= 1
