"""The committer: turns commit messages into one new snapshot, atomically and exclusively.

Order of work (a crash at any point leaves only unreferenced files, never a broken table):

1. write one manifest with this commit's ADD/DELETE entries;
2. loop: read the latest snapshot N; its base + delta manifests become the new base list
   (merged into one manifest when there are more than ``manifest.merge-min-count``); write the
   base and delta manifest lists; publish ``snapshot-(N+1)`` with
   :meth:`~lakeops.io.file_io.FileIO.publish_exclusive`;
3. if another writer published N+1 first, delete this attempt's lists, back off (bounded,
   jittered) and retry on top of the new latest snapshot. Appends never conflict; a commit that
   deletes files (compaction) fails with :class:`CommitConflictError` if they are gone.
4. after winning, update the ``LATEST`` (and, on the first commit, ``EARLIEST``) hints.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lakeops.commit.since_base import data_committed, index_changed, sequence_ceilings
from lakeops.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    LockUnavailableError,
    StaleWriteError,
)
from lakeops.options import TableOptions
from lakeops.spec import paths
from lakeops.spec.commit_message import CommitMessage
from lakeops.spec.data_file import DataFileMeta, SimpleStats
from lakeops.spec.index_manifest import IndexManifestEntry, combine, write_index_manifest
from lakeops.spec.locations import FileLocations
from lakeops.spec.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    write_manifest,
    write_manifest_list,
)
from lakeops.spec.manifest_format import ManifestFormat
from lakeops.spec.schema import TableSchema
from lakeops.spec.snapshot import CommitKind, Snapshot
from lakeops.store import TableStore, fold_entries
from lakeops.write.resequence import Resequenced, resequence_files

__all__ = ["BATCH_COMMIT_IDENTIFIER", "Committer", "PlannedChange"]

log = logging.getLogger(__name__)

#: Paimon's commit identifier for batch jobs (Long.MAX_VALUE).
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


class Committer:
    """Commits to one table. ``commit_user`` identifies the writer in snapshots."""

    def __init__(
        self,
        store: TableStore,
        schema: TableSchema,
        options: TableOptions,
        commit_user: str | None = None,
    ) -> None:
        self.store = store
        self.schema = schema
        self.options = options
        self.commit_user = commit_user or str(uuid.uuid4())
        self.partition_types = schema.types_of(schema.partition_keys)
        #: manifests are written in the table's ``manifest.format`` and
        #: ``manifest.compression``, as Paimon does
        self.manifest_format = ManifestFormat.of(schema.options)

    # --------------------------------------------------------------- manifests
    def _write_manifest(self, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        name = paths.manifest_name()
        data = write_manifest(entries, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=sum(1 for e in entries if e.kind == FileKind.ADD),
            num_deleted_files=sum(1 for e in entries if e.kind == FileKind.DELETE),
            partition_stats=self._partition_stats(entries),
            schema_id=self.schema.id,
            min_bucket=min(e.bucket for e in entries),
            max_bucket=max(e.bucket for e in entries),
            min_level=min(e.file.level for e in entries),
            max_level=max(e.file.level for e in entries),
            total_buckets=entries[0].total_buckets,
        )

    def _partition_stats(self, entries: Sequence[ManifestEntry]) -> SimpleStats:
        from lakeops.spec import binary_row

        if not self.partition_types:
            return SimpleStats(binary_row.serialize([], []), binary_row.serialize([], []), ())
        values = [
            binary_row.deserialize(p, self.partition_types) for p in {e.partition for e in entries}
        ]
        mins, maxs, nulls = [], [], []
        for i in range(len(self.partition_types)):
            present = [v[i] for v in values if v[i] is not None]
            mins.append(min(present) if present else None)
            maxs.append(max(present) if present else None)
            nulls.append(sum(1 for v in values if v[i] is None))
        return SimpleStats(
            binary_row.serialize(mins, self.partition_types),
            binary_row.serialize(maxs, self.partition_types),
            tuple(nulls),
        )

    def _write_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = paths.manifest_list_name()
        data = write_manifest_list(metas, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
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

    # ------------------------------------------------------------------ commit
    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        on_compact_conflict: Callable[[CommitError], None] | None = None,
        overwrite: Callable[[bytes], bool] | None = None,
    ) -> Snapshot | None:
        """Publish the messages: an ``APPEND`` snapshot for new files (with their changelog),
        then a ``COMPACT`` snapshot for compaction changes (with the changelog compaction
        produced), as Paimon does. Returns the last snapshot, or None if there was nothing.

        If the compaction's inputs were replaced meanwhile, ``on_compact_conflict`` (when given)
        handles the conflict and the appended data stays committed; otherwise it raises.
        With ``overwrite`` (a predicate on serialized partitions), the commit is an
        ``OVERWRITE`` that first deletes every live file of the matching partitions."""

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

            def plan_overwrite(latest: Snapshot | None) -> PlannedChange:
                # computed on every attempt: files another writer added meanwhile go too
                replaced = [
                    ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                    for e in self.store.live_entries(latest)
                    if overwrite(e.partition)
                ]
                dropped = [  # the overwritten partitions' index files go too
                    IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.file)
                    for e in self.store.index_entries(latest)
                    if overwrite(e.partition)
                ]
                return PlannedChange(replaced + appends, append_changelog, dropped + index_changes)

            snapshot = self.commit_planned(plan_overwrite, "OVERWRITE", commit_identifier)
        elif appends or append_changelog or index_changes:
            planner = _AppendPlanner(self, messages, appends, append_changelog, index_changes)
            try:
                snapshot = self.commit_planned(planner.plan, "APPEND", commit_identifier)
            except CommitStateUnknownError:
                raise  # every file is kept: the snapshot may reference them
            except BaseException:
                planner.discard_rewrites()
                raise
            planner.published()
        if compacts or compact_changelog:
            try:
                snapshot = self.commit_entries(
                    compacts, "COMPACT", commit_identifier, compact_changelog
                )
            except CommitStateUnknownError:
                if snapshot is None:
                    raise
                # the data is committed; the compaction may be too, so its files stay
                log.warning("%s: in-writer compaction commit state unknown", self.store.root)
            except CommitError as conflict:
                if on_compact_conflict is None:
                    raise
                on_compact_conflict(conflict)
            except Exception as exc:
                if snapshot is None or on_compact_conflict is None:
                    raise
                # the data commit is published: a failing compaction commit (a full disk, a
                # lost store) drops the compaction only, never the committed data
                on_compact_conflict(CommitError(f"in-writer compaction not committed: {exc}"))
        return snapshot

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
        every attempt (a plan may raise :class:`CommitConflictError` to give up)."""
        fio = self.store.file_io
        fio.check_commit_ready()  # an unreachable lock fails before any manifest is written
        own: list[str] = []  # manifests written for the current plan
        current: PlannedChange | None = None

        def discard(names: Sequence[str]) -> None:
            for name in names:
                fio.delete(self.store.path(paths.manifest_path(name)))

        written: list[ManifestFileMeta] = []
        changelog_meta: ManifestFileMeta | None = None
        attempts = max(self.options.commit_max_retries, 1)
        for attempt in range(attempts + 1):
            latest = self.store.latest_snapshot()
            next_id = (latest.id + 1) if latest else 1
            lists: list[str] = []
            try:
                if attempt == 0:
                    self._check_schema()
                change = plan(latest)
                if change is not current:  # a new plan: its own manifests
                    discard(own)
                    own = []
                    current = change
                    written = [self._write_manifest(change.entries)] if change.entries else []
                    changelog_meta = (
                        self._write_manifest(change.changelog) if change.changelog else None
                    )
                    own = [m.file_name for m in written] + (
                        [changelog_meta.file_name] if changelog_meta else []
                    )
                entries, changelog = change.entries, change.changelog
                index_changes = change.index_changes
                self._check_deletes(latest, entries)
                base_metas = self._base_manifests(latest)
                base_name, base_size = self._write_list(base_metas)
                lists.append(base_name)
                index_name = latest.index_manifest if latest else None
                if index_changes:
                    index_name = self._write_index_manifest(latest, index_changes)
                    if index_name is not None:
                        lists.append(index_name)
            except FileNotFoundError:
                # the base's metadata vanished: expiry removed it after a newer snapshot came
                discard(lists)
                if self._base_is_stale(next_id):
                    continue
                discard(own)
                raise
            except BaseException:
                with contextlib.suppress(Exception):  # nothing is published: all of it goes
                    discard([*own, *lists])
                raise
            delta_name, delta_size = self._write_list(written)
            lists.append(delta_name)
            changelog_name = changelog_size = None
            if changelog_meta is not None:
                changelog_name, changelog_size = self._write_list([changelog_meta])
                lists.append(changelog_name)
            added = sum(e.file.row_count for e in entries if e.kind == FileKind.ADD)
            removed = sum(e.file.row_count for e in entries if e.kind == FileKind.DELETE)
            snapshot = Snapshot(
                id=next_id,
                schema_id=self.schema.id,
                base_manifest_list=base_name,
                delta_manifest_list=delta_name,
                commit_user=self.commit_user,
                commit_identifier=commit_identifier,
                commit_kind=commit_kind,
                time_millis=int(time.time() * 1000),
                total_record_count=(latest.total_record_count if latest else 0) + added - removed,
                delta_record_count=added - removed,
                base_manifest_list_size=base_size,
                delta_manifest_list_size=delta_size,
                changelog_manifest_list=changelog_name,
                changelog_manifest_list_size=changelog_size,
                changelog_record_count=sum(e.file.row_count for e in changelog)
                if changelog_meta is not None
                else None,
                index_manifest=index_name,
            )
            path = self.store.path(paths.snapshot_path(snapshot.id))
            # ids only grow: never publish a name an expired snapshot may have had
            try:
                won = not self._base_is_stale(snapshot.id) and self._publish(path, snapshot)
            except LockUnavailableError:
                # the lock was never taken (or lapsed before writing): nothing is published
                with contextlib.suppress(Exception):
                    discard([*own, *lists])
                raise
            if won:
                self._update_hints(snapshot.id)
                return snapshot
            discard(lists)
            if latest is not None:
                with contextlib.suppress(FileNotFoundError):  # else left for orphan cleaning
                    discard(
                        list(
                            {m.file_name for m in base_metas}
                            - {m.file_name for m in self.store.data_manifests(latest)}
                        )
                    )
            if attempt < attempts:
                time.sleep(min(1.0, 0.01 * 2**attempt) * (0.5 + random.random()))
        discard(own)
        raise CommitConflictError(
            f"could not publish a snapshot of {self.store.root} after {attempts + 1} attempts: "
            "other writers kept committing first; retry later or raise 'commit.max-retries'"
        )

    def _write_index_manifest(
        self, latest: Snapshot | None, changes: Sequence[IndexManifestEntry]
    ) -> str | None:
        """The new index manifest (None when no index file stays live)."""
        live = combine(self.store.index_entries(latest), changes)
        if not live:
            return None
        name = paths.index_manifest_name()
        data = write_index_manifest(live, self.manifest_format)
        self.store.file_io.write_bytes(self.store.path(paths.manifest_path(name)), data)
        return name

    def _base_is_stale(self, snapshot_id: int) -> bool:
        """Whether a snapshot newer than this commit's base exists or existed: then the id
        ``snapshot_id`` may have been used (and expired) already, so the commit must re-plan on
        the new latest snapshot instead of publishing it."""
        # a newer snapshot that still exists makes the exclusive publish of ``snapshot_id`` fail
        # anyway; one that was expired shows in EARLIEST, which expiry moves before it deletes
        earliest = self.store._hint(paths.EARLIEST_HINT)
        return earliest is not None and earliest >= snapshot_id

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

    def _check_deletes(self, latest: Snapshot | None, entries: Sequence[ManifestEntry]) -> None:
        deletes = [e for e in entries if e.kind == FileKind.DELETE]
        if not deletes:
            return
        live = fold_entries(self.store.live_entries(latest))
        gone = [e.file.file_name for e in deletes if e.identifier not in live]
        if gone:
            raise CommitConflictError(
                f"files {gone[:3]} this commit replaces are no longer live (another job "
                "compacted or overwrote them); re-plan and retry"
            )

    def _update_hints(self, snapshot_id: int) -> None:
        """Best effort: readers never trust hints blindly, so a failure here is harmless."""
        with contextlib.suppress(OSError):
            self._write_hints(snapshot_id)

    def _write_hints(self, snapshot_id: int) -> None:
        fio = self.store.file_io
        fio.overwrite_atomic(self.store.path(paths.LATEST_HINT), str(snapshot_id).encode())
        if snapshot_id == 1:
            fio.overwrite_atomic(self.store.path(paths.EARLIEST_HINT), b"1")


