"""What Paimon keeps alive besides the retained snapshots: tags, branches and consumers.

Paimon's layout (its spec and ``TagManager`` / ``BranchManager`` / ``ConsumerManager``):

* ``tag/tag-<name>`` — a copy of a snapshot's JSON (plus the tag's creation time); every
  manifest, data, changelog and index file that snapshot references stays alive;
* ``branch/branch-<name>/`` — a branch's own ``schema/``, ``snapshot/`` and ``tag/`` (its
  manifests and data files live in the table's ``manifest/`` and bucket directories, shared with
  the main branch); every file its snapshots and tags reference stays alive;
* ``consumer/consumer-<id>`` — ``{"nextSnapshot": N}``: a streaming reader that will read
  snapshot N next; snapshots from N on are not expired while the consumer lives
  (``consumer.expiration-time``: a consumer not updated for that long no longer counts).

Maintenance never deletes anything under ``tag/``, ``branch/`` or ``consumer/``.
"""

from __future__ import annotations

import json
import time

from lakeops.errors import CorruptMetadataError, CorruptTableError
from lakeops.format.snapshot import Snapshot
from lakeops.io.file_io import join
from lakeops.store import MAX_JSON_METADATA_BYTES, TableStore

__all__ = ["KEPT_DIRS", "consumer_floor", "protected_snapshots"]

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


def protected_snapshots(store: TableStore) -> list[Snapshot]:
    """Every snapshot a tag or a branch keeps alive: the main branch's tags, and each branch's
    snapshots and tags."""
    root = store.root
    kept = _snapshots(store, join(root, "tag"), "tag-")
    for name in store.file_io.list_names(join(root, "branch")):
        if not name.startswith("branch-"):
            continue
        branch = join(root, "branch", name)
        kept += _snapshots(store, join(branch, "snapshot"), "snapshot-")
        kept += _snapshots(store, join(branch, "tag"), "tag-")
    return kept


def consumer_floor(
    store: TableStore, expiration_ms: int | None, now_ms: int | None = None
) -> int | None:
    """The smallest snapshot a live consumer reads next (None: no live consumer). A consumer
    whose file is older than ``expiration_ms`` (``consumer.expiration-time``) is not live."""
    now = time.time() * 1000 if now_ms is None else now_ms
    floor: int | None = None
    fio = store.file_io
    for path, data in _json_files(store, join(store.root, "consumer"), "consumer-"):
        if expiration_ms is not None:
            try:
                modified = fio.modified_ms(path)
            except OSError:
                continue
            if modified < now - expiration_ms:
                continue
        try:
            next_snapshot = int(json.loads(data)["nextSnapshot"])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise CorruptMetadataError(
                f"{path} cannot be read as a Paimon consumer ({exc}); expiry stops rather than "
                "expire snapshots a streaming reader may still need"
            ) from None
        floor = next_snapshot if floor is None else min(floor, next_snapshot)
    return floor
