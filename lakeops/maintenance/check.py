"""``Table.check()`` / ``lakeops check``: verify a table against its own metadata, changing
nothing — the first thing to run after an incident.

Every snapshot, kept changelog, tag and branch snapshot is read; every manifest list, manifest
and index manifest they name must decode; every data, changelog and index file they reference
must exist with the size its entry records (a tag's or branch's changelog excepted: it keeps
its snapshot's files, and expiry deletes every expired snapshot's changelog, tagged or not, as
Paimon's does; a kept changelog, conversely, keeps its changelog only: its snapshot's data
manifests went with the snapshot, as in Paimon), and (Parquet and ORC, whose footers say it) the
row count. Each problem names
the file relative to the table and the snapshots that reference it.
Files are checked once each, on a pool of threads (the work is waiting on storage). A file
found missing is reported only if a second pass over the table as it is then finds it
referenced and missing too (expiry running beside the check deletes files it listed). A wedged
table — a snapshot id re-used after its expiry, a hint that stops readers short — is reported
too (:func:`~lakeops.maintenance.repair.wedge_findings`; ``lakeops repair`` fixes it).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow.fs as pafs

from lakeops.errors import CorruptTableError, LakeopsError, SnapshotNotFoundError
from lakeops.format import paths
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.snapshot import Snapshot
from lakeops.io.data_formats import format_of, reader_for
from lakeops.maintenance.repair import wedge_findings
from lakeops.store import TableStore, fold_entries
from lakeops.store.keep_alive import protected_snapshots
from lakeops.store.locations import FileLocations

__all__ = ["CheckReport", "Problem", "check_table"]

_THREADS = 16
#: what a missing file's problem says
_MISSING = "missing"
_T = TypeVar("_T")


@dataclass(frozen=True)
class Problem:
    """One thing wrong: ``path`` (relative to the table where it lies inside it), what is
    wrong with it, and the snapshots whose metadata reference it."""

    path: str
    problem: str
    snapshots: tuple[int, ...] = ()


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_table` looked at and found; ``ok`` when nothing is wrong."""

    snapshots: int = 0
    metadata_files: int = 0
    data_files: int = 0
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Findings:
    """A :class:`CheckReport` while the check runs."""

    snapshots: int = 0
    metadata_files: int = 0
    data_files: int = 0
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class _Expected:
    path: str
    size: int
    rows: int | None


def _relative(store: TableStore, path: str) -> str:
    root = store.root.rstrip("/")
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


def _expect_entry(
    report: _Findings,
    locations: FileLocations,
    e: ManifestEntry,
    expect: Callable[[str, int, int | None], None],
) -> None:
    try:
        path = locations.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
    except LakeopsError as exc:
        report.problems.append(Problem(e.file.file_name, str(exc)))
        return
    expect(path, e.file.file_size, e.file.row_count)


def check_table(store: TableStore) -> CheckReport:
    """Verify every file the table's snapshots, kept changelogs, tags and branches reference
    (see the module docstring); never writes or deletes anything.

    Expiry may run meanwhile and delete files the check listed (their snapshots expired after
    it read them). A file found missing is therefore looked for again by a second pass over
    the table as it is then, and reported only if that pass too finds it referenced and
    missing."""
    first = _run_check(store)
    if not first.gone:
        return first.result()
    again = _run_check(store)
    first.report.problems = [
        p for p in first.report.problems if p.path not in first.gone or p.path in again.gone
    ]
    return first.result()


def _run_check(store: TableStore) -> _Check:
    """One pass of :func:`check_table`."""
    check = _Check(store)
    check.report.problems += [Problem(path, text, ids) for path, text, ids in wedge_findings(store)]
    snapshots, changelogs, protected = check.snapshots()
    check.report.snapshots = len(snapshots) + len(changelogs) + len(protected)
    for snapshot in snapshots:
        check.expect_files_of(snapshot)
    for kept in changelogs:
        check.expect_files_of(kept, data=False)
    for snapshot in protected:
        # a tag or branch keeps its snapshot's files, not its changelog: expiry deletes the
        # changelog files of every snapshot it expires, tagged or not, as Paimon's does
        check.expect_files_of(snapshot, changelog=False)
    check.report.metadata_files = len(check.seen)
    check.verify_files()
    return check


