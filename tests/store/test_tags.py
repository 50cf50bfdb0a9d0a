"""Tags in Paimon's format: the tag file is the snapshot file's JSON (plus Paimon's tag fields
when it has a retention), it outlives its snapshot through expiry and orphan cleanup, and
reads and rollbacks by tag see what the snapshot held (a plain dict model)."""

from __future__ import annotations

import datetime as dt
import json
import re
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
from lakeops.format.snapshot import Snapshot
from lakeops.maintenance.tags import check_tag_name
from lakeops.store import TableStore

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


def test_a_tag_created_while_expiry_runs_keeps_its_files(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry lists the tags, then a tag of a snapshot it is expiring is created: its files
    stay (expiry looks for new tags before deleting anything)."""
    listed = expire_module.protected_snapshots
    calls: list[int] = []

    def racing(store: TableStore) -> list[Snapshot]:
        found = listed(store)
        if not calls:
            table.create_tag("racer", 1)  # after expiry listed the tags
        calls.append(1)
        return found

    monkeypatch.setattr(expire_module, "protected_snapshots", racing)
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
