"""A snapshot never names a file that does not exist: the files a commit adds are checked first.

Between a writer's ``prepare_commit`` and its commit, its data files are unreferenced: a forced
``remove_orphan_files``, a cleanup host whose clock runs ahead, or an operator deleting by hand
can remove them. Published anyway, the snapshot would name a missing file and every read of the
latest snapshot would fail. So before a commit attempt is published, every data, changelog and
index file the plan ADDS must exist: one metadata request per file (a ``stat`` on local disk, a
``HEAD`` on object stores), :data:`~lakeops.parallel.IO_THREADS` at once. Otherwise
:class:`MissingCommitFileError` names the missing files and nothing is published.

An added file is requested once per commit: a retry requests only files its plan added since
(a re-sequencing rewrite, an overwrite re-planned on a newer snapshot). The commit's own
manifests (written once and kept across retries) are requested on every retry, since a retry
loop may last long enough for a cleanup to remove them; manifests and lists written by the
attempt itself, moments before, are not. A file deleted in the instant between the check and
the publish is not caught: the check closes the window between a writer's prepare and its
commit, not the last instant of the publish.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lakeops.commit.confine import entry_paths, entry_paths_with_extras, index_paths
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.errors import MissingCommitFileError
from lakeops.format import paths
from lakeops.format.manifest import FileKind
from lakeops.io.file_io import FileIO
from lakeops.parallel import IO_THREADS, run_ordered
from lakeops.store.context import TableContext

__all__ = ["CommitPresence", "added_paths", "missing_files", "verify_present"]

#: how many missing files the error message names (all are in its ``paths``)
_NAMED = 5


def added_paths(table: TableContext, change: PlannedChange) -> list[str]:
    """Storage paths of every data, changelog and index file ``change`` adds, in plan order."""
    locations = table.locations
    added = [e for e in change.entries if e.kind == FileKind.ADD]
    found = entry_paths_with_extras(locations, added)
    found += entry_paths(locations, change.changelog)
    found += index_paths(locations, [e for e in change.index_changes if e.kind == FileKind.ADD])
    return found


def missing_files(fio: FileIO, files: Sequence[str], threads: int = IO_THREADS) -> list[str]:
    """The paths of ``files`` that do not exist, in their order; one metadata request per
    file, ``threads`` at once. A request that fails otherwise (a refused connection, denied
    credentials) raises: a file that cannot be checked is never taken as present."""
    found = run_ordered(fio.exists, files, threads)
    return [path for path, present in zip(files, found, strict=True) if not present]


@dataclass
class CommitPresence:
    """What the checks of one commit have established: the added files found present (not
    requested again) and whether a check has run (the commit's own manifests are requested from
    the second check on)."""

    found: set[str] = field(default_factory=set)
    checked: bool = False


def verify_present(
    table: TableContext,
    change: PlannedChange,
    own_manifests: Iterable[str],
    state: CommitPresence,
    threads: int = IO_THREADS,
) -> None:
    """Raise :class:`MissingCommitFileError` unless every file ``change`` adds that ``state``
    has not found yet exists — and, from the commit's second check on, every manifest named in
    ``own_manifests`` (names in the table's ``manifest/`` directory). ``state`` is updated."""
    store = table.store
    files = [p for p in dict.fromkeys(added_paths(table, change)) if p not in state.found]
    manifests = (
        [store.path(paths.manifest_path(name)) for name in own_manifests] if state.checked else []
    )
    todo = files + manifests
    if todo:
        missing = missing_files(store.file_io, todo, threads)
        if missing:
            raise _missing_error(store.root, missing)
    state.found.update(files)
    state.checked = True


def _missing_error(root: str, missing: Sequence[str]) -> MissingCommitFileError:
    base = root.rstrip("/") + "/"
    relative = tuple(p[len(base) :] if p.startswith(base) else p for p in missing)
    shown = ", ".join(relative[:_NAMED])
    more = f" and {len(relative) - _NAMED} more" if len(relative) > _NAMED else ""
    which = "file" if len(relative) == 1 else "files"
    return MissingCommitFileError(
        f"{root}: {len(relative)} {which} this commit adds no longer exist ({shown}{more}); "
        "nothing was committed and the table is unchanged. They were deleted after they were "
        "written — by remove_orphan_files with force or a short threshold while this write "
        "ran, or by hand. Run the write again (and run orphan cleanup only with a threshold "
        "longer than any write takes)",
        paths=relative,
    )
