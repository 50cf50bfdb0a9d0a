"""Creating and deleting tags (the tag files of :mod:`lakeops.store.tags`).

lakeops never moves a tag (creating a tag that exists for another snapshot is refused) and,
unlike Paimon's ``deleteTag``, deleting a tag deletes only the tag file: the files only it kept
alive are left for :func:`~lakeops.maintenance.orphan.remove_orphan_files`, which is safe against
every concurrent reader and writer.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from lakeops.errors import (
    ConfigurationError,
    CorruptMetadataError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
)
from lakeops.format import paths
from lakeops.format.ref_names import check_ref_name
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore
from lakeops.store.tags import (
    CREATE_TIME,
    TIME_RETAINED,
    Tag,
    get_tag,
    local_datetime_json,
    tag_path,
    tagged_snapshot,
)

__all__ = ["check_tag_name", "create_tag", "delete_tag"]


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
    relative = tag_path(held.name)
    doc = _object(json.loads(store.load(relative, "tag", bytes)), relative)
    doc.pop(CREATE_TIME, None)
    doc.pop(TIME_RETAINED, None)
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
    creation gives (``20240131`` is digits only; see :mod:`lakeops.maintenance.auto_tags`)."""
    if check_name:
        check_tag_name(name)
    if time_retained is not None and time_retained <= dt.timedelta(0):
        raise ConfigurationError(f"time_retained must be positive, not {time_retained}")
    doc, from_snapshot_file = _source_json(store, snapshot_id)
    sid = int(doc["id"])
    if time_retained is not None:
        created = now if now is not None else dt.datetime.now()
        doc[CREATE_TIME] = local_datetime_json(created)
        doc[TIME_RETAINED] = time_retained.total_seconds()
    path = store.path(tag_path(name))
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
    store.file_io.delete(store.path(tag_path(name)))
    return tag
