"""Creating, renaming, replacing, expiring and deleting tags (the tag files of
:mod:`lakeops.store.tags`), with the semantics of Paimon's ``TagManager`` and tag procedures.

Creating a tag never moves one (a name that exists for another snapshot is refused); only
:func:`replace_tag` points an existing tag at another snapshot. Unlike Paimon's ``deleteTag``,
deleting or expiring a tag deletes only the tag file: the files only it kept alive are left for
:func:`~lakeops.maintenance.orphan.remove_orphan_files`, which is safe against every concurrent
reader and writer.
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
    list_tags,
    local_datetime_json,
    tag_path,
    tagged_snapshot,
)
from lakeops.store.time_travel import AsOf, as_of_millis

__all__ = [
    "check_tag_name",
    "create_tag",
    "delete_tag",
    "expire_tags",
    "rename_tag",
    "replace_tag",
    "snapshot_from_time",
]


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
                f"cannot tag a snapshot: table {store.root} has no snapshot yet"
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
            f"cannot tag snapshot {snapshot_id}: it does not exist and no tag "
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


def _tag_document(
    store: TableStore,
    snapshot_id: int | None,
    time_retained: dt.timedelta | None,
    now: dt.datetime | None,
) -> tuple[bytes, int, bool]:
    """The tag file's content for snapshot ``snapshot_id`` (the latest by default), the
    snapshot's id, and whether it came from a retained snapshot file. Paimon's two tag fields
    are written only with a retention (older Paimon readers refuse them)."""
    if time_retained is not None and time_retained <= dt.timedelta(0):
        raise ConfigurationError(f"time_retained must be positive, not {time_retained}")
    doc, from_snapshot_file = _source_json(store, snapshot_id)
    if time_retained is not None:
        created = now if now is not None else dt.datetime.now()
        doc[CREATE_TIME] = local_datetime_json(created)
        doc[TIME_RETAINED] = time_retained.total_seconds()
    return json.dumps(doc, indent=2).encode(), int(doc["id"]), from_snapshot_file


def _later_or_equal(store: TableStore, millis: int) -> Snapshot | None:
    """The earliest retained snapshot committed at or after ``millis`` (Paimon's
    ``SnapshotManager.laterOrEqualTimeMills``: None when the latest is older), by binary
    search: snapshot times grow with the id."""
    earliest, latest = store.earliest_snapshot_id(), store.latest_snapshot_id()
    if earliest is None or latest is None or store.snapshot(latest).time_millis < millis:
        return None
    found: Snapshot | None = None
    lo, hi = earliest, latest
    while lo <= hi:
        mid = (lo + hi) // 2
        try:
            snapshot = store.snapshot(mid)
        except SnapshotNotFoundError:  # expired meanwhile: the answer is newer
            lo = mid + 1
            continue
        if snapshot.time_millis >= millis:
            found, hi = snapshot, mid - 1
        else:
            lo = mid + 1
    return found


def snapshot_from_time(store: TableStore, as_of: AsOf) -> Snapshot:
    """The snapshot Paimon's ``create_tag_from_timestamp`` procedure
    (``CreateTagFromTimestampProcedure``) tags for time ``as_of`` (a datetime, naive = local
    time, or epoch milliseconds): the earliest retained snapshot committed at or after it
    (``SnapshotManager.laterOrEqualTimeMills``; of several committed in the same millisecond,
    the first) — unless the first tagged snapshot (by id) committed at or after it is older,
    as a tag of an expired snapshot can be. A :class:`SnapshotNotFoundError` when no snapshot
    or tag was committed at or after ``as_of``."""
    millis = as_of_millis(as_of)
    found = _later_or_equal(store, millis)
    tagged = sorted({t.snapshot.id: t.snapshot for t in list_tags(store)}.items())
    for _, snapshot in tagged:
        if millis <= snapshot.time_millis:
            if found is None or snapshot.time_millis < found.time_millis:
                found = snapshot
            break
    if found is None:
        when = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
        raise SnapshotNotFoundError(
            f"table {store.root} has no snapshot or tag committed at or after {millis} "
            f"({when:%Y-%m-%d %H:%M:%S.%f} UTC); nothing to tag",
            snapshot_id=None,
        )
    return found


def create_tag(
    store: TableStore,
    name: str,
    snapshot_id: int | None = None,
    *,
    as_of: AsOf | None = None,
    time_retained: dt.timedelta | None = None,
    now: dt.datetime | None = None,
    check_name: bool = True,
) -> Tag:
    """Tag snapshot ``snapshot_id`` (the latest by default; an expired one that another tag
    holds too, as Paimon's ``findSnapshot``) as ``name`` and return the tag. With ``as_of``
    (not together with ``snapshot_id``), the snapshot of that time as Paimon's
    ``create_tag_from_timestamp`` picks it (:func:`snapshot_from_time`).

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
    if as_of is not None:
        if snapshot_id is not None:
            raise ConfigurationError(
                f"create_tag takes a snapshot_id or an as_of time, not both "
                f"(snapshot_id={snapshot_id}, as_of={as_of!r})"
            )
        snapshot_id = snapshot_from_time(store, as_of).id
    data, sid, from_snapshot_file = _tag_document(store, snapshot_id, time_retained, now)
    path = store.path(tag_path(name))
    if not store.file_io.publish_exclusive(path, data):
        existing = get_tag(store, name)
        if existing.snapshot.id != sid:
            raise TagAlreadyExistsError(
                f"tag {name!r} already exists for snapshot {existing.snapshot.id} of table "
                f"{store.root}; delete or replace it to tag snapshot {sid}"
            )
        return existing
    if from_snapshot_file and not store.snapshot_exists(sid):
        store.file_io.delete(path)
        raise SnapshotNotFoundError(
            f"snapshot {sid} expired while tag {name!r} was being created; nothing was tagged",
            snapshot_id=sid,
        )
    return get_tag(store, name)


def _tag_bytes(store: TableStore, name: str) -> bytes:
    """The bytes of tag ``name``'s file; a :class:`TagNotFoundError` naming the tags there are
    if it is missing (the name is checked before any storage call)."""
    get_tag(store, name)
    try:
        return store.file_io.read_bytes(store.path(tag_path(name)))
    except FileNotFoundError:
        get_tag(store, name)  # deleted meanwhile: the same error
        raise


def rename_tag(store: TableStore, old: str, new: str) -> Tag:
    """Rename tag ``old`` to ``new`` (Paimon's ``TagManager.renameTag``) and return the tag
    under its new name: the file of ``new`` holds exactly the bytes of ``old``'s (snapshot,
    ``tagCreateTime`` and ``tagTimeRetained`` alike). A missing ``old`` is a
    :class:`TagNotFoundError`, an existing ``new`` a :class:`TagAlreadyExistsError`; either
    way nothing changes.

    The new file is created exclusively first, then the old one deleted: a process killed in
    between leaves both names on the same snapshot (never neither), and ``delete_tag(old)``
    finishes the rename. Snapshot expiry may run meanwhile: the snapshot is protected by one
    name or the other throughout."""
    check_tag_name(new)
    data = _tag_bytes(store, old)
    if old == new:
        raise TagAlreadyExistsError(f"tag {old!r} of table {store.root} is named {new!r} already")
    if not store.file_io.publish_exclusive(store.path(tag_path(new)), data):
        existing = get_tag(store, new)
        raise TagAlreadyExistsError(
            f"cannot rename tag {old!r} of table {store.root} to {new!r}: tag {new!r} already "
            f"exists (for snapshot {existing.snapshot.id}); delete it first, or, if a rename "
            f"to it was interrupted and both name the same snapshot, delete {old!r}"
        )
    store.file_io.delete(store.path(tag_path(old)))
    return get_tag(store, new)


def replace_tag(
    store: TableStore,
    name: str,
    snapshot_id: int | None = None,
    *,
    time_retained: dt.timedelta | None = None,
    now: dt.datetime | None = None,
) -> Tag:
    """Point the existing tag ``name`` at snapshot ``snapshot_id`` (the latest by default; an
    expired one another tag holds too) and return it (Paimon's ``TagManager.replaceTag``, the
    ``replace_tag`` procedure): a missing tag is a :class:`TagNotFoundError`. The tag file is
    overwritten atomically (readers see the old or the new tag) with the snapshot's JSON and,
    with ``time_retained``, a fresh ``tagCreateTime`` (``now``, default the local time).

    The files only the old snapshot of the tag kept alive are left for orphan cleanup, as
    :func:`delete_tag` leaves them. If the new snapshot expires while the tag is being
    replaced, the old tag file is written back and :class:`SnapshotNotFoundError` raised."""
    old = _tag_bytes(store, name)
    path = store.path(tag_path(name))
    data, sid, from_snapshot_file = _tag_document(store, snapshot_id, time_retained, now)
    store.file_io.overwrite_atomic(path, data)
    if from_snapshot_file and not store.snapshot_exists(sid):
        store.file_io.overwrite_atomic(path, old)
        raise SnapshotNotFoundError(
            f"snapshot {sid} expired while tag {name!r} was being replaced; the tag is as it was",
            snapshot_id=sid,
        )
    return get_tag(store, name)


def _local_time(when: AsOf) -> dt.datetime:
    """``when`` as a naive local time (Paimon's ``LocalDateTime``): epoch milliseconds and
    aware datetimes are converted, a naive datetime is taken as it is."""
    if isinstance(when, dt.datetime):
        return when.astimezone().replace(tzinfo=None) if when.tzinfo else when
    return dt.datetime.fromtimestamp(as_of_millis(when) / 1000)


def expire_tags(
    store: TableStore,
    *,
    older_than: AsOf | None = None,
    now: dt.datetime | None = None,
) -> list[str]:
    """Delete the expired tags and return their names (Paimon's ``TagTimeExpire``, the
    ``expire_tags`` procedure), in :func:`~lakeops.store.tags.list_tags` order.

    A tag with a retention expires once ``now`` (naive local time; default the local clock)
    is after its ``tagCreateTime + tagTimeRetained``; one without never expires so. With
    ``older_than`` (a datetime, naive = local time, or epoch milliseconds), every tag created
    before it expires too — and, as in Paimon, a tag without Paimon's tag fields counts as
    created when its tag file was last modified. Only the tag files go (see
    :func:`delete_tag`)."""
    if older_than is not None and (
        isinstance(older_than, bool) or not isinstance(older_than, dt.datetime | int)
    ):
        raise ConfigurationError(
            "older_than must be a datetime or epoch milliseconds (int), not "
            f"{type(older_than).__name__}"
        )
    cutoff = _local_time(older_than) if older_than is not None else None
    clock = now if now is not None else dt.datetime.now()
    expired = []
    for tag in list_tags(store):
        path = store.path(tag_path(tag.name))
        created, retained = tag.create_time, tag.time_retained
        if created is None or retained is None:
            if cutoff is None:
                continue
            try:
                created = _local_time(int(store.file_io.modified_ms(path)))
            except FileNotFoundError:  # deleted meanwhile
                continue
        reached = retained is not None and clock > created + retained
        if reached or (cutoff is not None and cutoff > created):
            store.file_io.delete(path)
            expired.append(tag.name)
    return expired


def delete_tag(store: TableStore, name: str) -> Tag:
    """Delete the tag ``name`` (a :class:`TagNotFoundError` if there is none) and return what
    it was. Only the tag file goes; what only it kept alive is removed by the next
    ``remove_orphan_files`` (and never by expiry, which only deletes what expired snapshots'
    commits deleted)."""
    tag = get_tag(store, name)
    store.file_io.delete(store.path(tag_path(name)))
    return tag
