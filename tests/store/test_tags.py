"""Tags in Paimon's format: the tag file is the snapshot file's JSON (plus Paimon's tag fields
when it has a retention), it outlives its snapshot through expiry and orphan cleanup, and
reads and rollbacks by tag see what the snapshot held (a plain dict model)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lakeops.maintenance.expire as expire_module
from lakeops import (
    Catalog,
    ConfigurationError,
    SnapshotNotFoundError,
    Table,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from lakeops.maintenance.tags import check_tag_name, create_tag, expire_tags, replace_tag
from lakeops.store import TableStore
from lakeops.store.keep_alive import KeptAlive

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _kv(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _rows(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def _model(*batches: pa.Table) -> dict[int, str]:
    out: dict[int, str] = {}
    for b in batches:
        out.update(_rows(b))
    return out


BATCHES = [_kv(range(0, 30), "a"), _kv(range(20, 50), "b"), _kv(range(0, 10), "c")]


@pytest.fixture
def table(catalog: Catalog) -> Table:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    for batch in BATCHES:
        table.write(batch)
    return table


def test_a_tag_file_is_the_snapshot_json_and_lists_back(table: Table, warehouse: Path) -> None:
    tag = table.create_tag("v1", 1)
    root = warehouse / "db.db" / "t"
    on_disk = json.loads((root / "tag" / "tag-v1").read_text())
    assert on_disk == json.loads((root / "snapshot" / "snapshot-1").read_text())
    assert tag.snapshot == table.snapshot(1) and tag.create_time is None
    latest = table.create_tag("latest")
    assert latest.snapshot.id == 3
    assert [(t.name, t.snapshot.id) for t in table.tags()] == [("v1", 1), ("latest", 3)]
    assert table.delete_tag("v1").name == "v1"
    assert [t.name for t in table.tags()] == ["latest"]
    assert not (root / "tag" / "tag-v1").exists()


def test_a_retained_tag_carries_paimons_tag_fields(table: Table, warehouse: Path) -> None:
    tag = table.create_tag("kept", 2, time_retained="2 d")
    on_disk = json.loads((warehouse / "db.db" / "t" / "tag" / "tag-kept").read_text())
    snapshot = json.loads((warehouse / "db.db" / "t" / "snapshot" / "snapshot-2").read_text())
    assert {k: v for k, v in on_disk.items() if not k.startswith("tag")} == snapshot
    assert on_disk["tagTimeRetained"] == 172800.0  # Duration: decimal seconds
    created = on_disk["tagCreateTime"]  # LocalDateTime: [y, mo, d, h, mi(, s(, ns))]
    assert 5 <= len(created) <= 7
    assert tag.time_retained == dt.timedelta(days=2)
    assert tag.create_time is not None
    assert abs(tag.create_time - dt.datetime.now()) < dt.timedelta(minutes=5)


def test_the_tables_default_retention_is_written(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.r",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "tag.default-time-retained": "1 h"},
    )
    table.write(BATCHES[0])
    assert table.create_tag("t").time_retained == dt.timedelta(hours=1)


def test_tags_protect_their_snapshot_through_expiry_and_orphan_cleanup(table: Table) -> None:
    table.create_tag("first", 1)
    table.create_tag("second", 2)
    table.compact(full=True)
    table.write(_kv(range(40, 60), "d"))
    result = table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert result.expired_snapshots == (1, 2, 3, 4)
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.check().ok
    assert _rows(table.read(tag="first")) == _model(BATCHES[0])
    assert _rows(table.read(tag="second")) == _model(*BATCHES[:2])
    assert _rows(table.read(snapshot_id=2)) == _model(*BATCHES[:2])  # the tag serves it
    with pytest.raises(SnapshotNotFoundError):
        table.read(snapshot_id=3)
    # a tag of an expired snapshot that another tag holds (as Paimon's findSnapshot)
    assert table.create_tag("again", 1).snapshot.id == 1
    # deleting the tags makes their files orphans, which cleanup then removes
    for name in ("first", "second", "again"):
        table.delete_tag(name)
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted
    assert table.check().ok
    assert _rows(table.read()) == _model(*BATCHES, _kv(range(40, 60), "d"))


def test_rollback_to_a_tag_whose_snapshot_expired_restores_it(table: Table) -> None:
    table.create_tag("before", 2)
    table.write(_kv(range(100, 110), "e"))
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert 2 not in [s.id for s in table.snapshots()]
    snapshot = table.rollback_to(tag="before")
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    assert _rows(table.read()) == _model(*BATCHES[:2])
    # the restored files are the table's own now: they survive the tag and cleanup
    table.delete_tag("before")
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.check().ok
    assert _rows(table.read()) == _model(*BATCHES[:2])


def test_a_tag_keeps_its_data_not_its_changelog_as_paimon(
    catalog: Catalog, warehouse: Path
) -> None:
    """Expiry deletes a tagged snapshot's changelog with the snapshot, as Paimon's does (its
    skipping set holds the base and delta lists only); the tag's data stays readable,
    restorable and through orphan cleanup."""
    table = catalog.create_table(
        "db.c",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "changelog-producer": "input"},
    )
    for batch in BATCHES:
        table.write(batch)
    tag = table.create_tag("t", 2)
    root = warehouse / "db.db" / "c"
    changelog = root / "manifest" / str(tag.snapshot.changelog_manifest_list)
    assert changelog.exists()
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert not changelog.exists()
    assert (root / "manifest" / tag.snapshot.base_manifest_list).exists()
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    table = catalog.get_table("db.c")  # nothing of the tag's metadata cached
    assert table.check().ok
    assert _rows(table.read(tag="t")) == _model(*BATCHES[:2])
    assert table.rollback_to(tag="t") is not None
    assert _rows(table.read()) == _model(*BATCHES[:2])
    assert table.check().ok


def test_a_tag_created_while_expiry_runs_keeps_its_files(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry lists the tags, then a tag of a snapshot it is expiring is created: its files
    stay (expiry looks for new tags before deleting anything)."""
    listed = expire_module.kept_alive
    calls: list[int] = []

    def racing(store: TableStore) -> KeptAlive:
        found = listed(store)
        if not calls:
            table.create_tag("racer", 1)  # after expiry listed the tags
        calls.append(1)
        return found

    monkeypatch.setattr(expire_module, "kept_alive", racing)
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    monkeypatch.undo()
    assert _rows(table.read(tag="racer")) == _model(BATCHES[0])
    assert table.check().ok


