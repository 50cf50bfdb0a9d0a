"""Tags: named snapshots, in Paimon's layout, that keep what they reference alive.

A tag is the file ``tag/tag-<name>`` of the table: the JSON of the snapshot it names, exactly as
the snapshot file holds it, plus — only when the tag has a retention — Paimon's two tag fields
(``TagManager.createTag`` / ``Tag`` of Paimon 0.9, pypaimon's ``TagManager``):

* ``tagCreateTime``: a ``LocalDateTime`` as Jackson writes it, ``[year, month, day, hour,
  minute(, second(, nanoOfSecond))]`` (trailing zeros dropped), in the writer's local time;
* ``tagTimeRetained``: a ``Duration`` as decimal seconds.

A tag without a retention carries neither field (older Paimon readers refuse them), so its file
is the snapshot's JSON. Every manifest, data, changelog and index file of a tagged snapshot stays
alive through snapshot expiry and orphan cleanup (:mod:`lakeops.commit.keep_alive`), and a tag
outlives its snapshot: time travel and rollback to it work after the snapshot expired.

lakeops never moves a tag (creating a tag that exists for another snapshot is refused) and,
unlike Paimon's ``deleteTag``, deleting a tag deletes only the tag file: the files only it kept
alive are left for :func:`~lakeops.commit.orphan.remove_orphan_files`, which is safe against
every concurrent reader and writer.

``tag.num-retained-max`` only bounds tags created automatically (Paimon's documentation: "It
only affects auto-created tags"): lakeops creates them after its commits when
``tag.automatic-creation`` is ``process-time`` (:mod:`lakeops.commit.auto_tags`) and deletes the
oldest of them beyond the maximum; a tag is an automatic one when its name parses as the
table's tag period, as in Paimon, so tags named otherwise are never deleted for it.
``tag.default-time-retained`` is written into tags created without an explicit retention (and
into automatic tags), as Paimon does; lakeops does not expire tags by it (a kept tag only keeps
files alive).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from lakeops.errors import (
    ConfigurationError,
    CorruptMetadataError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from lakeops.spec import paths
from lakeops.spec.ref_names import check_ref_name
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = [
    "TAG_DIR",
    "TAG_PREFIX",
    "Tag",
    "check_tag_name",
    "create_tag",
    "delete_tag",
    "find_tag",
    "get_tag",
    "list_tags",
    "tagged_snapshot",
]

TAG_DIR = "tag"
TAG_PREFIX = "tag-"
_CREATE_TIME = "tagCreateTime"
_TIME_RETAINED = "tagTimeRetained"


@dataclass(frozen=True)
class Tag:
    """One tag: its ``name``, the ``snapshot`` it names (which may have expired since), and —
    for tags created with a retention — ``create_time`` (naive, the creator's local time, as
    Paimon's ``LocalDateTime``) and ``time_retained``."""

    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None
    time_retained: dt.timedelta | None = None


def check_tag_name(name: object) -> str:
    """``name`` if lakeops may create a tag of that name, else a :class:`ConfigurationError`.

    Paimon refuses blank names only. lakeops also refuses what would not round-trip or would be
    ambiguous: a name of digits only (Paimon's ``scan.version`` and Spark's ``VERSION AS OF``
    read ``5`` as tag ``5`` when it exists, else as snapshot 5), path separators and control
    characters (the name is a file name), a leading ``.`` (hidden files) and a ``.tmp`` suffix
    (temporary files, which Paimon and lakeops skip when listing tags)."""
    if not isinstance(name, str):
        raise ConfigurationError(f"tag name must be a string, not {type(name).__name__}")
    if not name.strip():
        raise ConfigurationError(f"tag name {name!r} is blank; name the tag, e.g. 'v1'")
    check_ref_name("tag", name)
    problem = None
    if name.isdigit():
        problem = (
            "is only digits, which Paimon's scan.version and Spark's VERSION AS OF would "
            "confuse with a snapshot id"
        )
    elif any(c in name for c in "/\\") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "holds a path separator or a control character"
    elif name.startswith("."):
        problem = "starts with '.' (hidden files are not listed as tags)"
    elif name.endswith(".tmp"):
        problem = "ends with '.tmp' (temporary files are not listed as tags)"
    if problem:
        raise ConfigurationError(f"tag name {name!r} {problem}; choose another name")
    return name


def _relative(name: str) -> str:
    return f"{TAG_DIR}/{TAG_PREFIX}{name}"


def _decode(name: str, data: bytes, relative: str) -> Tag:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    snapshot = Snapshot.from_json(data, relative)
    created = doc.get(_CREATE_TIME)
    retained = doc.get(_TIME_RETAINED)
    return Tag(
        name,
        snapshot,
        _local_datetime(created) if created is not None else None,
        dt.timedelta(seconds=float(retained)) if retained is not None else None,
    )


def _local_datetime(value: Any) -> dt.datetime:
    """Jackson's ``LocalDateTime`` (an array; ISO text is accepted too)."""
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    parts = [int(v) for v in value] + [0] * (7 - len(value))
    year, month, day, hour, minute, second, nano = parts[:7]
    return dt.datetime(year, month, day, hour, minute, second, nano // 1000)


def _local_datetime_json(value: dt.datetime) -> list[int]:
    nano = value.microsecond * 1000
    out = [value.year, value.month, value.day, value.hour, value.minute]
    if value.second or nano:
        out.append(value.second)
        if nano:
            out.append(nano)
    return out


def find_tag(store: TableStore, name: str) -> Tag | None:
    """The tag ``name`` of the table, or None if there is none (a name that cannot be a tag's
    file name is a :class:`ConfigurationError`, before any storage call)."""
    return _load(store, check_ref_name("tag", name))


def _load(store: TableStore, name: str) -> Tag | None:
    """The tag ``name`` (a name read from the tag directory), or None if it is gone."""
    relative = _relative(name)
    try:
        return store.load(relative, "tag", lambda data: _decode(name, data, relative))
    except FileNotFoundError:  # MissingMetadataError is one
        return None


def get_tag(store: TableStore, name: str) -> Tag:
    """The tag ``name``; a :class:`TagNotFoundError` naming the tags there are if missing."""
    tag = find_tag(store, name)
    if tag is None:
        names = [t.name for t in list_tags(store)]
        raise TagNotFoundError(
            f"tag {name!r} does not exist in table {store.root} (tags: {names or 'none'})",
            tag=name,
        )
    return tag


def list_tags(store: TableStore) -> list[Tag]:
    """Every tag of the table (main branch), by snapshot id, then name."""
    out = []
    for entry in store.file_io.list_names(store.path(TAG_DIR)):
        if not entry.startswith(TAG_PREFIX) or entry.endswith(".tmp") or entry.startswith("."):
            continue
        tag = _load(store, entry[len(TAG_PREFIX) :])
        if tag is not None:  # (deleted meanwhile)
            out.append(tag)
    return sorted(out, key=lambda t: (t.snapshot.id, t.name))


def tagged_snapshot(store: TableStore, snapshot_id: int) -> Tag | None:
    """A tag of snapshot ``snapshot_id`` (the first by name), or None."""
    return next((t for t in list_tags(store) if t.snapshot.id == snapshot_id), None)


def _source_json(store: TableStore, snapshot_id: int | None) -> tuple[dict[str, Any], bool]:
    """The JSON of the snapshot to tag (the latest by default), and whether it came from a
    retained snapshot file (not from another tag of an expired snapshot)."""
    if snapshot_id is None:
        snapshot_id = store.latest_snapshot_id()
        if snapshot_id is None:
            raise SnapshotNotFoundError(
                f"cannot create a tag: table {store.root} has no snapshot yet"
            )
    relative = paths.snapshot_path(snapshot_id)
    if store.snapshot_exists(snapshot_id):
        try:
            data = store.load(relative, "snapshot", bytes)
            Snapshot.from_json(data, relative)
            return _object(json.loads(data), relative), True
        except FileNotFoundError:
            pass  # expired meanwhile: a tag of it may still hold it
    held = tagged_snapshot(store, snapshot_id)
    if held is None:
        ids = store.snapshot_ids()
        raise SnapshotNotFoundError(
            f"cannot create a tag of snapshot {snapshot_id}: it does not exist and no tag "
            f"holds it (snapshots {ids[0] if ids else None}..{ids[-1] if ids else None})",
            snapshot_id=snapshot_id,
        )
    relative = _relative(held.name)
    doc = _object(json.loads(store.load(relative, "tag", bytes)), relative)
    doc.pop(_CREATE_TIME, None)
    doc.pop(_TIME_RETAINED, None)
    return doc, False


def _object(doc: Any, relative: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise CorruptMetadataError(f"{relative} is not a JSON object", path=relative)
    return doc


def create_tag(
    store: TableStore,
    name: str,
    snapshot_id: int | None = None,
    *,
    time_retained: dt.timedelta | None = None,
    now: dt.datetime | None = None,
    check_name: bool = True,
) -> Tag:
    """Tag snapshot ``snapshot_id`` (the latest by default; an expired one that another tag
    holds too, as Paimon's ``findSnapshot``) as ``name`` and return the tag.

    The tag file is created exclusively (two creators cannot both win). A tag of that name for
    the same snapshot is returned as it is (a retried call succeeds); one for another snapshot
    is a :class:`TagAlreadyExistsError`. If the snapshot expires while the tag is being
    created, the tag is removed again and :class:`SnapshotNotFoundError` raised: expiry deletes
    a snapshot's files only after its snapshot file, and looks for new tags in between, so a
    tag whose snapshot was still there after it was published protects it.

    ``check_name=False`` skips :func:`check_tag_name`, for the names Paimon's automatic tag
    creation gives (``20240131`` is digits only; see :mod:`lakeops.commit.auto_tags`)."""
    if check_name:
        check_tag_name(name)
    if time_retained is not None and time_retained <= dt.timedelta(0):
        raise ConfigurationError(f"time_retained must be positive, not {time_retained}")
    doc, from_snapshot_file = _source_json(store, snapshot_id)
    sid = int(doc["id"])
    if time_retained is not None:
        created = now if now is not None else dt.datetime.now()
        doc[_CREATE_TIME] = _local_datetime_json(created)
        doc[_TIME_RETAINED] = time_retained.total_seconds()
    path = store.path(_relative(name))
    if not store.file_io.publish_exclusive(path, json.dumps(doc, indent=2).encode()):
        existing = get_tag(store, name)
        if existing.snapshot.id != sid:
            raise TagAlreadyExistsError(
                f"tag {name!r} already exists for snapshot {existing.snapshot.id} of table "
                f"{store.root}; delete it first to tag snapshot {sid}"
            )
        return existing
    if from_snapshot_file and not store.snapshot_exists(sid):
        store.file_io.delete(path)
        raise SnapshotNotFoundError(
            f"snapshot {sid} expired while tag {name!r} was being created; nothing was tagged",
            snapshot_id=sid,
        )
    return get_tag(store, name)


def delete_tag(store: TableStore, name: str) -> Tag:
    """Delete the tag ``name`` (a :class:`TagNotFoundError` if there is none) and return what
    it was. Only the tag file goes; what only it kept alive is removed by the next
    ``remove_orphan_files`` (and never by expiry, which only deletes what expired snapshots'
    commits deleted)."""
    tag = get_tag(store, name)
    store.file_io.delete(store.path(_relative(name)))
    return tag
