"""Planning an ``APPEND`` commit against concurrent commits: refuse stale key placements and
re-sequence new files above files other commits added to the same buckets (see
:class:`AppendPlanner`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from lakeops.commit.since_base import (
    data_committed,
    index_changed,
    replaced_since,
    sequence_ceilings,
)
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.errors import CommitError, StaleWriteError
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import DataFileMeta
from lakeops.format.manifest import ManifestEntry
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.options import TableOptions
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations
from lakeops.write.resequence import Resequenced, resequence_files

__all__ = ["AppendPlanner"]

log = logging.getLogger(__name__)

Bucket = tuple[bytes, int]


class AppendPlanner:
    """Plans an ``APPEND`` on each attempt's latest snapshot, against what other commits did
    since the writers' base snapshots (:mod:`lakeops.commit.since_base`):

    * a dynamic-bucket write whose partitions' key index another commit changed (where it adds
      keys; where it only updates keys, after an ``OVERWRITE`` — a rollback — changed it), or
      a cross-partition write after another data commit, is refused with
      :class:`StaleWriteError` (its bucket assignments may no longer hold);
    * new files of a bucket that another commit added files to are re-sequenced above them
      (:mod:`lakeops.write.resequence`), so commit order is sequence order in every bucket.
    """

    def __init__(
        self,
        store: TableStore,
        schema: TableSchema,
        options: TableOptions,
        messages: Sequence[CommitMessage],
        change: PlannedChange,
    ) -> None:
        self.store = store
        self.schema = schema
        self.messages = [m for m in messages if m.new_files or m.new_index_files]
        self.appends = change.entries
        self.current = change
        self.original = change
        self.offsets: dict[Bucket, int] = {}
        self.rewrites: dict[Bucket, Resequenced] = {}
        self.dynamic = options.bucket == -1
        self.cross_partition = self.dynamic and schema.cross_partition_update

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
            rewrite = resequence_files(self.store, self.schema, bucket[0], bucket[1], files, offset)
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
            if m.bucket == POSTPONE_BUCKET:
                continue  # numbered per writer from 0; the postpone move replays them in order
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
            known = {m.partition for m in mine if m.new_files} - partitions
            if known and replaced_since(self.store, base, latest) is not False:
                # every key of these was in the base's index, and only an OVERWRITE (a rollback,
                # a partition overwrite) takes keys out of it: then other writers may have
                # placed them in other buckets, so their index must be unchanged too
                partitions |= known
            if not partitions:
                continue  # every key was known at the base and is still: its bucket holds
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
                    "dynamic-bucket table) in a partition this write writes to, after this "
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
        schema = self.schema
        locations = FileLocations.of(self.store.file_io, self.store.root, schema)
        for partition, bucket in self.rewrites:
            for f in self._new_files((partition, bucket)):
                with contextlib.suppress(Exception):  # else left for orphan cleaning
                    self.store.file_io.delete(
                        locations.entry_path(partition, bucket, f.file_name, f.external_path)
                    )
