"""Automatic tags after a commit, as Paimon's ``TagAutoCreation`` creates them (``process-time``,
``watermark``), and the ``batch`` mode's tag of Paimon's batch sink.

``watermark``: as below, with each snapshot's time its ``watermark`` (given to the commit:
``Table.commit(..., watermark=)``) in ``sink.watermark-time-zone``; snapshots without one are
passed over, so tables written only by lakeops commits without watermarks get no tags (they stay
writable; the engine that sets watermarks creates them). ``batch``: after each batch commit
(identifier ``BATCH_COMMIT_IDENTIFIER``, what a commit without one uses) the latest snapshot is
tagged ``batch-write-<yyyy-MM-dd>`` (its local day), replacing a tag of that name, and tags
beyond ``tag.num-retained-max`` are deleted, oldest snapshot first (:func:`create_batch_tag`).

After every successful lakeops commit (a write, an in-writer or a dedicated compaction) to a
table with ``tag.automatic-creation`` = ``process-time`` (or ``watermark``),
:func:`create_auto_tags` does what Paimon 0.9's committer does after its commit (period
arithmetic: :mod:`lakeops.options.auto_tag`):

1. The state is rebuilt from the table's tags, as Paimon's constructor does: the last automatic
   tag (by snapshot id; its name parsed) gives the next period to tag and the first snapshot to
   look at (the one after it); with no automatic tag yet, every retained snapshot is looked at
   and the first one is tagged with the period before its own.
2. Each snapshot from there to the latest, in id order (jumping over expired ones), whose time
   (its ``timeMillis`` as local wall-clock time) minus ``tag.creation-delay`` has reached the
   end of the next period is tagged: with the period before its own, or — with
   ``tag.automatic-completion`` — with the next period, so no period is skipped. A tag of that
   name that already exists is left as it is (never moved).
3. After each tag created, automatic tags beyond ``tag.num-retained-max`` are deleted, oldest
   snapshot first. Only tags whose names parse as this table's period are automatic; tags that
   users named otherwise are never deleted for it.

Tags carry ``tag.default-time-retained`` as :func:`lakeops.store.tags.create_tag` writes it.
Deleting a tag deletes only its file (see :mod:`lakeops.store.tags`). Concurrent writers may
run this at once: tag files are created exclusively, so the first wins and the others see it.

Cost: each commit lists the tags and reads the snapshot files after the last automatic tag
(the commits of at most about one period), because Paimon looks at every one of them.

A failure here never fails the commit, which is already published: Paimon runs this after the
commit too and only logs its errors. The caller logs the exception; the next commit tries again
(the state is rebuilt from the tags, so a tag that was missed is created then, on the snapshot
Paimon would pick by then).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Mapping

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER
from lakeops.errors import TagAlreadyExistsError, TagNotFoundError
from lakeops.format.snapshot import Snapshot
from lakeops.maintenance.tags import create_tag, delete_tag
from lakeops.options import rows_retention as R
from lakeops.options.auto_tag import AutoTagOptions, TagPeriod, batch_tags_on
from lakeops.store import TableStore
from lakeops.store.context import TableContext
from lakeops.store.tags import Tag, find_tag, list_tags

__all__ = [
    "BATCH_TAG_PREFIX",
    "NO_WATERMARK",
    "auto_tags",
    "auto_tags_after_commit",
    "batch_tag_name",
    "create_auto_tags",
    "create_batch_tag",
    "local_time",
    "watermark_time",
]

#: Paimon's ``BatchWriteGeneratorTagOperator.BATCH_WRITE_TAG_PREFIX``
BATCH_TAG_PREFIX = "batch-write-"
#: Flink's "no watermark yet" (``Long.MIN_VALUE``): such snapshots create no watermark tag
NO_WATERMARK = -(2**63)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def local_time(millis: int) -> dt.datetime:
    """Epoch milliseconds as naive local wall-clock time (Java's ``ZoneId.systemDefault()``)."""
    seconds, ms = divmod(millis, 1000)
    return dt.datetime.fromtimestamp(seconds) + dt.timedelta(milliseconds=ms)


def auto_tags(tags: list[Tag], period: TagPeriod) -> list[Tag]:
    """The automatic tags among ``tags`` (names that parse as ``period``), by snapshot id."""
    auto = [t for t in tags if period.time_of(t.name) is not None]
    return sorted(auto, key=lambda t: (t.snapshot.id, t.name))


def auto_tags_after_commit(table: TableContext, snapshot: Snapshot) -> None:
    """The commit callback of ``tag.automatic-creation``: after each published commit, the
    automatic tags Paimon would create (none when the table does not ask for them); in
    ``batch`` mode, after a batch commit (``BATCH_COMMIT_IDENTIFIER``), its day's tag."""
    raw = table.schema.options
    if batch_tags_on(raw):
        if snapshot.commit_identifier == BATCH_COMMIT_IDENTIFIER:
            create_batch_tag(
                table.store,
                time_retained=_retained(raw),
                num_retained_max=R.TAG_NUM_RETAINED_MAX.find(raw),
            )
        return
    options = AutoTagOptions.from_options(raw)
    if options is not None:
        create_auto_tags(table.store, options)


def _retained(options: Mapping[str, str]) -> dt.timedelta | None:
    millis = R.TAG_DEFAULT_TIME_RETAINED.find(options, blank_is_unset=True)
    return None if millis is None else dt.timedelta(milliseconds=millis)


def batch_tag_name(time: dt.datetime) -> str:
    """The tag Paimon's batch sink names for a snapshot taken at local wall-clock ``time``."""
    return f"{BATCH_TAG_PREFIX}{time.year:04d}-{time.month:02d}-{time.day:02d}"


def create_batch_tag(
    store: TableStore,
    *,
    time_retained: dt.timedelta | None = None,
    num_retained_max: int | None = None,
    clock: Callable[[int], dt.datetime] = local_time,
    now: Callable[[], dt.datetime] = dt.datetime.now,
) -> str | None:
    """Tag the latest snapshot ``batch-write-<yyyy-MM-dd>`` (its ``timeMillis`` as local
    time), replacing a tag of that name, then delete the tags of the oldest snapshots beyond
    ``tag.num-retained-max`` — all tags, as Paimon 0.9's ``BatchWriteGeneratorTagOperator``
    does after a batch job's commit. Returns the name (None on an empty table). If creating
    fails, the tag of that name is deleted and the error propagates (the commit stands)."""
    snapshot = store.latest_snapshot()
    if snapshot is None:
        return None
    name = batch_tag_name(clock(snapshot.time_millis))
    try:
        if find_tag(store, name) is not None:
            with contextlib.suppress(TagNotFoundError):
                delete_tag(store, name)
        create_tag(
            store, name, snapshot.id, time_retained=time_retained, now=now(), check_name=False
        )
        if num_retained_max is not None:
            _expire_tags(store, num_retained_max)
    except Exception:
        with contextlib.suppress(Exception):
            if find_tag(store, name) is not None:
                delete_tag(store, name)
        raise
    return name


def _expire_tags(store: TableStore, num_retained_max: int) -> None:
    """Delete tags, oldest snapshot first, until at most ``num_retained_max`` remain (Paimon's
    batch ``expireTag``; tags of one snapshot go oldest created first — by creation time
    where written, else by name — where Paimon orders them by file modification time)."""
    tags = list_tags(store)
    count = len(tags)
    by_snapshot: dict[int, list[Tag]] = {}
    for tag in tags:
        by_snapshot.setdefault(tag.snapshot.id, []).append(tag)
    for _, group in sorted(by_snapshot.items()):
        if count <= num_retained_max:
            return
        ordered = sorted(group, key=lambda t: (t.create_time or dt.datetime.min, t.name))
        for tag in ordered:
            if count <= num_retained_max:
                return
            with contextlib.suppress(TagNotFoundError):
                delete_tag(store, tag.name)
            count -= 1


def create_auto_tags(
    store: TableStore,
    options: AutoTagOptions,
    *,
    clock: Callable[[int], dt.datetime] = local_time,
    now: Callable[[], dt.datetime] = dt.datetime.now,
) -> list[str]:
    """Create (and retire) the automatic tags Paimon would after the latest commit; returns
    the names created. ``clock`` turns a snapshot's ``timeMillis`` into wall-clock time and
    ``now`` stamps tags with a retention (both injectable for tests)."""
    period = options.period
    auto = auto_tags(list_tags(store), period)
    next_tag: dt.datetime | None = None
    if auto:
        last_id, names = list(_by_snapshot(auto).items())[-1]
        last_time = period.time_of(_one(last_id, names))
        assert last_time is not None
        next_tag = last_time + period.length
        next_id = last_id + 1
    else:
        next_id = store.earliest_snapshot_id() or 1
    created: list[str] = []
    while True:
        snapshot = _snapshot(store, next_id)
        if snapshot is None:
            earliest = store.earliest_snapshot_id()
            if earliest is not None and earliest > next_id:
                next_id = earliest
                continue
            return created
        time = _time_of(snapshot, options, clock)
        if time is None:  # no watermark: Paimon passes the snapshot over
            next_id += 1
            continue
        if next_tag is None or time - options.delay >= next_tag + period.length:
            this_tag = period.previous_start(time)
            if options.completion and next_tag is not None:
                this_tag = next_tag
            name = period.name_of(this_tag)
            if find_tag(store, name) is None and _create(store, name, snapshot.id, options, now):
                created.append(name)
            next_tag = this_tag + period.length
            if options.num_retained_max is not None:
                _retire(store, period, options.num_retained_max)
        next_id += 1


def _time_of(
    snapshot: Snapshot, options: AutoTagOptions, clock: Callable[[int], dt.datetime]
) -> dt.datetime | None:
    """The snapshot's time for tagging (Paimon's ``TagTimeExtractor``): its ``timeMillis`` as
    local time, or in ``watermark`` mode its watermark in ``sink.watermark-time-zone`` (None
    when it has none: absent or ``Long.MIN_VALUE``)."""
    zone = options.watermark_zone
    if zone is None:
        return clock(snapshot.time_millis)
    if snapshot.watermark is None or snapshot.watermark == NO_WATERMARK:
        return None
    return watermark_time(snapshot.watermark, zone)


def watermark_time(watermark: int, zone: dt.tzinfo) -> dt.datetime:
    """Epoch milliseconds as naive wall-clock time in ``zone`` (``WatermarkExtractor``)."""
    utc = _EPOCH_UTC + dt.timedelta(milliseconds=watermark)
    return utc.astimezone(zone).replace(tzinfo=None)


def _create(
    store: TableStore,
    name: str,
    snapshot_id: int,
    options: AutoTagOptions,
    now: Callable[[], dt.datetime],
) -> bool:
    """Create the tag; False when another writer created one of that name meanwhile."""
    try:
        create_tag(
            store,
            name,
            snapshot_id,
            time_retained=options.time_retained,
            now=now(),
            check_name=False,  # Paimon's own names ('20240131' is digits only)
        )
    except TagAlreadyExistsError:
        return False
    return True


def _snapshot(store: TableStore, snapshot_id: int) -> Snapshot | None:
    if not store.snapshot_exists(snapshot_id):
        return None
    try:
        return store.snapshot(snapshot_id)
    except FileNotFoundError:  # expired meanwhile
        return None


def _by_snapshot(tags: list[Tag]) -> dict[int, list[str]]:
    """Automatic tag names by snapshot id, in id order (Paimon's ``tags(isAutoTag)`` map)."""
    out: dict[int, list[str]] = {}
    for tag in tags:
        out.setdefault(tag.snapshot.id, []).append(tag.name)
    return out


def _one(snapshot_id: int, names: list[str]) -> str:
    """The one automatic tag of a snapshot; more is an error, as in Paimon."""
    if len(names) != 1:
        raise RuntimeError(
            f"snapshot {snapshot_id} has more than one automatic tag ({', '.join(names)}); "
            "delete all but one"
        )
    return names[0]


def _retire(store: TableStore, period: TagPeriod, num_retained_max: int) -> None:
    """Delete the automatic tags of the oldest snapshots beyond ``num_retained_max`` tagged
    snapshots (Paimon counts snapshots that carry automatic tags)."""
    tagged = list(_by_snapshot(auto_tags(list_tags(store), period)).items())
    for snapshot_id, names in tagged[: max(len(tagged) - num_retained_max, 0)]:
        with contextlib.suppress(TagNotFoundError):  # another writer retired it meanwhile
            delete_tag(store, _one(snapshot_id, names))
