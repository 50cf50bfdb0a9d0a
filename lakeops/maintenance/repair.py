"""A wedged table, found and repaired: a snapshot id re-used after its expiry, hints that stop
readers short.

Snapshot ids are contiguous: each commit publishes the latest plus one, and expiry deletes the
oldest first, so the snapshot files of a healthy table are one run of ids (an interrupted
expiry leaves the run's start below ``EARLIEST``, still one run). A snapshot below a missing
id — ``snapshot-2`` beside ``snapshot-4`` without ``snapshot-3`` — is a *stray*: an id that
existed, expired and was created again by a writer that had paused before its publish (what
lakeops before its id check let happen, and other engines may still do). The newer run is the
table; the stray is no part of its history, but ``LATEST`` may name it, and a writer that
trusts that hint tries to publish an id that expiry announced gone, over and over.

:func:`wedge_findings` reports strays and hints that would stop a reader short (``check``);
:func:`repair_table` (``Table.repair`` / ``lakeops repair``) moves each stray's snapshot file
into ``_lakeops_repair/`` (no Paimon reader looks there; the commit it describes is reported,
so its rows can be written again) and points ``LATEST`` and ``EARLIEST`` into the run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from lakeops.errors import LakeopsError
from lakeops.format import paths
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = ["RepairReport", "StraySnapshot", "repair_table", "split_strays", "wedge_findings"]

#: what ``lakeops repair`` points users to
_WAY_OUT = "run `lakeops repair <table>` (Table.repair()) to fix it"


def split_strays(ids: list[int]) -> tuple[list[int], list[int]]:
    """``(strays, run)``: the sorted snapshot ids below the last missing id, and the
    contiguous run above it (the table's history)."""
    for i in range(len(ids) - 1, 0, -1):
        if ids[i] != ids[i - 1] + 1:
            return ids[:i], ids[i:]
    return [], ids


def wedge_findings(store: TableStore) -> list[tuple[str, str, tuple[int, ...]]]:
    """What keeps writers or readers off the table's newest snapshot: ``(path, problem,
    snapshots)`` for each stray snapshot and each hint that names the wrong snapshot."""
    ids = store.snapshot_ids()
    strays, run = split_strays(ids)
    found: list[tuple[str, str, tuple[int, ...]]] = []
    for sid in strays:
        found.append(
            (
                paths.snapshot_path(sid),
                f"snapshot {sid} re-uses an expired id: it lies below newer snapshots "
                f"{run[0]}..{run[-1]} with a missing id between, so it is no part of the "
                f"table's history; {_WAY_OUT}",
                (sid,),
            )
        )
    if not run:
        return found
    latest = store._hint(paths.LATEST_HINT)
    if latest is not None and latest != run[-1] and not store.snapshot_exists(latest + 1):
        found.append(
            (
                paths.LATEST_HINT,
                f"LATEST names snapshot {latest}, but the newest is {run[-1]}: readers that "
                f"trust the hint (Paimon's) stop at {latest}; {_WAY_OUT}",
                (),
            )
        )
    earliest = store.earliest_hint()
    if earliest is not None and earliest > run[-1]:
        found.append(
            (
                paths.EARLIEST_HINT,
                f"EARLIEST names snapshot {earliest}, above the newest ({run[-1]}); {_WAY_OUT}",
                (),
            )
        )
    return found


@dataclass(frozen=True)
class StraySnapshot:
    """A stray snapshot and the commit it describes (None where its file does not decode)."""

    snapshot_id: int
    #: where its file was moved, relative to the table (None in a dry run)
    moved_to: str | None
    commit_user: str | None = None
    commit_identifier: int | None = None
    commit_kind: str | None = None
    time_millis: int | None = None
    delta_record_count: int | None = None


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair_table` found and (unless ``dry_run``) changed."""

    strays: tuple[StraySnapshot, ...]
    #: the value written to ``LATEST`` / ``EARLIEST`` (None: left as it was)
    latest_hint: int | None
    earliest_hint: int | None
    dry_run: bool

    @property
    def changed(self) -> bool:
        return bool(self.strays or self.latest_hint is not None or self.earliest_hint is not None)


def repair_table(store: TableStore, *, dry_run: bool = False) -> RepairReport:
    """Move every stray snapshot out of ``snapshot/`` and point the hints into the run of
    newest ids (see the module docstring). Idempotent; ``dry_run`` changes nothing and
    reports what would change. Run it when no writer of an older lakeops is paused mid-commit
    (one that resumes may create a stray again)."""
    ids = store.snapshot_ids()
    strays, run = split_strays(ids)
    fio = store.file_io
    moved: list[StraySnapshot] = []
    for sid in strays:
        relative = paths.snapshot_path(sid)
        try:
            data = fio.read_bytes(store.path(relative))
        except FileNotFoundError:
            continue  # expired meanwhile
        about = _describe(data, relative)
        target = None
        if not dry_run:
            target = f"{paths.REPAIR_DIR}/snapshot-{sid}-{uuid.uuid4().hex[:8]}.json"
            fio.write_bytes(store.path(target), data)
            fio.delete(store.path(relative))
        moved.append(StraySnapshot(sid, target, *about))
    latest = earliest = None
    if run:
        hint = store._hint(paths.LATEST_HINT)
        if hint != run[-1]:
            latest = run[-1]
        hint = store.earliest_hint()
        if hint is None or hint < run[0] or hint > run[-1]:
            earliest = run[0] if hint is None or hint < run[0] else run[-1]
        if not dry_run and latest is not None:
            fio.overwrite_atomic(store.path(paths.LATEST_HINT), str(latest).encode())
        if not dry_run and earliest is not None:
            fio.overwrite_atomic(store.path(paths.EARLIEST_HINT), str(earliest).encode())
    return RepairReport(tuple(moved), latest, earliest, dry_run)


def _describe(
    data: bytes, relative: str
) -> tuple[str | None, int | None, str | None, int | None, int | None]:
    try:
        s = Snapshot.from_json(data, relative)
    except (LakeopsError, ValueError, KeyError, TypeError):
        return None, None, None, None, None
    return (
        s.commit_user,
        s.commit_identifier,
        str(s.commit_kind),
        s.time_millis,
        s.delta_record_count,
    )
