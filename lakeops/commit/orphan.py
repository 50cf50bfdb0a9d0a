"""Orphan-file cleanup.

``remove_orphan_files(older_than)`` deletes files under the table that no snapshot (and no kept
changelog) references — left by writers that crashed between writing files and publishing a
snapshot — but only files older than the threshold, so files of commits still in progress are
never touched. Schema and snapshot metadata are never candidates (their temporary files are).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from lakeops.spec import paths
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = ["OrphanResult", "referenced_files", "remove_orphan_files"]


@dataclass
class OrphanResult:
    """What an orphan-file pass deleted (or would delete, in a dry run)."""

    deleted: list[str] = field(default_factory=list)
    bytes: int = 0


def _snapshot_files(store: TableStore, snapshot: Snapshot) -> set[str]:
    """Base names of every manifest list, manifest, data and changelog file it references."""
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
            names.update(e.file.file_name for e in store.manifest(meta.file_name))
    if snapshot.index_manifest:  # dynamic-bucket hash indexes
        names.add(snapshot.index_manifest)
        names.update(e.file.file_name for e in store.index_entries(snapshot))
    return names


def referenced_files(store: TableStore) -> set[str]:
    """Every file name some snapshot or kept changelog references."""
    names: set[str] = set()
    for sid in store.snapshot_ids():
        names |= _snapshot_files(store, store.snapshot(sid))
    for name in store.file_io.list_names(store.path(paths.CHANGELOG_DIR)):
        if name.startswith("changelog-") and name[10:].isdigit():
            names |= _snapshot_files(store, store.changelog(int(name[10:])))
    return names


def _modified_ms(fs: object, path: str) -> float:
    modified = fs.modified(path)  # type: ignore[attr-defined]
    if modified.tzinfo is None:
        modified = modified.replace(tzinfo=dt.UTC)
    return modified.timestamp() * 1000


def remove_orphan_files(
    store: TableStore, older_than_ms: int, dry_run: bool = False, now_ms: int | None = None
) -> OrphanResult:
    """Delete unreferenced files older than ``older_than_ms`` (see the module docstring)."""
    fio = store.file_io
    cutoff = (time.time() * 1000 if now_ms is None else now_ms) - older_than_ms
    referenced = referenced_files(store)
    protected_dirs = {paths.SCHEMA_DIR, paths.SNAPSHOT_DIR, paths.CHANGELOG_DIR}
    root = store.root.rstrip("/")
    result = OrphanResult()
    for path in fio.fs.find(root):
        relative = path[len(root) :].lstrip("/") if path.startswith(root) else path
        name = relative.rsplit("/", 1)[-1]
        top = relative.split("/", 1)[0]
        temporary = name.endswith(".tmp")
        if top in protected_dirs and not temporary:
            continue
        if name in referenced or name.startswith(".lakeops-database"):
            continue
        if _modified_ms(fio.fs, path) > cutoff:
            continue  # younger than the threshold: may belong to a commit still in progress
        result.bytes += fio.size(path)
        result.deleted.append(relative)
        if not dry_run:
            fio.delete(path)
    return result