@dataclass(frozen=True)
class PlannedChange:
    """What one commit attempt publishes."""

    entries: Sequence[ManifestEntry]
    changelog: Sequence[ManifestEntry] = ()
    index_changes: Sequence[IndexManifestEntry] = ()


Bucket = tuple[bytes, int]


class _AppendPlanner:
    """Plans an ``APPEND`` on each attempt's latest snapshot, against what other commits did
    since the writers' base snapshots (:mod:`lakeops.commit.since_base`):

    * a dynamic-bucket write whose partitions' key index another commit changed, or a
      cross-partition write after another data commit, is refused with
      :class:`StaleWriteError` (its bucket assignments may no longer hold);
    * new files of a bucket that another commit added files to are re-sequenced above them
      (:mod:`lakeops.write.resequence`), so commit order is sequence order in every bucket.
    """

    def __init__(
        self,
        committer: Committer,
        messages: Sequence[CommitMessage],
        appends: list[ManifestEntry],
        changelog: list[ManifestEntry],
        index_changes: list[IndexManifestEntry],
    ) -> None:
        self.committer = committer
        self.store = committer.store
        self.messages = [m for m in messages if m.new_files or m.new_index_files]
        self.appends = appends
        self.current = PlannedChange(appends, changelog, index_changes)
        self.original = self.current
        self.offsets: dict[Bucket, int] = {}
        self.rewrites: dict[Bucket, Resequenced] = {}
        options = committer.options
        self.dynamic = options.bucket == -1
        self.cross_partition = self.dynamic and committer.schema.cross_partition_update

    # ------------------------------------------------------------------ planning
    def plan(self, latest: Snapshot | None) -> PlannedChange:
        self._check_assignments(latest)
        offsets = self._offsets(latest)
        if offsets == self.offsets:
            return self.current
        self.discard_rewrites()
        self.offsets = offsets
        replaced: dict[tuple[Bucket, str], DataFileMeta] = {}
        for bucket, offset in sorted(offsets.items()):
            files = [f for f in self._new_files(bucket)]
            rewrite = resequence_files(
                self.store, self.committer.schema, bucket[0], bucket[1], files, offset
            )
            self.rewrites[bucket] = rewrite
            if len(rewrite.files) != len(files):
                raise CommitError("re-sequencing did not rewrite every file one for one")
            for old, new in zip(files, rewrite.files, strict=True):
                replaced[(bucket, old.file_name)] = new
        entries = [
            ManifestEntry(
                e.kind,
                e.partition,
                e.bucket,
                e.total_buckets,
                replaced.get(((e.partition, e.bucket), e.file.file_name), e.file),
            )
            for e in self.appends
        ]
        self.current = PlannedChange(entries, self.original.changelog, self.original.index_changes)
        if offsets:
            log.info(
                "%s: re-sequenced new files of %d bucket(s) above concurrent commits",
                self.store.root,
                len(offsets),
            )
        return self.current

    def _new_files(self, bucket: Bucket) -> list[DataFileMeta]:
        return [f for m in self.messages if (m.partition, m.bucket) == bucket for f in m.new_files]

    def _offsets(self, latest: Snapshot | None) -> dict[Bucket, int]:
        """How far each bucket's new files must move up (only buckets that must move)."""
        by_base: dict[int | None, set[Bucket]] = {}
        for m in self.messages:
            if m.new_files and not (latest is not None and m.base_snapshot_id == latest.id):
                by_base.setdefault(m.base_snapshot_id, set()).add((m.partition, m.bucket))
        ceilings: dict[Bucket, int] = {}
        for base, buckets in by_base.items():
            found = sequence_ceilings(self.store, base, latest, buckets)
            for bucket, ceiling in found.items():
                ceilings[bucket] = max(ceilings.get(bucket, -1), ceiling)
        out: dict[Bucket, int] = {}
        for bucket, ceiling in ceilings.items():
            lowest = min(f.min_sequence_number for f in self._new_files(bucket))
            if ceiling >= lowest:
                out[bucket] = ceiling + 1 - lowest
        return out

    def _check_assignments(self, latest: Snapshot | None) -> None:
        """Refuse a write whose key placement other commits may have contradicted."""
        if not self.dynamic or latest is None:
            return
        for base in {m.base_snapshot_id for m in self.messages}:
            if base is not None and base == latest.id:
                continue
            mine = [m for m in self.messages if m.base_snapshot_id == base]
            if self.cross_partition:
                changed = None if base is None else data_committed(self.store, base, latest)
                if changed is not False:
                    raise StaleWriteError(
                        f"another commit wrote to {self.store.root} (a cross-partition-update "
                        "table) after this write read its key locations, so its rows might "
                        "duplicate or lose keys; nothing was committed — run the write again "
                        "(these tables take one writer at a time)"
                    )
                continue
            partitions = {m.partition for m in mine if m.new_index_files}
            if not partitions:
                continue  # every key was known at the base: its bucket still holds
            touched = None
            if base is not None:
                base_index = None
                readable = True
                if base > 0:
                    try:
                        base_index = self.store.snapshot(base).index_manifest
                    except Exception:
                        readable = False  # expired: cannot tell
                if readable:
                    touched = index_changed(self.store, base_index, latest, partitions)
            if touched is None or touched:
                raise StaleWriteError(
                    f"another commit changed the key index of {self.store.root} (a "
                    "dynamic-bucket table) in a partition this write adds keys to, after this "
                    "write read it, so its bucket assignments might duplicate keys; nothing was "
                    "committed — run the write again"
                )

    # ------------------------------------------------------------------ files
    def discard_rewrites(self) -> None:
        """Delete every re-sequenced copy (the plan they belong to is not published)."""
        for rewrite in self.rewrites.values():
            for path in rewrite.paths:
                with contextlib.suppress(Exception):
                    self.store.file_io.delete(path)
        self.rewrites = {}
        self.offsets = {}
        self.current = self.original

    def published(self) -> None:
        """After the publish: the originals of re-sequenced files are referenced by nothing."""
        if not self.rewrites:
            return
        schema = self.committer.schema
        locations = FileLocations.of(self.store.file_io, self.store.root, schema)
        for partition, bucket in self.rewrites:
            for f in self._new_files((partition, bucket)):
                with contextlib.suppress(Exception):  # else left for orphan cleaning
                    self.store.file_io.delete(
                        locations.entry_path(partition, bucket, f.file_name, f.external_path)
                    )
