"""The committer: turns commit messages into one new snapshot, atomically and exclusively.

Order of work (a crash at any point leaves only unreferenced files, never a broken table):

1. write one manifest with this commit's ADD/DELETE entries;
2. loop: read the latest snapshot N; its base + delta manifests become the new base list
   (merged into one manifest when there are more than ``manifest.merge-min-count``); write the
   base and delta manifest lists; check that the files the commit adds exist
   (:mod:`lakeops.commit.presence`); publish ``snapshot-(N+1)`` with
   :meth:`~lakeops.io.file_io.FileIO.publish_exclusive`;
3. if another writer published N+1 first, delete this attempt's lists, wait (jittered, see
   :mod:`lakeops.commit.retry` for the pauses and when a writer stops) and retry on top of the
   new latest snapshot. Appends never conflict; a commit that deletes files (compaction) fails
   with :class:`CommitConflictError` if they are gone.
4. after winning, make sure the id was never used before (:mod:`lakeops.commit.id_guard`): a
   snapshot whose id had existed and expired while this writer paused is withdrawn and the
   attempt retried, as in 3;
5. update the ``LATEST`` (and, on the first commit, ``EARLIEST``) hints.

What the snapshot holds (ids, record counts, the index manifest it names) is computed without
I/O by :mod:`lakeops.commit.snapshot_builder`; this module writes, publishes and retries.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lakeops.commit.append_planner import AppendPlanner
from lakeops.commit.exactly_once import already_committed, discard_uncommitted_files
from lakeops.commit.id_guard import IdVerdict, verify_new_id
from lakeops.commit.presence import CommitPresence, verify_present
from lakeops.commit.retry import CommitRetry
from lakeops.commit.row_ids import (
    assign_row_tracking,
    next_row_id_start,
    split_groups,
    stale_updates,
)
from lakeops.commit.since_base import partitions_changed
from lakeops.commit.snapshot_builder import (
    CommitLists,
    PlannedChange,
    base_is_stale,
    check_deletes_live,
    has_deletes,
    manifest_file_meta,
    new_base_manifests,
    next_snapshot,
    next_snapshot_id,
    overwrite_change,
)
from lakeops.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    DataValidationError,
    LakeopsError,
    LockUnavailableError,
)
from lakeops.format import paths
from lakeops.format.commit_message import CommitMessage
from lakeops.format.deletion_vector import DELETION_VECTORS_INDEX as DELETION_VECTORS
from lakeops.format.deletion_vector import deletion_files
from lakeops.format.index_manifest import IndexManifestEntry, combine, write_index_manifest
from lakeops.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    write_manifest,
    write_manifest_list,
)
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.options.rows_layout import manifest_format
from lakeops.read.row_tracking import row_tracking
from lakeops.store import TableStore, fold_entries
from lakeops.store.context import TableContext
from lakeops.store.locations import partition_paths

__all__ = ["BATCH_COMMIT_IDENTIFIER", "CommitCallback", "Committer", "PlannedChange"]

log = logging.getLogger(__name__)

#: Paimon's commit identifier for batch jobs (Long.MAX_VALUE).
BATCH_COMMIT_IDENTIFIER = 2**63 - 1

#: What runs after each published commit, given the table and the new snapshot (Paimon's
#: ``CommitCallback``): the facade passes automatic tag creation
#: (:func:`lakeops.maintenance.auto_tags.auto_tags_after_commit`).
CommitCallback = Callable[[TableContext, Snapshot], None]


class Committer:
    """Commits to one table. ``commit_user`` identifies the writer in snapshots; when the
    caller gives one, a commit whose (user, identifier) is already in the history is skipped
    (:meth:`committed_before`). Without one, a fresh user is made for each committer."""

    def __init__(
        self,
        table: TableContext,
        commit_user: str | None = None,
        *,
        exactly_once: bool | None = None,
        after_commit: Sequence[CommitCallback] = (),
        watermark: int | None = None,
    ) -> None:
        self.table = table
        #: the commit's watermark (epoch millis), stored in its snapshots (see next_snapshot)
        self.watermark = watermark
        self.after_commit = tuple(after_commit)
        self.store = table.store
        self.schema = schema = table.schema
        self.options = table.options
        self.commit_user = commit_user or str(uuid.uuid4())
        #: whether the user is the caller's (it may have committed before) rather than fresh
        self.stable_user = bool(commit_user) if exactly_once is None else exactly_once
        if self.stable_user and not commit_user:
            raise ValueError("an exactly-once commit needs a commit user")
        self.partition_types = schema.types_of(schema.partition_keys)
        #: manifests are written in the table's ``manifest.format`` and
        #: ``manifest.compression``, as Paimon does
        self.manifest_format = manifest_format(schema.options)

    # ------------------------------------------------------------------ commit
    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        on_compact_conflict: Callable[[CommitError], None] | None = None,
        overwrite: Callable[[bytes], bool] | None = None,
        last_safe_snapshot: int | None = None,
    ) -> Snapshot | None:
        """Publish the messages: an ``APPEND`` snapshot for new files (with their changelog),
        then a ``COMPACT`` snapshot for compaction changes (with the changelog compaction
        produced), as Paimon does. Returns the last snapshot, or None if there was nothing.

        If the compaction's inputs were replaced meanwhile, ``on_compact_conflict`` (when given)
        handles the conflict and the appended data stays committed; otherwise it raises.
        With ``overwrite`` (a predicate on serialized partitions), the commit is an
        ``OVERWRITE`` that first deletes every live file of the matching partitions. With
        ``last_safe_snapshot`` too (Paimon's ``commit.strict-mode.last-safe-snapshot``, which
        its rescale sets to the snapshot it read), the overwrite is refused
        (:class:`CommitConflictError`) when a commit after that snapshot other than a
        compaction changed files of those partitions: their rows would be lost.

        A commit already in the history (:meth:`committed_before`) publishes nothing and
        returns the snapshot that holds it."""
        skipped = self.committed_before(
            messages, commit_identifier, overwrite=overwrite is not None
        )
        if skipped is not None:
            return skipped

        def entries(kind: int, attr: str) -> list[ManifestEntry]:
            return [
                ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f)
                for m in messages
                for f in getattr(m, attr)
            ]

        appends = entries(FileKind.ADD, "new_files")
        append_changelog = entries(FileKind.ADD, "changelog_files")
        compacts = entries(FileKind.DELETE, "compact_before") + entries(
            FileKind.ADD, "compact_after"
        )
        compact_changelog = entries(FileKind.ADD, "compact_changelog_files")
        index_changes = [
            IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, f)
            for m in messages
            for f in m.new_index_files
        ]
        snapshot = None
        if overwrite is not None:  # Paimon's OVERWRITE: replace the live files, then add
            self.refuse_strays(appends, overwrite)

            def plan_overwrite(latest: Snapshot | None) -> PlannedChange:
                if last_safe_snapshot is not None:
                    self._check_strict(last_safe_snapshot, latest, overwrite)
                # computed on every attempt: files another writer added meanwhile go too
                return overwrite_change(
                    self.store.live_entries(latest),
                    self.store.index_entries(latest),  # the partitions' index files go too
                    overwrite,
                    appends,
                    append_changelog,
                    index_changes,
                )

            snapshot = self.commit_planned(plan_overwrite, CommitKind.OVERWRITE, commit_identifier)
        elif appends or append_changelog or index_changes:
            snapshot = self._commit_appends(
                messages, PlannedChange(appends, append_changelog, index_changes), commit_identifier
            )
        compact_index = [e for m in messages for e in m.compact_index_changes]
        if compacts or compact_changelog or compact_index:
            snapshot = self._commit_compaction(
                PlannedChange(compacts, compact_changelog, compact_index),
                commit_identifier,
                appended=snapshot,
                on_conflict=on_compact_conflict,
            )
        if snapshot is not None:
            self._run_callbacks(snapshot)
        return snapshot

    def commit_rewrite(self, plan: Callable[[Snapshot | None], PlannedChange]) -> Snapshot:
        """Publish a row-level change (Paimon's ``DELETE`` / ``UPDATE`` / ``MERGE INTO`` of an
        append table) as one ``OVERWRITE`` snapshot of what ``plan`` makes of the latest
        snapshot: files deleted (rewritten without some rows) and added, deletion-vector index
        files replaced — Paimon commits an append that deletes files or vectors as an
        overwrite. The deleted files and index files must still be live (else
        :class:`CommitConflictError`: another commit changed them meanwhile); the commit
        callbacks run after it, as after :meth:`commit`."""
        snapshot = self.commit_planned(plan, CommitKind.OVERWRITE)
        self._run_callbacks(snapshot)
        return snapshot

    def _check_strict(
        self, safe: int, latest: Snapshot | None, partitions: Callable[[bytes], bool]
    ) -> None:
        """Refuse an overwrite that would drop rows another job committed after ``safe``."""
        if latest is None or latest.id == safe:
            return
        changed = partitions_changed(self.store, safe, latest, partitions)
        if changed is not False:
            raise CommitConflictError(
                f"{self.store.root}: another job changed the partitions this overwrite replaces "
                f"after snapshot {safe}, which it read"
                + (" (or that history is no longer readable)" if changed is None else "")
                + "; their rows would be lost: run it again"
            )

    def committed_before(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int,
        *,
        overwrite: bool = False,
    ) -> Snapshot | None:
        """The newest snapshot of this committer's user when the commit of ``messages`` under
        ``commit_identifier`` is already in the table's history (see
        :mod:`lakeops.commit.exactly_once`: that snapshot's identifier is at or above it);
        the files ``messages`` add that no snapshot of the user names are then deleted. None
        when the commit is still to be made — always for a fresh user, and when there is
        nothing to commit (no file in ``messages`` and no ``overwrite``)."""
        if not self.stable_user or (not overwrite and all(m.is_empty for m in messages)):
            return None
        done = already_committed(self.store, self.commit_user, commit_identifier)
        if done is None:
            return None
        try:
            deleted = discard_uncommitted_files(
                self.table, messages, self.commit_user, commit_identifier
            )
        except Exception:  # the commit is in the history: what is left is an orphan
            log.warning(
                "%s: could not delete the files of a skipped commit; remove_orphan_files "
                "takes them",
                self.store.root,
                exc_info=True,
            )
            deleted = 0
        log.warning(
            "%s: commit user %s already committed identifier %d (snapshot %d holds commit "
            "identifier %d), so this commit is skipped and nothing is published; %d files of "
            "this attempt deleted",
            self.store.root,
            self.commit_user,
            commit_identifier,
            done.id,
            done.commit_identifier,
            deleted,
        )
        return done

    def refuse_strays(
        self, appends: Sequence[ManifestEntry], replaces: Callable[[bytes], bool]
    ) -> None:
        """Refuse, before anything is published, an ``OVERWRITE`` whose new files lie in a
        partition it does not replace, as Paimon's commit does ("Trying to overwrite partition
        …, but the changes in … does not belong to this partition"). Such a static partition
        overwrite would otherwise add rows to partitions nobody asked it to touch."""
        strays = sorted({e.partition for e in appends if not replaces(e.partition)})
        if not strays:
            return
        names = partition_paths(self.schema, self.options)
        shown = ", ".join(repr(names.dir_of(p)) for p in strays[:3])
        more = f" and {len(strays) - 3} more" if len(strays) > 3 else ""
        which = "partition" if len(strays) == 1 else "partitions"
        raise DataValidationError(
            f"{self.store.root}: an overwrite of the listed partitions has rows in {which} "
            f"{shown}{more}, which it does not replace; nothing was committed. Keep only rows "
            "of the listed partitions, or list every partition the data holds"
        )

    def _run_callbacks(self, snapshot: Snapshot) -> None:
        """Each ``after_commit`` callback (Paimon's commit callbacks, e.g. automatic tags) on the
        published ``snapshot``. The commit is published, so a failure is logged, never raised
        (as Paimon does); the next commit runs them again."""
        for callback in self.after_commit:
            try:
                callback(self.table, snapshot)
            except Exception:
                log.warning(
                    "%s: %s after snapshot %d failed",
                    self.store.root,
                    getattr(callback, "__name__", repr(callback)),
                    snapshot.id,
                    exc_info=True,
                )

    def _commit_appends(
        self, messages: Sequence[CommitMessage], change: PlannedChange, commit_identifier: int
    ) -> Snapshot:
        """The ``APPEND`` snapshot, re-sequenced above concurrent commits where needed. An
        append table (no primary key) merges no rows by key: its new files are published as
        written, with no key placement to go stale and no sequence order to restore."""
        if not self.schema.primary_keys:
            return self.commit_planned(lambda _latest: change, CommitKind.APPEND, commit_identifier)
        planner = AppendPlanner(self.store, self.schema, self.options, messages, change)
        try:
            snapshot = self.commit_planned(planner.plan, CommitKind.APPEND, commit_identifier)
        except CommitStateUnknownError:
            raise  # every file is kept: the snapshot may reference them
        except BaseException:
            planner.discard_rewrites()
            raise
        planner.published()
        return snapshot

    def _commit_compaction(
        self,
        change: PlannedChange,
        commit_identifier: int,
        *,
        appended: Snapshot | None,
        on_conflict: Callable[[CommitError], None] | None,
    ) -> Snapshot | None:
        """The ``COMPACT`` snapshot after ``appended`` (the data snapshot of the same commit,
        if any); returns the last snapshot published."""
        try:
            return self.commit_entries(
                change.entries,
                CommitKind.COMPACT,
                commit_identifier,
                change.changelog,
                change.index_changes,
            )
        except CommitStateUnknownError:
            if appended is None:
                raise
            # the data is committed; the compaction may be too, so its files stay
            log.warning("%s: in-writer compaction commit state unknown", self.store.root)
        except CommitError as conflict:
            if on_conflict is None:
                raise
            on_conflict(conflict)
        except Exception as exc:
            if appended is None or on_conflict is None:
                raise
            # the data commit is published: a failing compaction commit (a full disk, a
            # lost store) drops the compaction only, never the committed data
            on_conflict(CommitError(f"in-writer compaction not committed: {exc}"))
        return appended

    def commit_entries(
        self,
        entries: Sequence[ManifestEntry],
        commit_kind: CommitKind,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        changelog: Sequence[ManifestEntry] = (),
        index_changes: Sequence[IndexManifestEntry] = (),
    ) -> Snapshot:
        """Publish one snapshot of ``entries`` and ``changelog`` (see the module docstring).
        The snapshot inherits its predecessor's index manifest, or one with ``index_changes``
        folded in."""
        change = PlannedChange(entries, changelog, index_changes)
        return self.commit_planned(lambda _latest: change, commit_kind, commit_identifier)

    def commit_planned(
        self,
        plan: Callable[[Snapshot | None], PlannedChange],
        commit_kind: CommitKind,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> Snapshot:
        """Publish one snapshot of what ``plan`` makes of the latest snapshot, re-planned on
        every attempt (a plan may raise :class:`CommitConflictError` to give up). A
        row-tracking table's new files get their row ids and sequence numbers on each attempt
        from the snapshot it publishes on (:mod:`lakeops.commit.row_ids`)."""
        self.store.file_io.check_commit_ready()  # an unreachable lock fails before any write
        if row_tracking(self.schema):
            plan = _row_tracked(plan, self.store)
        own = _OwnManifests()
        retry = CommitRetry(self.table.commit_retry)
        seen: int | None = None  # the latest snapshot id the previous attempt planned on
        while True:
            latest = self.store.latest_snapshot()
            prepared = self._prepare(plan, latest, own, check_schema=retry.retries == 0)
            # (None: expiry removed the base under this attempt; re-plan on the new one)
            if prepared is not None:
                snapshot = self._snapshot(prepared, own, commit_kind, commit_identifier)
                if self._publish_attempt(snapshot, own, prepared):
                    self._update_hints(snapshot.id)
                    return snapshot
                self._discard_lost(prepared)
            latest_id = None if latest is None else latest.id
            progressed = retry.retries == 0 or latest_id != seen
            seen = latest_id
            if not retry.wait_turn(progressed=progressed):
                break
        self._discard(own.names)
        raise CommitConflictError(
            f"could not publish a snapshot of {self.store.root}: {retry.verdict}; nothing of "
            "this commit was published"
        )

    # --------------------------------------------------------- one attempt's steps
    def _prepare(
        self,
        plan: Callable[[Snapshot | None], PlannedChange],
        latest: Snapshot | None,
        own: _OwnManifests,
        *,
        check_schema: bool,
    ) -> _Attempt | None:
        """Plan on ``latest`` and write what the plan needs: its own manifests (only when the
        plan changed), the base manifest list and, for index changes, the index manifest.

        Returns None when the base's metadata vanished because expiry removed it after a newer
        snapshot came (the caller re-plans). On any other failure everything written for the
        commit is deleted (nothing is published) and the error propagates.
        """
        written: list[str] = []  # this attempt's lists and index manifest, as written
        try:
            if check_schema:
                self._check_schema()
            change = plan(latest)
            if change is not own.change:
                self._write_own(own, change)
            self._check_deletes(latest, change.entries)
            self._check_deletion_vectors(latest, change)
            base = self._base_manifests(latest)
            base_list, base_size = self._write_list(base, written)
            index_manifest = None
            if change.index_changes:
                index_manifest = self._write_index_manifest(latest, change.index_changes)
                if index_manifest is not None:
                    written.append(index_manifest)
            verify_present(self.table, change, own.names, own.presence)
        except FileNotFoundError:
            self._discard(written)
            if self._base_is_stale(next_snapshot_id(latest)):
                return None
            self._discard(own.names)
            raise
        except BaseException:
            with contextlib.suppress(Exception):  # nothing is published: all of it goes
                self._discard([*own.names, *written])
            raise
        return _Attempt(latest, change, base, base_list, base_size, index_manifest, written)

    def _snapshot(
        self,
        prepared: _Attempt,
        own: _OwnManifests,
        commit_kind: CommitKind,
        commit_identifier: int,
    ) -> Snapshot:
        """Write the delta (and changelog) manifest list and build the attempt's snapshot."""
        delta, delta_size = self._write_list(own.delta, prepared.written)
        changelog = changelog_size = None
        if own.changelog is not None:
            changelog, changelog_size = self._write_list([own.changelog], prepared.written)
        lists = CommitLists(
            base=prepared.base_list,
            base_size=prepared.base_size,
            delta=delta,
            delta_size=delta_size,
            changelog=changelog,
            changelog_size=changelog_size,
            index_manifest=prepared.index_manifest,
        )
        return next_snapshot(
            prepared.latest,
            prepared.change,
            lists,
            commit_kind=commit_kind,
            commit_identifier=commit_identifier,
            schema_id=self.schema.id,
            commit_user=self.commit_user,
            time_millis=int(time.time() * 1000),
            watermark=self.watermark,
        )

    def _publish_attempt(self, snapshot: Snapshot, own: _OwnManifests, prepared: _Attempt) -> bool:
        """Publish ``snapshot``; True if it is ours and its id was never used before. If the
        lock was never taken (or lapsed before writing) nothing is published, so everything
        written goes."""
        path = self.store.path(paths.snapshot_path(snapshot.id))
        try:
            # ids only grow: never publish a name an expired snapshot may have had
            if self._base_is_stale(snapshot.id) or not self._publish(path, snapshot):
                return False
        except LockUnavailableError:
            with contextlib.suppress(Exception):
                self._discard([*own.names, *prepared.written])
            raise
        return self._keeps_id(path, snapshot, own, prepared)

    def _keeps_id(
        self, path: str, snapshot: Snapshot, own: _OwnManifests, prepared: _Attempt
    ) -> bool:
        """After a won publish: True if the id was new (the commit stands); False after
        withdrawing a snapshot whose id existed before (a writer that stalled before its
        publish while others committed and expiry removed that id), so the attempt is
        retried on the new latest snapshot. Nobody reads or builds on a withdrawn snapshot:
        a newer one existed before it was created (:mod:`lakeops.commit.id_guard`)."""

        def live() -> list[ManifestEntry]:
            metas = [*prepared.base, *own.delta]
            return [e for m in metas for e in self.store.manifest(m.file_name)]

        try:
            verdict = verify_new_id(
                self.store,
                snapshot,
                own_manifests=[m.file_name for m in own.delta],
                live=live,
                added=lambda: [
                    e.file.file_name
                    for m in own.delta
                    for e in self.store.manifest(m.file_name)
                    if e.kind == FileKind.ADD
                ],
                still_ours=lambda: self._is_ours(path, snapshot),
            )
        except Exception as exc:  # the snapshot is published: its files must stay
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} of {self.store.root} was published, but checking that "
                f"its id was new failed ({exc}); its files are kept — read the table to see "
                "whether the commit is there"
            ) from exc
        if verdict is IdVerdict.NEW:
            return True
        if verdict is IdVerdict.UNKNOWN:
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} of {self.store.root} was published, but newer "
                "snapshots were expired meanwhile, so whether its id had been used before "
                "cannot be told; its files are kept — read the table to see whether the "
                "commit is there"
            )
        log.warning(
            "%s: snapshot id %s had been used and expired while this commit waited to "
            "publish; withdrawn, retrying on the latest snapshot",
            self.store.root,
            snapshot.id,
        )
        failure: Exception | None = None
        try:
            ours = self._is_ours(path, snapshot)
            if ours:
                self.store.file_io.delete(path)
        except Exception as exc:
            failure, ours = exc, None
        if ours is None:  # maybe still there: its files must stay with it
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} of {self.store.root} re-used an expired id and could "
                f"not be withdrawn ({failure or 'unreadable'}); its files are kept — `lakeops "
                "check` reports it and `lakeops repair` moves it aside; write the data again"
            ) from failure
        return False

    def _discard_lost(self, prepared: _Attempt) -> None:
        """After another writer won: delete the attempt's lists and the base manifests it
        merged itself (the plan's own manifests stay for the next attempt)."""
        self._discard(prepared.written)
        if prepared.latest is not None:
            with contextlib.suppress(FileNotFoundError):  # else left for orphan cleaning
                self._discard(
                    new_base_manifests(prepared.base, self.store.data_manifests(prepared.latest))
                )

    def _discard(self, names: Sequence[str]) -> None:
        for name in names:
            self.store.file_io.delete(self.store.path(paths.manifest_path(name)))

    def _publish(self, path: str, snapshot: Snapshot) -> bool:
        """Publish ``snapshot`` exclusively; True if it is ours on storage afterwards.

        A publish that raised, or reported the name taken, may still have landed (a retried
        conditional put, a lost response): the snapshot at ``path`` is ours exactly when it names
        our manifest lists, which no one else can. If that cannot be read, the state is unknown.
        """
        data = snapshot.to_json().encode()
        failure: Exception | None = None
        try:
            if self.store.file_io.publish_exclusive(path, data):
                return True
        except LockUnavailableError:
            raise  # nothing was written under the lock: the snapshot is certainly not there
        except Exception as exc:
            failure = exc
        ours = self._is_ours(path, snapshot)
        if ours is None:
            raise CommitStateUnknownError(
                f"publishing snapshot {snapshot.id} of {self.store.root} failed "
                f"({failure or 'name taken'}) and the snapshot there cannot be read back; its "
                "files are kept — read the table to see whether the commit is there"
            ) from failure
        return ours

    def _is_ours(self, path: str, snapshot: Snapshot) -> bool | None:
        """Whether the snapshot stored at ``path`` is ``snapshot`` (None: cannot tell)."""
        try:
            stored = Snapshot.from_json(self.store.file_io.read_bytes(path))
        except FileNotFoundError:
            return False
        except Exception:
            return None
        return (
            stored.commit_user == snapshot.commit_user
            and stored.delta_manifest_list == snapshot.delta_manifest_list
            and stored.base_manifest_list == snapshot.base_manifest_list
        )

    # --------------------------------------------------------------- manifests
    def _write_own(self, own: _OwnManifests, change: PlannedChange) -> None:
        """Replace the manifests of the previous plan by ``change``'s."""
        self._discard(own.names)
        own.change, own.delta, own.changelog = None, [], None
        if change.entries:
            own.delta = [self._write_manifest(change.entries)]
        if change.changelog:
            own.changelog = self._write_manifest(change.changelog)
        own.change = change

    def _write_manifest(self, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        name = paths.manifest_name()
        data = write_manifest(entries, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
        return manifest_file_meta(
            entries,
            file_name=name,
            file_size=len(data),
            schema_id=self.schema.id,
            partition_types=self.partition_types,
        )

    def _write_list(self, metas: Sequence[ManifestFileMeta], written: list[str]) -> tuple[str, int]:
        """Write a manifest list of ``metas``; its name is appended to ``written``."""
        name = paths.manifest_list_name()
        data = write_manifest_list(metas, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
        written.append(name)
        self.store.remember_manifest_list(name, metas)  # the next commit's base reads it
        return name, len(data)

    def _base_manifests(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        """Manifests of every live file of ``latest``, merged into one when there are many."""
        if latest is None:
            return []
        metas = self.store.data_manifests(latest)
        if len(metas) <= self.options.manifest_merge_min_count:
            return metas
        live = list(
            fold_entries(e for m in metas for e in self.store.manifest(m.file_name)).values()
        )
        return [self._write_manifest(live)] if live else []

    def _write_index_manifest(
        self, latest: Snapshot | None, changes: Sequence[IndexManifestEntry]
    ) -> str | None:
        """The new index manifest (None when no index file stays live)."""
        unaware = not self.schema.primary_keys and self.options.bucket == -1
        live = combine(self.store.index_entries(latest), changes, unaware_bucket=unaware)
        if not live:
            return None
        name = paths.index_manifest_name()
        data = write_index_manifest(live, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
        return name

    # ------------------------------------------------------------------ checks
    def _base_is_stale(self, snapshot_id: int) -> bool:
        """Whether ``snapshot_id`` may have been used already (see
        :func:`~lakeops.commit.snapshot_builder.base_is_stale`)."""
        return base_is_stale(snapshot_id, self.store._hint(paths.EARLIEST_HINT))

    def _check_deletes(self, latest: Snapshot | None, entries: Sequence[ManifestEntry]) -> None:
        """Refuse deletes of files ``latest`` no longer holds (live files are read only when
        the commit deletes any)."""
        if has_deletes(entries):
            check_deletes_live(entries, fold_entries(self.store.live_entries(latest)))

    def _check_deletion_vectors(self, latest: Snapshot | None, change: PlannedChange) -> None:
        """Refuse a change that would lose a deletion vector committed while it was prepared
        (a ``DELETE`` by another engine): every deletion-vector index file it deletes must be
        live in ``latest``; a data file it removes that has a vector in ``latest`` must have
        it in an index file the change deletes (else its rewrite brings deleted rows back); a
        bucket's new index file may only replace one the change deletes."""
        dv_changes = [e for e in change.index_changes if e.file.index_type == DELETION_VECTORS]
        if latest is None or not latest.index_manifest:
            return
        if not dv_changes and not has_deletes(change.entries):
            return
        live = [
            e for e in self.store.index_entries(latest) if e.file.index_type == DELETION_VECTORS
        ]
        live_names = {e.file.file_name for e in live}
        removed = {e.file.file_name for e in dv_changes if e.kind == FileKind.DELETE}

        def conflict(what: str) -> CommitConflictError:
            return CommitConflictError(
                f"{what} in snapshot {latest.id} of {self.store.root} (rows were deleted while "
                "this commit was prepared); nothing was committed — run it again"
            )

        gone = sorted(removed - live_names)
        if gone:
            raise conflict(f"deletion-vector index file {gone[0]} is no longer live")
        unaware = not self.schema.primary_keys and self.options.bucket == -1
        if not unaware:
            replaced = {e.key: e.file.file_name for e in live}
            for e in dv_changes:
                old = replaced.get(e.key)
                if e.kind == FileKind.ADD and old is not None and old not in removed:
                    raise conflict(f"bucket {e.bucket} has a new deletion-vector index file {old}")
        if not has_deletes(change.entries):
            return
        vectors = deletion_files(live)
        for d in change.entries:
            df = vectors.get((d.partition, d.bucket, d.file.file_name))
            if d.kind == FileKind.DELETE and df is not None and df.path not in removed:
                raise conflict(f"data file {d.file.file_name} has a deletion vector")

    def _check_schema(self) -> None:
        """Refuse to commit files written under a schema that a newer one contradicts.

        A schema published while this write ran that changes only comments leaves the write
        valid; any other change (fields, types, keys, options) means the files and merges of
        this write followed rules the table no longer has, so it must be re-run.
        """
        # schema ids are contiguous (each is published exclusively as its predecessor + 1), so
        # one probe tells whether any newer schema exists
        if not self.store.file_io.exists(self.store.path(paths.schema_path(self.schema.id + 1))):
            return
        latest = self.store.latest_schema()
        if (
            [(f.id, f.name, f.type) for f in latest.fields]
            == [(f.id, f.name, f.type) for f in self.schema.fields]
            and latest.primary_keys == self.schema.primary_keys
            and latest.partition_keys == self.schema.partition_keys
            and latest.options == self.schema.options
        ):
            return
        raise CommitConflictError(
            f"the schema of {self.store.root} changed from {self.schema.id} to {latest.id} "
            "while this write ran, so nothing was committed (its unreferenced data files are "
            "left for remove_orphan_files); re-open the table and run the write again under "
            "the new schema"
        )

    # ------------------------------------------------------------------ hints
    def _update_hints(self, snapshot_id: int) -> None:
        """Best effort: readers never trust hints blindly, so a failure here is harmless."""
        with contextlib.suppress(OSError, LakeopsError):
            self._write_hints(snapshot_id)

    def _write_hints(self, snapshot_id: int) -> None:
        """Point ``LATEST`` at ``snapshot_id``, or, when the hint already names a newer
        snapshot that exists, at the newest one upward from there (a writer that paused after
        its publish does not set it back; writers that published meanwhile wrote their hints
        first). A writer whose hint lands between this one's read and write may see it
        replaced by this lower one; readers probe upward from any hint, and the next commit
        moves it on. ``EARLIEST`` is created only by the first commit and only if absent:
        expiry owns it afterwards and it must never move back."""
        store, fio = self.store, self.store.file_io
        current = store._hint(paths.LATEST_HINT)
        latest = snapshot_id
        if current is not None and current > latest and store.snapshot_exists(current):
            latest = current
            while store.snapshot_exists(latest + 1):
                latest += 1
        if latest != current:
            fio.overwrite_atomic(store.path(paths.LATEST_HINT), str(latest).encode())
        if snapshot_id == 1 and store.earliest_hint() is None:
            fio.publish_exclusive(store.path(paths.EARLIEST_HINT), b"1")


def _row_tracked(
    plan: Callable[[Snapshot | None], PlannedChange], store: TableStore
) -> Callable[[Snapshot | None], PlannedChange]:
    """``plan`` with row ids and sequence numbers assigned on the snapshot planned on (the
    same change while attempts re-plan on the same snapshot, so its manifests are kept);
    updates of rows another commit replaced meanwhile are refused."""
    memo: dict[tuple[int | None, int, int], tuple[PlannedChange, PlannedChange]] = {}

    def assigned(latest: Snapshot | None) -> PlannedChange:
        change = plan(latest)
        if any(
            e.file.first_row_id is not None and e.file.max_sequence_number == 0
            for e in change.entries
        ):
            gone = stale_updates(change.entries, store.live_entries(latest))
            if gone:
                raise CommitConflictError(
                    f"files {gone[:3]} update rows by row id that another commit replaced "
                    "(an overwrite or a compaction) since the update read them; nothing was "
                    "committed — run the update again on the new snapshot"
                )
        if any(e.kind == FileKind.DELETE for e in change.entries):
            split = split_groups(change.entries, store.live_entries(latest))
            if split:
                raise CommitConflictError(
                    f"files {split[:3]} hold rows by row id that this commit's compaction "
                    "merged with others while they were written; nothing was committed — "
                    "compact again"
                )
        start = next_row_id_start(latest)
        key = (None if latest is None else latest.id, start, id(change))
        kept = memo.get(key)
        if kept is not None and kept[0] is change:
            return kept[1]
        entries, next_row_id = assign_row_tracking(change.entries, next_snapshot_id(latest), start)
        out = PlannedChange(entries, change.changelog, change.index_changes, next_row_id)
        memo.clear()
        memo[key] = (change, out)
        return out

    return assigned


class _OwnManifests:
    """The manifests written for the current plan: kept while attempts re-plan to the same
    change, replaced when the plan changes, deleted when nothing is published."""

    def __init__(self) -> None:
        #: the plan they hold; None until both are written
        self.change: PlannedChange | None = None
        self.delta: list[ManifestFileMeta] = []
        self.changelog: ManifestFileMeta | None = None
        #: what this commit's presence checks established (:mod:`lakeops.commit.presence`)
        self.presence = CommitPresence()

    @property
    def names(self) -> list[str]:
        return [m.file_name for m in self.delta] + (
            [self.changelog.file_name] if self.changelog is not None else []
        )


@dataclass
class _Attempt:
    """One attempt's plan and what it wrote on top of the plan's own manifests (deleted when
    the attempt loses)."""

    latest: Snapshot | None
    change: PlannedChange
    #: the base list's manifests (a merged one of them was written by this attempt)
    base: list[ManifestFileMeta]
    base_list: str
    base_size: int
    #: the index manifest written for the change's index changes (None: none written)
    index_manifest: str | None
    #: names of the manifest lists (and index manifest) this attempt wrote
    written: list[str] = field(default_factory=list)