def test_existing_and_missing_tags(table: Table) -> None:
    first = table.create_tag("t", 1)
    assert table.create_tag("t", 1) == first  # a retry returns the tag
    with pytest.raises(TagAlreadyExistsError, match="snapshot 1"):
        table.create_tag("t", 2)
    with pytest.raises(TagNotFoundError, match="'nope'") as missing:
        table.read(tag="nope")
    assert isinstance(missing.value, SnapshotNotFoundError) and missing.value.tag == "nope"
    with pytest.raises(TagNotFoundError):
        table.delete_tag("nope")
    with pytest.raises(TagNotFoundError):
        table.rollback_to(tag="nope")
    with pytest.raises(SnapshotNotFoundError, match="snapshot 9"):
        table.create_tag("u", 9)
    with pytest.raises(ConfigurationError, match="one of"):
        table.read(tag="t", snapshot_id=1)


def test_a_tag_of_an_empty_table_is_refused(catalog: Catalog) -> None:
    table = catalog.create_table("db.e", schema=SCHEMA, primary_keys=["id"])
    with pytest.raises(SnapshotNotFoundError, match="no snapshot yet"):
        table.create_tag("t")
    assert table.tags() == []


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "blank"),
        ("  ", "blank"),
        ("42", "digits"),
        ("a/b", "separator"),
        ("a\\b", "separator"),
        ("a\nb", "control"),
        (".hidden", "starts with"),
        ("x.tmp", ".tmp"),
    ],
)
def test_tag_names_paimon_or_lakeops_refuse(name: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        check_tag_name(name)


@pytest.mark.parametrize("name", ["v1", "2024-01-01", "release 1.0", "é", "1a"])
def test_tag_names_accepted(name: str, table: Table) -> None:
    assert table.create_tag(name).name == name
    assert [t.name for t in table.tags()] == [name]


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"tag.automatic-creation": "event-time"}, "tag.automatic-creation"),
        (
            {"tag.automatic-creation": "process-time", "tag.creation-delay": "2 h"},
            "tag.creation-delay",
        ),
        (
            {
                "tag.automatic-creation": "watermark",
                "tag.creation-period-duration": "10 min",
                "tag.creation-delay": "10 min",
            },
            "tag.creation-delay",
        ),
    ],
)
def test_automatic_tag_creation_set_by_another_engine_refuses_writes(
    catalog: Catalog, warehouse: Path, options: dict[str, str], key: str
) -> None:
    """Modes Paimon does not know and settings Paimon refuses (a delay of a whole period)
    refuse writes before anything is written."""
    catalog.create_table("db.a", schema=SCHEMA, primary_keys=["id"])
    schema_file = warehouse / "db.db" / "a" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"].update({"tag.creation-period": "hourly", **options})
    schema_file.write_text(json.dumps(doc))
    table = catalog.get_table("db.a")
    with pytest.raises(ConfigurationError, match=re.escape(key)):
        table.write(BATCHES[0])
    assert table.latest_snapshot() is None


