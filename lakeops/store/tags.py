"""Tags: named snapshots, in Paimon's layout, that keep what they reference alive.

A tag is the file ``tag/tag-<name>`` of the table: the JSON of the snapshot it names, exactly as
the snapshot file holds it, plus — only when the tag has a retention — Paimon's two tag fields
(``TagManager.createTag`` / ``Tag`` of Paimon 0.9, pypaimon's ``TagManager``):

* ``tagCreateTime``: a ``LocalDateTime`` as Jackson writes it, ``[year, month, day, hour,
  minute(, second(, nanoOfSecond))]`` (trailing zeros dropped), in the writer's local time;
* ``tagTimeRetained``: a ``Duration`` as decimal seconds.

A tag without a retention carries neither field (older Paimon readers refuse them), so its file
is the snapshot's JSON. The data of a tagged snapshot (its base and delta manifest lists, their
manifests, data and index files) stays alive through snapshot expiry and orphan cleanup
(:mod:`lakeops.store.keep_alive`), and a tag outlives its snapshot: time travel and rollback to
it work after the snapshot expired. Its changelog goes when the snapshot expires, as in Paimon.

Tags are created and deleted by :mod:`lakeops.maintenance.tags`; the automatic ones of
``tag.automatic-creation`` by :mod:`lakeops.maintenance.auto_tags`, which also applies
``tag.num-retained-max``. ``tag.default-time-retained`` is written into tags created without
an explicit retention, as Paimon does; lakeops does not expire tags by it (a kept tag only
keeps files alive).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from lakeops.errors import (
    TagNotFoundError,
)
from lakeops.format.ref_names import check_ref_name
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = [
    "TAG_DIR",
    "TAG_PREFIX",
    "CREATE_TIME",
    "TIME_RETAINED",
    "Tag",
    "find_tag",
    "get_tag",
    "list_tags",
    "local_datetime_json",
    "tag_path",
    "tagged_snapshot",
]

TAG_DIR = "tag"
TAG_PREFIX = "tag-"
CREATE_TIME = "tagCreateTime"
TIME_RETAINED = "tagTimeRetained"


@dataclass(frozen=True)
class Tag:
    """One tag: its ``name``, the ``snapshot`` it names (which may have expired since), and —
    for tags created with a retention — ``create_time`` (naive, the creator's local time, as
    Paimon's ``LocalDateTime``) and ``time_retained``."""

    name: str
    snapshot: Snapshot
    create_time: dt.datetime | None = None
    time_retained: dt.timedelta | None = None


def tag_path(name: str) -> str:
    """The tag file of tag ``name``, relative to the table."""
    return f"{TAG_DIR}/{TAG_PREFIX}{name}"


def _decode(name: str, data: bytes, relative: str) -> Tag:
    doc = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    snapshot = Snapshot.from_json(data, relative)
    created = doc.get(CREATE_TIME)
    retained = doc.get(TIME_RETAINED)
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


def local_datetime_json(value: dt.datetime) -> list[int]:
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
    relative = tag_path(name)
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
