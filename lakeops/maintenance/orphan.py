"""Orphan-file cleanup.

``remove_orphan_files(older_than)`` deletes files under the table that no snapshot, kept
changelog, tag or branch references — left by writers that crashed between writing files and
publishing a snapshot — but only files older than the threshold, so files of commits still in
progress are never touched. Candidates are only manifests, index files, files in bucket
directories, files the native Spark write path staged (left by a killed write; the same
threshold keeps those of a write in progress) and temporary metadata files: schema and snapshot
metadata, ``tag/``, ``branch/``, ``consumer/`` and anything lakeops does not know are kept.

A threshold below :data:`SAFE_OLDER_THAN_MS` (one hour) is refused unless the caller forces it:
a writer writes its data files and manifests first and publishes the snapshot that references
them last, so until then its files look exactly like orphans. A short threshold deletes them and
the writer's commit then fails (:class:`~lakeops.errors.MissingCommitFileError`: the committer
refuses to publish a snapshot naming a missing file), so the writer must write its data again.
A dry run deletes nothing and takes any threshold that is not negative.

Ages are measured on the store's clock, not this machine's alone: a file's age is the store's
"now" (the modification time it reports for a probe file written at the start of the pass
and deleted at once; one a killed pass left is deleted by the next, whatever its age) minus the
modification time it reports for the file, so a cleanup host whose clock runs ahead
cannot make the files of a commit in progress look old. A local clock more than
:data:`CLOCK_TOLERANCE_MS` ahead of the store's is refused with
:class:`~lakeops.errors.ClockSkewError` before anything is listed; within the tolerance the
earlier of the two clocks is taken. A file deleted anyway (a forced threshold) is caught by the
committer, which refuses to publish a snapshot naming a missing file
(:mod:`lakeops.commit.presence`).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakeops.errors import ClockSkewError, ConfigurationError
from lakeops.format import paths
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import CLOCK_PROBE_PREFIX, FileIO
from lakeops.maintenance.iceberg import iceberg_head_files
from lakeops.parallel import (
    IO_THREADS,
    check_parallelism,
    delete_files,
    imap_ordered,
    run_ordered,
)
from lakeops.store import TableStore
from lakeops.store.keep_alive import KEPT_DIRS, kept_alive

__all__ = [
    "CLOCK_TOLERANCE_MS",
    "SAFE_OLDER_THAN_MS",
    "OrphanResult",
    "check_threshold",
    "list_files",
    "referenced_files",
    "reference_now_ms",
    "remove_orphan_files",
]

log = logging.getLogger(__name__)

SAFE_OLDER_THAN_MS = 3_600_000
"""The shortest orphan threshold accepted without ``force``: one hour."""

CLOCK_TOLERANCE_MS = 300_000
"""How far this machine's clock may run ahead of the store's before orphan cleanup refuses:
five minutes (clocks kept by NTP agree to well under a second)."""


@dataclass(frozen=True)
class OrphanResult:
    """What an orphan-file pass deleted (or would delete, in a dry run): the files, relative
    to the table directory, in listing order, and their total size in bytes."""

    deleted: tuple[str, ...] = ()
    bytes: int = 0


def _io_threads(parallelism: int | None) -> int:
    return IO_THREADS if parallelism is None else parallelism


def referenced_files(store: TableStore, parallelism: int | None = None) -> set[str]:
    """Every file name some snapshot, kept changelog, tag or branch references: manifest
    lists, manifests, data, changelog and index files, and index manifests.

    Each data, changelog and index file is located through the latest schema's options on the
    way (as reads locate them): an entry outside the table refuses the pass before
    anything is deleted. The snapshots, then their manifest lists, then the distinct manifests
    are read ``parallelism`` at once (default :data:`~lakeops.parallel.IO_THREADS`: the work
    waits on storage); the result is a set, the same at every parallelism."""
    threads = _io_threads(parallelism)
    locations = store.locations()
    snapshots = run_ordered(store.snapshot, store.snapshot_ids(), threads)
    changelogs = [
        int(name[10:])
        for name in store.file_io.list_names(store.path(paths.CHANGELOG_DIR))
        if name.startswith("changelog-") and name[10:].isdigit()
    ]
    kept = run_ordered(store.changelog, changelogs, threads)
    alive = kept_alive(store)  # tags keep their data alive, branches all their files

    # a kept changelog keeps its changelog; its snapshot's data manifest lists and index
    # manifest went with the snapshot (Paimon keeps the lists when there is no changelog
    # producer): each is kept where it still exists (one listing of the manifest directory)
    present = set(store.file_io.list_names(store.path(paths.MANIFEST_DIR))) if kept else set()
    kept_metadata = {
        name
        for k in kept
        for name in (
            k.base_manifest_list,
            k.delta_manifest_list,
            k.changelog_manifest_list,
            k.index_manifest,
        )
        if name and name in present
    }
    names: set[str] = set()
    lists = sorted(
        {
            lst
            for s in snapshots
            for lst in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list)
            if lst
        }
        | alive.manifest_lists(store)
        | {k_list for k in kept for k_list in _lists_of(k) if k_list in kept_metadata}
    )
    snapshots += alive.snapshots
    names.update(lists)
    manifests = sorted(
        {m.file_name for metas in imap_ordered(store.manifest_list, lists, threads) for m in metas}
    )
    names.update(manifests)

    def data_files(manifest: str) -> set[str]:
        entries = store.manifest(manifest)
        for e in entries:
            locations.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
        return {e.file.file_name for e in entries} | {
            extra for e in entries for extra in e.file.extra_files
        }

    for files in imap_ordered(data_files, manifests, threads):  # folded as they come
        names |= files
    index_manifests = sorted(
        {s.index_manifest for s in snapshots if s.index_manifest}
        | {k.index_manifest for k in kept if k.index_manifest in kept_metadata}
    )
    names.update(index_manifests)

    def index_files(index_manifest: str) -> set[str]:
        entries = store.index_manifest_entries(index_manifest)
        for i in entries:
            locations.index_entry_path(i.partition, i.bucket, i.file)
        return {i.file.file_name for i in entries}

    for files in imap_ordered(index_files, index_manifests, threads):
        names |= files
    # what the Iceberg head shows its readers while it is behind the table (see
    # lakeops.maintenance.iceberg.iceberg_head_files)
    return names | iceberg_head_files(store)


def _lists_of(s: Snapshot) -> list[str]:
    return [
        n for n in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list) if n
    ]


def list_files(fio: FileIO, root: str, parallelism: int | None = None) -> list[str]:
    """Every file below ``root`` (sorted, as ``fsspec``'s ``find``), except below the
    top-level :data:`~lakeops.store.keep_alive.KEPT_DIRS` (tags, branches, consumers: never
    candidates). The directories of each level of the tree (partitions, then buckets) are
    listed ``parallelism`` at once (default :data:`~lakeops.parallel.IO_THREADS`)."""
    threads = _io_threads(parallelism)
    base = root.rstrip("/")

    def entries(directory: str) -> list[dict[str, Any]]:
        try:
            listed: list[dict[str, Any]] = fio.fs.ls(directory, detail=True)
        except FileNotFoundError:  # removed meanwhile (an empty partition dropped)
            return []
        return listed

    files: list[str] = []
    level = [base]
    while level:
        below: list[str] = []
        for directory, listed in zip(level, run_ordered(entries, level, threads), strict=True):
            for info in listed:
                path = str(info["name"]).rstrip("/")
                if path == directory.rstrip("/"):
                    continue  # some stores list the directory itself
                if info.get("type") != "directory":
                    files.append(path)
                elif directory != base or path.rsplit("/", 1)[-1] not in KEPT_DIRS:
                    below.append(path)
        level = below
    return sorted(files)


def check_threshold(older_than_ms: int, *, dry_run: bool = False, force: bool = False) -> None:
    """Refuse an orphan threshold that could delete the files of a commit still in progress:
    below one hour (or negative) unless ``force``; a dry run only refuses negative values."""
    if force:
        return
    if older_than_ms < 0:
        raise ConfigurationError(
            f"orphan threshold older_than={older_than_ms / 1000:g} s is negative: it would treat "
            "files written from now on as orphans. Use at least one hour (the default is one "
            "day), or force=True / --force if no writer can be running"
        )
    if older_than_ms < SAFE_OLDER_THAN_MS and not dry_run:
        raise ConfigurationError(
            f"orphan threshold older_than={older_than_ms / 1000:g} s is below one hour: a writer "
            "writes its data files and manifests before it publishes the snapshot that "
            "references them, so files of a commit in progress look like orphans and would be "
            "deleted, and the writer's commit would then fail for its missing files. Use "
            "at least one hour (the default is one day), or pass force=True (CLI: --force) "
            "only when no writer can be running on this table; a dry run lists the candidates "
            "without deleting anything"
        )


def reference_now_ms(
    store: TableStore,
    now_ms: float | None = None,
    *,
    dry_run: bool = False,
    tolerance_ms: int = CLOCK_TOLERANCE_MS,
) -> float:
    """The "now" orphan ages are measured from: the earlier of the local clock (``now_ms``,
    default :func:`time.time`) and the store's (:meth:`~lakeops.io.file_io.FileIO.store_now_ms`,
    a probe written into the table's ``manifest/`` directory). A local clock more than
    ``tolerance_ms`` ahead of the store's raises :class:`~lakeops.errors.ClockSkewError`. A
    dry run that cannot write the probe (read-only credentials) uses the local clock."""
    local = time.time() * 1000 if now_ms is None else float(now_ms)
    try:
        remote = store.file_io.store_now_ms(store.path(paths.MANIFEST_DIR))
    except OSError:
        if not dry_run:
            raise
        log.warning("%s: no clock probe could be written; ages use the local clock", store.root)
        return local
    ahead = local - remote
    if ahead > tolerance_ms:
        raise ClockSkewError(
            f"{store.root}: this machine's clock ({_utc(local)}) is {ahead / 1000:,.0f} s ahead "
            f"of the store's ({_utc(remote)}), more than the {tolerance_ms / 1000:g} s orphan "
            "cleanup tolerates: every file would look older than it is, and files of a commit "
            "still in progress could be deleted as orphans. Nothing was deleted; correct this "
            "machine's clock (NTP) or run the cleanup where the clock is right"
        )
    return min(local, remote)


def _utc(ms: float) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def remove_orphan_files(
    store: TableStore,
    older_than_ms: int,
    dry_run: bool = False,
    now_ms: int | None = None,
    *,
    force: bool = False,
    parallelism: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> OrphanResult:
    """Delete unreferenced files older than ``older_than_ms`` (see the module docstring);
    thresholds are checked by :func:`check_threshold` and the clock by
    :func:`reference_now_ms` before anything is listed. The
    candidates are all found first — the referenced files, the directory listing and the age
    and size of each unreferenced file, each ``parallelism`` requests at once (default
    :data:`~lakeops.parallel.IO_THREADS`) — then deleted ``parallelism`` at once; the first
    failed deletion is raised. The result does not depend on ``parallelism``.
    ``progress(done, total)``: files deleted of those to delete, in the calling thread."""
    check_threshold(older_than_ms, dry_run=dry_run, force=force)
    check_parallelism(parallelism)
    fio = store.file_io
    cutoff = reference_now_ms(store, now_ms, dry_run=dry_run) - older_than_ms
    referenced = referenced_files(store, parallelism)
    protected_dirs = {paths.SCHEMA_DIR, paths.SNAPSHOT_DIR, paths.CHANGELOG_DIR}
    root = store.root.rstrip("/")
    candidates: list[tuple[str, str]] = []  # (storage path, path relative to the table)
    for path in list_files(fio, root, parallelism):
        relative = path[len(root) :].lstrip("/") if path.startswith(root) else path
        name = relative.rsplit("/", 1)[-1]
        parts = relative.split("/")
        top = parts[0]
        temporary = name.endswith(".tmp")
        if top in KEPT_DIRS:
            continue  # tags, branches and consumers: never touched
        if top in protected_dirs and not temporary:
            continue
        # only what lakeops and Paimon write: manifests, index files, files in bucket
        # directories, Spark's staged files and temporary metadata; anything else is kept
        in_bucket = len(parts) > 1 and parts[-2].startswith("bucket-")
        staged = top == paths.SPARK_STAGING_DIR
        if not (top in ("manifest", "index") or in_bucket or staged or top in protected_dirs):
            continue
        if name in referenced or name.startswith(".lakeops-database"):
            continue
        candidates.append((path, relative))

    def age_and_size(candidate: tuple[str, str]) -> tuple[float, int]:
        return fio.modified_ms(candidate[0]), fio.size(candidate[0])

    deleted: list[str] = []
    doomed: list[str] = []  # storage paths of ``deleted``
    size = 0
    stats = run_ordered(age_and_size, candidates, _io_threads(parallelism))
    for (path, relative), (modified, file_size) in zip(candidates, stats, strict=True):
        # a clock probe a killed pass left is nobody's commit: it goes whatever its age
        probe = relative.startswith(f"{paths.MANIFEST_DIR}/{CLOCK_PROBE_PREFIX}")
        if modified > cutoff and not probe:
            continue  # younger than the threshold: may belong to a commit still in progress
        size += file_size
        deleted.append(relative)
        doomed.append(path)
    if not dry_run:
        done = [0]

        def on_deleted(_path: str) -> None:
            done[0] += 1
            if progress is not None:
                progress(done[0], len(doomed))

        if progress is not None:
            progress(0, len(doomed))
        delete_files(fio.delete, doomed, parallelism, on_deleted)
    return OrphanResult(deleted=tuple(deleted), bytes=size)
