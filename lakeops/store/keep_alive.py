"""What Paimon keeps alive besides the retained snapshots: tags, branches and consumers.

Paimon's layout (its spec and ``TagManager`` / ``BranchManager`` / ``ConsumerManager``):

* ``tag/tag-<name>`` — a copy of a snapshot's JSON (plus the tag's creation time); its data
  stays alive: the base and delta manifest lists, their manifests, data and index files. Its
  changelog does not: Paimon's expiry deletes a tagged snapshot's changelog with the snapshot
  (its skipping set holds only the data manifests);
* ``branch/branch-<name>/`` — a branch's own ``schema/``, ``snapshot/`` and ``tag/`` (its
  manifests and data files live in the table's ``manifest/`` and bucket directories, shared with
  the main branch); every file its snapshots reference stays alive (a changelog list the main
  branch's expiry by Paimon deleted under a snapshot the branch copied is skipped), and its
  tags' data as above;
* ``consumer/consumer-<id>`` — ``{"nextSnapshot": N}``: a streaming reader that will read
  snapshot N next; snapshots from N on are not expired while the consumer lives
  (``consumer.expiration-time``: a consumer not updated for that long no longer counts, and
  snapshot expiry deletes it first, as Paimon's ``ConsumerManager.expire``;
  :mod:`lakeops.store.consumers`).

Orphan cleanup never deletes anything under ``tag/``, ``branch/`` or ``consumer/``; snapshot
expiry deletes only expired consumers there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from lakeops.errors import CorruptMetadataError, CorruptTableError
from lakeops.format import paths
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import join
from lakeops.store import MAX_JSON_METADATA_BYTES, TableStore
from lakeops.store.consumers import list_consumers

__all__ = ["KEPT_DIRS", "KeptAlive", "consumer_floor", "kept_alive", "protected_snapshots"]

#: top-level directories of a table that maintenance never deletes from
KEPT_DIRS = ("tag", "branch", "consumer")


def _json_files(store: TableStore, directory: str, prefix: str) -> list[tuple[str, bytes]]:
    fio = store.file_io
    out = []
    for name in sorted(fio.list_names(directory)):
        if name.startswith(prefix) and not name.endswith(".tmp") and not name.startswith("."):
            path = join(directory, name)
            try:
                data = fio.read_bytes(path, MAX_JSON_METADATA_BYTES)
            except FileNotFoundError:
                continue  # removed meanwhile (a tag deleted by Paimon)
            if len(data) > MAX_JSON_METADATA_BYTES:
                raise CorruptMetadataError(
                    f"{path} is larger than {MAX_JSON_METADATA_BYTES >> 20} MiB, far beyond "
                    "any file Paimon writes; maintenance keeps every file while it cannot tell "
                    "what it protects — repair or remove it with Paimon",
                    path=path[len(store.root) :].lstrip("/"),
                )
            out.append((path, data))
    return out


def _snapshots(store: TableStore, directory: str, prefix: str) -> list[Snapshot]:
    out = []
    for path, data in _json_files(store, directory, prefix):
        try:
            relative = path[len(store.root) :].lstrip("/") if path.startswith(store.root) else path
            out.append(Snapshot.from_json(data, relative))
        except CorruptTableError as exc:
            raise CorruptMetadataError(
                f"{path} cannot be read as a snapshot ({exc}); maintenance keeps every file "
                "while it cannot tell what this tag or branch references — repair or remove it "
                "with Paimon"
            ) from None
    return out


@dataclass(frozen=True)
class KeptAlive:
    """The snapshots tags and branches keep alive: ``tags`` (the main branch's and every
    branch's), whose data stays, and the branches' own snapshots, all of whose files stay."""

    tags: list[Snapshot]
    branches: list[Snapshot]

    @property
    def snapshots(self) -> list[Snapshot]:
        return [*self.tags, *self.branches]

    def manifest_lists(self, store: TableStore) -> set[str]:
        """The manifest lists they keep: every snapshot's base and delta lists, and each branch
        snapshot's changelog list where it still exists (one probe each)."""
        lists = {n for s in self.snapshots for n in (s.base_manifest_list, s.delta_manifest_list)}
        for s in self.branches:
            name = s.changelog_manifest_list
            if name and store.file_io.exists(store.path(paths.manifest_path(name))):
                lists.add(name)
        return lists

    def where(self, keep: Callable[[Snapshot], bool]) -> KeptAlive:
        """Only the snapshots ``keep`` admits."""
        return KeptAlive([s for s in self.tags if keep(s)], [s for s in self.branches if keep(s)])


def kept_alive(store: TableStore) -> KeptAlive:
    """Every snapshot a tag or a branch keeps alive: the main branch's tags, and each branch's
    snapshots and tags."""
    root = store.root
    tags = _snapshots(store, join(root, "tag"), "tag-")
    branches: list[Snapshot] = []
    for name in store.file_io.list_names(join(root, "branch")):
        if not name.startswith("branch-"):
            continue
        branch = join(root, "branch", name)
        branches += _snapshots(store, join(branch, "snapshot"), "snapshot-")
        tags += _snapshots(store, join(branch, "tag"), "tag-")
    return KeptAlive(tags, branches)


def protected_snapshots(store: TableStore) -> list[Snapshot]:
    """Every snapshot a tag or a branch keeps alive (:func:`kept_alive`), tags first."""
    return kept_alive(store).snapshots


def consumer_floor(
    store: TableStore, expiration_ms: int | None, now_ms: int | None = None
) -> int | None:
    """The smallest snapshot a live consumer reads next (None: no live consumer). A consumer
    whose file was last modified more than ``expiration_ms`` (``consumer.expiration-time``)
    before ``now_ms`` is not live. A malformed consumer stops expiry (a
    :class:`~lakeops.errors.CorruptMetadataError`) rather than expire snapshots a streaming
    reader may still need."""
    now = time.time() * 1000 if now_ms is None else now_ms
    since = None if expiration_ms is None else now - expiration_ms
    return min(list_consumers(store, modified_since_ms=since).values(), default=None)