class _Check:
    """One run of :func:`check_table`: the findings so far, the files every snapshot expects
    (and which snapshots expect each), and the metadata files decoded."""

    def __init__(self, store: TableStore) -> None:
        self.store = store
        self.report = _Findings()
        self.expected: dict[str, _Expected] = {}
        self.users: dict[str, set[int]] = {}
        self.seen: set[str] = set()
        #: the problems' paths of files found missing (data or metadata)
        self.gone: set[str] = set()

    def result(self) -> CheckReport:
        """The report of this pass."""
        report = self.report
        return CheckReport(
            snapshots=report.snapshots,
            metadata_files=report.metadata_files,
            data_files=report.data_files,
            problems=tuple(_merged(report.problems)),
        )

    def metadata(self, load: Callable[[str], list[_T]], name: str, sid: int) -> list[_T] | None:
        """The decoded metadata file ``name``, or None with a problem reported."""
        try:
            out = load(name)
        except CorruptTableError as exc:
            self.report.problems.append(Problem(exc.path or name, str(exc), (sid,)))
            if isinstance(exc, FileNotFoundError):
                self.gone.add(exc.path or name)
            return None
        self.seen.add(name)
        return out

    def snapshots(self) -> tuple[list[Snapshot], list[Snapshot], list[Snapshot]]:
        """(every snapshot, every kept changelog, every tag and branch snapshot) that decodes
        (a file expired since it was listed is skipped; one that does not decode is a
        problem)."""
        store = self.store
        snapshots: list[Snapshot] = []
        for sid in store.snapshot_ids():
            self._snapshot_file(snapshots, store.snapshot, sid)
        changelogs: list[Snapshot] = []
        for name in store.file_io.list_names(store.path(paths.CHANGELOG_DIR)):
            if name.startswith("changelog-") and name[10:].isdigit():
                self._snapshot_file(changelogs, store.changelog, int(name[10:]))
        protected: list[Snapshot] = []
        try:
            protected = protected_snapshots(store)
        except CorruptTableError as exc:
            self.report.problems.append(Problem(exc.path or "tag/", str(exc)))
        return snapshots, changelogs, protected

    def _snapshot_file(
        self, snapshots: list[Snapshot], load: Callable[[int], Snapshot], sid: int
    ) -> None:
        try:
            snapshots.append(load(sid))
        except CorruptTableError as exc:
            if not isinstance(exc, FileNotFoundError):  # else: expired since it was listed
                self.report.problems.append(Problem(exc.path or "", str(exc), (sid,)))
            return
        except SnapshotNotFoundError:
            return  # expired since it was listed
        self.seen.add(f"snapshot {sid}")

    def expect_files_of(
        self, snapshot: Snapshot, *, changelog: bool = True, data: bool = True
    ) -> None:
        """Record the data (unless not ``data``), changelog (unless not ``changelog``) and
        index files ``snapshot`` references; its live data files only where every manifest of
        it decoded (else the fold would be wrong)."""
        store = self.store
        locations = FileLocations.of(store.file_io, store.root, store.schema(snapshot.schema_id))

        def expect(path: str, size: int, rows: int | None, sid: int = snapshot.id) -> None:
            self.expected[path] = _Expected(path, size, rows)
            self.users.setdefault(path, set()).add(sid)

        entries: list[ManifestEntry] = []
        complete = True
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list] if data else []
        if snapshot.changelog_manifest_list and changelog:
            lists.append(snapshot.changelog_manifest_list)
        for lst in lists:
            metas = self.metadata(store.manifest_list, lst, snapshot.id)
            complete &= metas is not None
            for meta in metas or []:
                part = self.metadata(store.manifest, meta.file_name, snapshot.id)
                complete &= part is not None
                if lst != snapshot.changelog_manifest_list:
                    entries += part or []
                else:
                    changes = [e for e in part or [] if e.kind == FileKind.ADD]
                    for e in changes:
                        _expect_entry(self.report, locations, e, expect)
        if complete:
            for e in fold_entries(entries).values():
                _expect_entry(self.report, locations, e, expect)
        if snapshot.index_manifest and data:
            self._expect_index_files(snapshot, locations, expect)

    def _expect_index_files(
        self,
        snapshot: Snapshot,
        locations: FileLocations,
        expect: Callable[[str, int, int | None], None],
    ) -> None:
        assert snapshot.index_manifest is not None
        index = self.metadata(
            self.store.index_manifest_entries, snapshot.index_manifest, snapshot.id
        )
        for ie in index or []:
            try:
                path = locations.index_entry_path(ie.partition, ie.bucket, ie.file)
            except LakeopsError as exc:
                self.report.problems.append(Problem(ie.file.file_name, str(exc), (snapshot.id,)))
                continue
            expect(path, ie.file.file_size, None)

    def verify_files(self) -> None:
        """Check every expected file on a pool of threads; report each that is wrong."""
        fs = self.store.file_io.arrow_fs
        items = list(self.expected.values())
        with ThreadPoolExecutor(_THREADS) as pool:
            found = list(pool.map(lambda item: _verify(fs, item), items))
        self.report.data_files = len(items)
        for item, problem in zip(items, found, strict=True):
            if problem is not None:
                path = _relative(self.store, item.path)
                if problem == _MISSING:
                    self.gone.add(path)
                self.report.problems.append(
                    Problem(path, problem, tuple(sorted(self.users[item.path])))
                )


def _verify(fs: pafs.FileSystem, item: _Expected) -> str | None:
    """What is wrong with one expected file (missing, size, row count), or None."""
    info = fs.get_file_info(item.path)
    if info.type == pafs.FileType.NotFound:
        return _MISSING
    if info.size != item.size:
        return f"is {info.size} bytes, its manifest entry records {item.size}"
    if item.rows is None or format_of(item.path) not in ("parquet", "orc"):
        return None
    try:
        rows = reader_for(item.path, fs).row_count(item.path)
    except FileNotFoundError:
        return _MISSING  # deleted since it was found
    except (OSError, ValueError) as exc:
        return f"cannot be read: {exc}"
    if rows is not None and rows != item.rows:
        return f"holds {rows} rows, its manifest entry records {item.rows}"
    return None


def _merged(problems: list[Problem]) -> list[Problem]:
    """One problem per (file, what is wrong), with every snapshot that reported it."""
    by_key: dict[tuple[str, str], set[int]] = {}
    for p in problems:
        by_key.setdefault((p.path, p.problem), set()).update(p.snapshots)
    return [Problem(path, text, tuple(sorted(ids))) for (path, text), ids in by_key.items()]
