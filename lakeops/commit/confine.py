"""Maintenance stays inside the table: every file it may touch is located first, through the one
resolver (:class:`~lakeops.store.locations.FileLocations`), before anything is deleted.

File names in metadata are plain names (checked where manifests and snapshots are decoded, see
:func:`lakeops.format.paths.check_file_name`) and external paths are followed only below the
roots the table's own ``data-file.external-paths`` names. Expiry, orphan cleanup and rollback
call :func:`check_snapshots` (or resolve each entry as they go, before their first delete), so
a table whose metadata points elsewhere is refused with an error naming the entry and nothing
is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable

from lakeops.format.index_manifest import IndexManifestEntry
from lakeops.format.manifest import ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.parallel import imap_ordered
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations

__all__ = ["check_snapshots", "entry_paths", "entry_paths_with_extras", "index_paths"]


def entry_paths(locations: FileLocations, entries: Iterable[ManifestEntry]) -> list[str]:
    """The storage path of each entry's data or changelog file (raises for one outside the
    table: :meth:`FileLocations.resolve_external`)."""
    return [
        locations.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
        for e in entries
    ]


def entry_paths_with_extras(
    locations: FileLocations, entries: Iterable[ManifestEntry]
) -> list[str]:
    """:func:`entry_paths`, each followed by the paths of its file's extra files (a data
    file's ``<file>.index``: they live next to it and go with it)."""
    out: list[str] = []
    for e in entries:
        path = locations.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
        out.append(path)
        out += [f"{path.rsplit('/', 1)[0]}/{extra}" for extra in e.file.extra_files]
    return out


def index_paths(locations: FileLocations, entries: Iterable[IndexManifestEntry]) -> list[str]:
    """The storage path of each index manifest entry's file (raises as :func:`entry_paths`)."""
    return [locations.index_entry_path(e.partition, e.bucket, e.file) for e in entries]


def check_snapshots(
    store: TableStore,
    locations: FileLocations,
    snapshots: Iterable[Snapshot],
    *,
    live: bool = False,
    changelog: bool = True,
    parallelism: int | None = 1,
) -> None:
    """Locate every file the commits of ``snapshots`` added or deleted (delta and, unless not
    ``changelog``, changelog entries) and their index files — with ``live`` also every live
    file — so that a snapshot naming a file outside the table is refused before maintenance
    deletes anything. ``parallelism`` snapshots are read at once; the first refusal in their
    order is raised."""

    def check(snapshot: Snapshot) -> None:
        entry_paths(locations, store.delta_entries(snapshot))
        if changelog:
            entry_paths(locations, store.changelog_entries(snapshot))
        index_paths(locations, store.index_entries(snapshot))
        if live:
            entry_paths(locations, store.live_entries(snapshot))

    for _ in imap_ordered(check, list(snapshots), parallelism):
        pass
