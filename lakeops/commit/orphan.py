"""Orphan-file cleanup.

``remove_orphan_files(older_than)`` deletes files under the table that no snapshot, kept
changelog, tag or branch references — left by writers that crashed between writing files and
publishing a snapshot — but only files older than the threshold, so files of commits still in
progress are never touched. Candidates are only manifests, index files, files in bucket
directories and temporary metadata files: schema and snapshot metadata, ``tag/``, ``branch/``,
``consumer/`` and anything lakeops does not know are kept.

A threshold below :data:`SAFE_OLDER_THAN_MS` (one hour) is refused unless the caller forces it:
a writer writes its data files and manifests first and publishes the snapshot that references
them last, so until then its files look exactly like orphans. A short threshold deletes them and
the writer then publishes a snapshot whose files are gone. A dry run deletes nothing and takes
any threshold that is not negative.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from lakeops.commit.keep_alive import KEPT_DIRS, protected_snapshots
from lakeops.errors import ConfigurationError
from lakeops.parallel import check_parallelism, delete_files
from lakeops.spec import paths
from lakeops.spec.locations import FileLocations
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = [
    "SAFE_OLDER_THAN_MS",
    "OrphanResult",
    "check_threshold",
    "referenced_files",
    "remove_orphan_files",
]

SAFE_OLDER_THAN_MS = 3_600_000
"""The shortest orphan threshold accepted without ``force``: one hour."""


@dataclass(frozen=True)
class OrphanResult:
    """What an orphan-file pass deleted (or would delete, in a dry run): the files, relative
    to the table directory, in listing order, and their total size in bytes."""

    deleted: tuple[str, ...] = ()
    bytes: int = 0


def _snapshot_files(store: TableStore, snapshot: Snapshot, locations: FileLocations) -> set[str]:
    """Base names of every manifest list, manifest, data and changelog file it references.
    Each data, changelog and index file is located through ``locations`` on the way: an entry
    outside the table (issue 24) refuses the pass before anything is deleted."""
    names: set[str] = set()
    for lst in (
        snapshot.base_manifest_list,
        snapshot.delta_manifest_list,
        snapshot.changelog_manifest_list,
    ):
        if not lst:
            continue
        names.add(lst)
        for meta in store.manifest_list(lst):
            names.add(meta.file_name)
            entries = store.manifest(meta.file_name)
            for e in entries:
                locations.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
            names.update(e.file.file_name for e in entries)
    if snapshot.index_manifest:  # dynamic-bucket hash indexes
        names.add(snapshot.index_manifest)
        for i in store.index_entries(snapshot):
            locations.index_entry_path(i.partition, i.bucket, i.file)
            names.add(i.file.file_name)
    return names


def referenced_files(store: TableStore) -> set[str]:
    """Every file name some snapshot or kept changelog references (each file located by the
    latest schema's options, as reads locate them)."""
    names: set[str] = set()
    locations = store.locations()
    for sid in store.snapshot_ids():
        names |= _snapshot_files(store, store.snapshot(sid), locations)
    for name in store.file_io.list_names(store.path(paths.CHANGELOG_DIR)):
        if name.startswith("changelog-") and name[10:].isdigit():
            names |= _snapshot_files(store, store.changelog(int(name[10:])), locations)
    for kept in protected_snapshots(store):  # tags and branches keep their files alive
        names |= _snapshot_files(store, kept, locations)
    return names


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
            "deleted, and the writer would then publish a snapshot whose files are gone. Use "
            "at least one hour (the default is one day), or pass force=True (CLI: --force) "
            "only when no writer can be running on this table; a dry run lists the candidates "
            "without deleting anything"
        )


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
    thresholds are checked by :func:`check_threshold` before anything is listed. The
    candidates are all found first, then deleted ``parallelism`` at once (default
    :data:`~lakeops.parallel.IO_THREADS`); the first failed deletion is raised.
    ``progress(done, total)``: files deleted of those to delete, in the calling thread."""
    check_threshold(older_than_ms, dry_run=dry_run, force=force)
    check_parallelism(parallelism)
    fio = store.file_io
    cutoff = (time.time() * 1000 if now_ms is None else now_ms) - older_than_ms
    referenced = referenced_files(store)
    protected_dirs = {paths.SCHEMA_DIR, paths.SNAPSHOT_DIR, paths.CHANGELOG_DIR}
    root = store.root.rstrip("/")
    deleted: list[str] = []
    doomed: list[str] = []  # storage paths of ``deleted``
    size = 0
    for path in fio.fs.find(root):
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
        # directories and temporary metadata; anything else in the table directory is kept
        in_bucket = len(parts) > 1 and parts[-2].startswith("bucket-")
        if not (top in ("manifest", "index") or in_bucket or top in protected_dirs):
            continue
        if name in referenced or name.startswith(".lakeops-database"):
            continue
        if fio.modified_ms(path) > cutoff:
            continue  # younger than the threshold: may belong to a commit still in progress
        size += fio.size(path)
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