HOSTILE = {
    "NUL": "v\x00x",
    "300 characters": "t" * 300,
    "newline": "a\nb",
    "dot-dot": "..",
    "separator": "../escape",
}


@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_tag_names_are_refused_before_storage_in_every_tag_call(
    table: Table, warehouse: Path, name: str
) -> None:
    """Each of the four calls that take a tag name refuses it with a ConfigurationError
    naming the problem — no OS error, nothing written, nothing read outside ``tag/``."""
    table.create_tag("kept", 1)
    before = sorted(p for p in warehouse.rglob("*"))
    latest = table.latest_snapshot()
    calls = {
        "create_tag": lambda: table.create_tag(name, 1),
        "read": lambda: table.read(tag=name),
        "rollback_to": lambda: table.rollback_to(tag=name),
        "delete_tag": lambda: table.delete_tag(name),
    }
    for call in calls.values():
        with pytest.raises(ConfigurationError, match=r"tag name .*(holds|bytes|relative|sep)"):
            call()
    assert sorted(p for p in warehouse.rglob("*")) == before
    assert table.latest_snapshot() == latest
    assert [t.name for t in table.tags()] == ["kept"]


def test_a_long_tag_name_within_the_limit_round_trips(table: Table) -> None:
    from lakeops.format.ref_names import MAX_REF_NAME_BYTES

    name = "é" * (MAX_REF_NAME_BYTES // 2)  # two bytes each: exactly the limit
    assert table.create_tag(name, 2).name == name
    assert _rows(table.read(tag=name)) == _model(*BATCHES[:2])
    assert table.delete_tag(name).snapshot.id == 2
    with pytest.raises(ConfigurationError, match="over the limit"):
        table.create_tag(name + "x", 2)


# ---------------------------------------------------------------- rename, replace, as_of, expire


def _tag_files(warehouse: Path) -> dict[str, bytes]:
    tag_dir = warehouse / "db.db" / "t" / "tag"
    return {p.name: p.read_bytes() for p in sorted(tag_dir.iterdir())} if tag_dir.exists() else {}


def test_a_renamed_tag_is_the_same_file_under_the_new_name(table: Table, warehouse: Path) -> None:
    table.create_tag("old", 1, time_retained="2 d")
    before = _tag_files(warehouse)["tag-old"]
    table.write(_kv(range(100, 110), "e"))
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert 1 not in [s.id for s in table.snapshots()]  # only the tag holds snapshot 1 now
    renamed = table.rename_tag("old", "new")
    assert _tag_files(warehouse) == {"tag-new": before}
    assert renamed.name == "new" and renamed.snapshot.id == 1
    assert renamed.time_retained == dt.timedelta(days=2)
    assert [t.name for t in table.tags()] == ["new"]
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert table.check().ok
    assert _rows(table.read(tag="new")) == _model(BATCHES[0])
    with pytest.raises(TagNotFoundError):
        table.read(tag="old")


def test_renames_to_an_existing_or_from_a_missing_tag_change_nothing(
    table: Table, warehouse: Path
) -> None:
    table.create_tag("a", 1)
    table.create_tag("b", 2)
    before = _tag_files(warehouse)
    with pytest.raises(TagAlreadyExistsError, match="'b' already exists"):
        table.rename_tag("a", "b")
    with pytest.raises(TagAlreadyExistsError):
        table.rename_tag("a", "a")
    with pytest.raises(TagNotFoundError, match="'nope'"):
        table.rename_tag("nope", "c")
    with pytest.raises(ConfigurationError, match="digits"):
        table.rename_tag("a", "42")
    assert _tag_files(warehouse) == before
    assert {t.name: t.snapshot.id for t in table.tags()} == {"a": 1, "b": 2}


def test_a_rename_killed_before_the_old_tag_is_deleted_leaves_both(
    table: Table, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table.create_tag("old", 2)

    class Killed(BaseException):
        pass

    def killed(path: str) -> None:
        raise Killed(path)

    monkeypatch.setattr(table.store.file_io, "delete", killed)
    with pytest.raises(Killed):
        table.rename_tag("old", "new")
    monkeypatch.undo()
    files = _tag_files(warehouse)
    assert files["tag-old"] == files["tag-new"]
    for name in ("old", "new"):
        assert _rows(table.read(tag=name)) == _model(*BATCHES[:2])
    # a retry is refused (nothing changes); deleting the old name finishes the rename
    with pytest.raises(TagAlreadyExistsError, match="delete 'old'"):
        table.rename_tag("old", "new")
    table.delete_tag("old")
    assert [(t.name, t.snapshot.id) for t in table.tags()] == [("new", 2)]


def test_replace_moves_a_tag_and_its_create_time(table: Table, warehouse: Path) -> None:
    first = dt.datetime(2024, 5, 1, 12, 0, 0, 123456)
    later = dt.datetime(2024, 5, 2, 8, 30)
    create_tag(table.store, "t", 1, time_retained=dt.timedelta(hours=1), now=first)
    assert _rows(table.read(tag="t")) == _model(BATCHES[0])
    moved = replace_tag(table.store, "t", 2, time_retained=dt.timedelta(days=3), now=later)
    assert (moved.snapshot.id, moved.create_time, moved.time_retained) == (
        2,
        later,
        dt.timedelta(days=3),
    )
    assert _rows(table.read(tag="t")) == _model(*BATCHES[:2])
    on_disk = json.loads(_tag_files(warehouse)["tag-t"])
    snapshot = json.loads((warehouse / "db.db" / "t" / "snapshot" / "snapshot-2").read_text())
    assert {k: v for k, v in on_disk.items() if not k.startswith("tag")} == snapshot
    # the Table method: the latest snapshot by default, no retention without one
    latest = table.replace_tag("t")
    assert (latest.snapshot.id, latest.time_retained, latest.create_time) == (3, None, None)
    assert json.loads(_tag_files(warehouse)["tag-t"]) == json.loads(
        (warehouse / "db.db" / "t" / "snapshot" / "snapshot-3").read_text()
    )
    assert _rows(table.read(tag="t")) == _model(*BATCHES)
    before = _tag_files(warehouse)
    with pytest.raises(TagNotFoundError):
        table.replace_tag("nope", 1)
    with pytest.raises(SnapshotNotFoundError, match="snapshot 9"):
        table.replace_tag("t", 9)
    assert _tag_files(warehouse) == before


def test_a_replace_whose_snapshot_expires_meanwhile_restores_the_tag(
    table: Table, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry deletes snapshot 2 between the read of it and the overwrite of the tag: the
    tag is written back as it was (its new snapshot's files may be going)."""
    table.create_tag("t", 1, time_retained="1 d")
    before = _tag_files(warehouse)
    exists = table.store.snapshot_exists
    asked: list[int] = []

    def expiring(snapshot_id: int) -> bool:
        asked.append(snapshot_id)
        return exists(snapshot_id) and asked.count(2) < 2  # gone at the second look

    monkeypatch.setattr(table.store, "snapshot_exists", expiring)
    with pytest.raises(SnapshotNotFoundError, match="expired while tag 't' was being replaced"):
        table.replace_tag("t", 2)
    monkeypatch.undo()
    assert _tag_files(warehouse) == before
    assert _rows(table.read(tag="t")) == _model(BATCHES[0])


def test_replacing_the_only_tag_of_an_expired_snapshot_leaves_its_files_to_cleanup(
    table: Table,
) -> None:
    table.create_tag("t", 1)
    table.write(_kv(range(100, 110), "e"))
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert _rows(table.read(tag="t")) == _model(BATCHES[0])
    table.replace_tag("t")
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert removed.deleted  # what only the old snapshot of the tag kept alive
    assert table.check().ok
    everything = _model(*BATCHES, _kv(range(100, 110), "e"))
    assert _rows(table.read(tag="t")) == everything == _rows(table.read())


BASE = 1_700_000_000_000  # snapshot i is committed at BASE + 1000 * i


def _timed(catalog: Catalog, warehouse: Path, count: int = 3) -> Table:
    """``db.t`` with ``count`` snapshots, snapshot ``i`` committed at ``BASE + 1000 * i``."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    for i in range(count):
        table.write(_kv(range(i * 10, i * 10 + 10), f"s{i}"))
    for snapshot in table.snapshots():
        path = warehouse / "db.db" / "t" / "snapshot" / f"snapshot-{snapshot.id}"
        timed = dataclasses.replace(snapshot, time_millis=BASE + 1000 * snapshot.id)
        path.write_text(timed.to_json())
    return catalog.get_table("db.t")


def _model_snapshot_at(retained: dict[int, int], tagged: dict[int, int], millis: int) -> int | None:
    """Paimon's create_tag_from_timestamp as a plain model: ``retained`` and ``tagged`` map
    snapshot ids to commit times; the earliest retained snapshot at or after ``millis``, unless
    the first tagged one (by id) at or after it was committed earlier."""
    later = [i for i, t in sorted(retained.items()) if t >= millis]
    found = later[0] if later else None
    first_tag = next((i for i, t in sorted(tagged.items()) if t >= millis), None)
    if first_tag is not None and (found is None or tagged[first_tag] < retained[found]):
        found = first_tag
    return found


@pytest.mark.parametrize(
    "millis",
    [BASE + d for d in (0, 999, 1000, 1001, 1500, 2000, 3000, 3001, 10_000)],
)
def test_create_tag_as_of_picks_the_earliest_snapshot_at_or_after_the_time(
    catalog: Catalog, warehouse: Path, millis: int
) -> None:
    table = _timed(catalog, warehouse)
    expected = _model_snapshot_at({1: BASE + 1000, 2: BASE + 2000, 3: BASE + 3000}, {}, millis)
    if expected is None:
        with pytest.raises(SnapshotNotFoundError, match="at or after"):
            table.create_tag("t", as_of=millis)
        assert table.tags() == []
        return
    assert table.create_tag("t", as_of=millis).snapshot.id == expected
    assert _rows(table.read(tag="t")) == _rows(table.read(snapshot_id=expected))
    # the same time as an aware and as a naive (local) datetime
    aware = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
    assert table.create_tag("aware", as_of=aware).snapshot.id == expected
    naive = dt.datetime.fromtimestamp(millis / 1000)
    assert table.create_tag("naive", as_of=naive).snapshot.id == expected


@pytest.mark.parametrize("millis", [BASE, BASE + 1000, BASE + 1500, BASE + 2500, BASE + 4000])
def test_create_tag_as_of_looks_among_the_tags_of_expired_snapshots(
    catalog: Catalog, warehouse: Path, millis: int
) -> None:
    table = _timed(catalog, warehouse, count=4)
    table.create_tag("one", 1)
    table.expire_snapshots(retain_min=2, retain_max=2, time_retained="0 ms")
    assert [s.id for s in table.snapshots()] == [3, 4]  # 2 expired untagged, 1 only tagged
    retained = {3: BASE + 3000, 4: BASE + 4000}
    expected = _model_snapshot_at(retained, {1: BASE + 1000}, millis)
    assert expected is not None
    assert table.create_tag("t", as_of=millis).snapshot.id == expected
    want = _kv(range(0, 10), "s0") if expected == 1 else table.read(snapshot_id=expected)
    assert _rows(table.read(tag="t")) == _rows(want)


def test_create_tag_takes_a_snapshot_id_or_a_time_not_both(table: Table) -> None:
    with pytest.raises(ConfigurationError, match="not both"):
        table.create_tag("t", 1, as_of=0)
    with pytest.raises(ConfigurationError, match="as_of"):
        table.create_tag("t", as_of="yesterday")  # type: ignore[arg-type]
    assert table.tags() == []
    # the existing rules hold for a tag by time too: a retry returns the tag, a clash refuses
    first = table.create_tag("t", as_of=0)
    assert first.snapshot.id == 1 and table.create_tag("t", as_of=0) == first
    with pytest.raises(TagAlreadyExistsError):
        table.create_tag("t", 2)


T0 = dt.datetime(2024, 6, 1, 12, 0)


#: name: (create time, retention) of a tag with Paimon's tag fields, or (file mtime, None)
EXPIRY_TAGS: dict[str, tuple[dt.datetime, dt.timedelta | None]] = {
    "day": (T0 - dt.timedelta(days=2), dt.timedelta(days=1)),
    "week": (T0 - dt.timedelta(days=2), dt.timedelta(days=7)),
    "edge": (T0 - dt.timedelta(days=1), dt.timedelta(days=1)),  # expires just after T0
    "future": (T0, dt.timedelta(hours=1)),
    "plain": (T0 - dt.timedelta(days=3), None),
    "fresh": (T0, None),
}


def _model_expired(now: dt.datetime, older_than: dt.datetime | None) -> set[str]:
    """Paimon's TagTimeExpire as a plain model (``older_than`` as a naive local time)."""
    out = set()
    for name, (created, retained) in EXPIRY_TAGS.items():
        if retained is None and older_than is None:
            continue
        reached = retained is not None and now > created + retained
        if reached or (older_than is not None and older_than > created):
            out.add(name)
    return out


@pytest.mark.parametrize(
    ("now", "older_than"),
    [
        (T0, None),
        (T0 + dt.timedelta(microseconds=1), None),
        (T0 - dt.timedelta(days=5), None),
        (T0 + dt.timedelta(days=30), None),
        (T0, T0 - dt.timedelta(days=1)),
        (T0, T0 - dt.timedelta(days=2)),  # exactly a create time: not older
        (T0 - dt.timedelta(days=5), T0 + dt.timedelta(seconds=1)),
        (T0 - dt.timedelta(days=5), T0 - dt.timedelta(days=3)),
    ],
)
@pytest.mark.parametrize("spelling", ["naive", "aware", "millis"])
def test_expire_tags_deletes_exactly_the_models_tags(
    table: Table,
    warehouse: Path,
    now: dt.datetime,
    older_than: dt.datetime | None,
    spelling: str,
) -> None:
    for i, (name, (created, retained)) in enumerate(EXPIRY_TAGS.items()):
        create_tag(table.store, name, 1 + i % 3, time_retained=retained, now=created)
        if retained is None:  # Paimon takes the tag file's modification time
            stamp = created.timestamp()
            os.utime(warehouse / "db.db" / "t" / "tag" / f"tag-{name}", (stamp, stamp))
    given: dt.datetime | int | None = older_than
    if older_than is not None and spelling == "aware":
        given = older_than.astimezone(dt.UTC)
    elif older_than is not None and spelling == "millis":
        given = int(older_than.timestamp() * 1000)
    expected = _model_expired(now, older_than)
    expired = expire_tags(table.store, older_than=given, now=now)
    assert sorted(expired) == sorted(expected)
    assert {t.name for t in table.tags()} == set(EXPIRY_TAGS) - expected
    assert {p.removeprefix("tag-") for p in _tag_files(warehouse)} == set(EXPIRY_TAGS) - expected
    assert expire_tags(table.store, older_than=given, now=now) == []  # nothing left to expire


@pytest.fixture
def kolkata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC+05:30 (no daylight saving) for the test."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("kolkata")
@pytest.mark.parametrize(("minutes", "expired"), [(-1, []), (1, ["week"])])
def test_expire_tags_older_than_an_aware_time_compares_in_local_time(
    table: Table, minutes: int, expired: list[str]
) -> None:
    """Create times are local wall-clock times (Paimon's LocalDateTime): an aware older_than
    is converted to local time before it is compared, not stripped of its zone."""
    created = T0 - dt.timedelta(days=2)
    create_tag(table.store, "week", 1, time_retained=dt.timedelta(days=7), now=created)
    aware = (created + dt.timedelta(minutes=minutes)).astimezone(dt.UTC)
    assert aware.hour != created.hour  # the zone matters
    assert expire_tags(table.store, older_than=aware, now=T0) == expired


def test_expired_tags_leave_their_files_to_orphan_cleanup(table: Table) -> None:
    create_tag(table.store, "gone", 1, time_retained=dt.timedelta(hours=1), now=T0)
    table.create_tag("kept", 2)
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert table.expire_tags() == ["gone"]  # now is long after T0 + 1 h
    assert [t.name for t in table.tags()] == ["kept"]
    assert table.check().ok
    assert table.remove_orphan_files(older_than=dt.timedelta(0), force=True).deleted
    assert table.check().ok
    assert _rows(table.read(tag="kept")) == _model(*BATCHES[:2])
    assert _rows(table.read()) == _model(*BATCHES)
    with pytest.raises(ConfigurationError, match="older_than"):
        table.expire_tags(older_than="yesterday")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_tag_names_are_refused_by_rename_and_replace(
    table: Table, warehouse: Path, name: str
) -> None:
    table.create_tag("kept", 1)
    before = sorted(p for p in warehouse.rglob("*"))
    for call in (
        lambda: table.rename_tag("kept", name),
        lambda: table.rename_tag(name, "other"),
        lambda: table.replace_tag(name, 2),
    ):
        with pytest.raises(ConfigurationError, match=r"tag name .*(holds|bytes|relative|sep)"):
            call()
    assert sorted(p for p in warehouse.rglob("*")) == before
