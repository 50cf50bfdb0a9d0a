"""The pure snapshot builder against hand-computed snapshots: no table, no storage, no clock.

Each case states the latest snapshot and the change, and the expected next snapshot is written
out field by field (ids, record counts, changelog count, the index manifest it names), as
Paimon's ``Snapshot`` JSON would carry them.
"""

from __future__ import annotations

import json

import pytest

from lakeops.commit.snapshot_builder import (
    CommitLists,
    PlannedChange,
    base_is_stale,
    check_deletes_live,
    has_deletes,
    manifest_file_meta,
    new_base_manifests,
    next_snapshot,
    next_snapshot_id,
    overwrite_change,
    record_delta,
)
from lakeops.errors import CommitConflictError, CommitError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry
from lakeops.format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from lakeops.format.snapshot import CommitKind, Snapshot
from lakeops.format.types import DataType

ADD, DELETE = FileKind.ADD, FileKind.DELETE
INT = DataType.parse("INT")
NO_PARTITION = binary_row.serialize([], [])
USER = "writer-1"
NOW = 1_700_000_000_123


def part(value: int | None) -> bytes:
    return binary_row.serialize([value], [INT])


def data_file(name: str, rows: int, level: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=100 * rows,
        row_count=rows,
        min_key=b"",
        max_key=b"",
        key_stats=SimpleStats(),
        value_stats=SimpleStats(),
        min_sequence_number=0,
        max_sequence_number=rows - 1,
        schema_id=0,
        level=level,
    )


def entry(
    kind: int,
    name: str,
    rows: int,
    *,
    partition: bytes = NO_PARTITION,
    bucket: int = 0,
    level: int = 0,
) -> ManifestEntry:
    return ManifestEntry(kind, partition, bucket, 4, data_file(name, rows, level))


def index_entry(kind: int, name: str, partition: bytes = NO_PARTITION) -> IndexManifestEntry:
    return IndexManifestEntry(kind, partition, 0, IndexFileMeta("HASH", name, 64, 16))


def snapshot(**fields: object) -> Snapshot:
    """A published snapshot to build on (only the fields the builder reads matter)."""
    base: dict[str, object] = {
        "id": 7,
        "schema_id": 0,
        "base_manifest_list": "manifest-list-old-0",
        "delta_manifest_list": "manifest-list-old-1",
        "commit_user": "someone-else",
        "commit_identifier": 3,
        "commit_kind": "APPEND",
        "time_millis": 1,
        "total_record_count": 100,
        "delta_record_count": 100,
    }
    base.update(fields)
    return Snapshot(**base)  # type: ignore[arg-type]


LISTS = CommitLists(
    base="manifest-list-b-0", base_size=11, delta="manifest-list-d-1", delta_size=22
)


def build(
    latest: Snapshot | None,
    change: PlannedChange,
    lists: CommitLists = LISTS,
    kind: CommitKind = CommitKind.APPEND,
) -> Snapshot:
    return next_snapshot(
        latest,
        change,
        lists,
        commit_kind=kind,
        commit_identifier=42,
        schema_id=2,
        commit_user=USER,
        time_millis=NOW,
    )


def paimon_json(snap: Snapshot) -> dict[str, object]:
    return dict(json.loads(snap.to_json()))


# ---------------------------------------------------------------------- next snapshot
def test_first_commit() -> None:
    change = PlannedChange([entry(ADD, "a", 10), entry(ADD, "b", 5)])
    assert paimon_json(build(None, change)) == {
        "version": 3,
        "id": 1,
        "schemaId": 2,
        "baseManifestList": "manifest-list-b-0",
        "deltaManifestList": "manifest-list-d-1",
        "commitUser": USER,
        "commitIdentifier": 42,
        "commitKind": "APPEND",
        "timeMillis": NOW,
        "totalRecordCount": 15,
        "deltaRecordCount": 15,
        "baseManifestListSize": 11,
        "deltaManifestListSize": 22,
    }


def test_append_after_base_inherits_its_index_manifest() -> None:
    latest = snapshot(id=7, total_record_count=100, index_manifest="index-manifest-a-0")
    got = build(latest, PlannedChange([entry(ADD, "c", 3)]))
    assert (got.id, got.total_record_count, got.delta_record_count) == (8, 103, 3)
    assert got.index_manifest == "index-manifest-a-0"
    assert got.changelog_manifest_list is None and got.changelog_record_count is None
    assert (got.base_manifest_list, got.delta_manifest_list) == (LISTS.base, LISTS.delta)


def test_compaction_deletes_and_adds_with_changelog() -> None:
    # three files (10 + 20 + 30 rows) merge into one of 55: five duplicate keys folded
    change = PlannedChange(
        [
            entry(DELETE, "l0-a", 10),
            entry(DELETE, "l0-b", 20),
            entry(DELETE, "l1-c", 30, level=1),
            entry(ADD, "l5-d", 55, level=5),
        ],
        changelog=[entry(ADD, "changelog-1", 4), entry(ADD, "changelog-2", 6)],
    )
    lists = CommitLists(
        base="manifest-list-b-0",
        base_size=11,
        delta="manifest-list-d-1",
        delta_size=22,
        changelog="manifest-list-c-2",
        changelog_size=33,
    )
    got = build(snapshot(id=12, total_record_count=200), change, lists, CommitKind.COMPACT)
    doc = paimon_json(got)
    assert doc["id"] == 13
    assert doc["commitKind"] == "COMPACT"
    assert (doc["totalRecordCount"], doc["deltaRecordCount"]) == (195, -5)
    assert (doc["changelogManifestList"], doc["changelogManifestListSize"]) == (
        "manifest-list-c-2",
        33,
    )
    assert doc["changelogRecordCount"] == 10
    assert "indexManifest" not in doc


def test_overwrite_replaces_the_matching_partitions() -> None:
    p1, p2 = part(1), part(2)
    live = [
        entry(ADD, "p1-a", 10, partition=p1),
        entry(ADD, "p1-b", 7, partition=p1, level=3),
        entry(ADD, "p2-a", 40, partition=p2),
    ]
    live_index = [index_entry(ADD, "idx-p1", p1), index_entry(ADD, "idx-p2", p2)]
    new_index = index_entry(ADD, "idx-p1-new", p1)
    change = overwrite_change(
        live,
        live_index,
        lambda p: p == p1,
        [entry(ADD, "p1-new", 4, partition=p1)],
        (),
        [new_index],
    )
    assert change.entries == [
        entry(DELETE, "p1-a", 10, partition=p1),
        entry(DELETE, "p1-b", 7, partition=p1, level=3),
        entry(ADD, "p1-new", 4, partition=p1),
    ]
    assert change.index_changes == [index_entry(DELETE, "idx-p1", p1), new_index]
    lists = CommitLists(
        base="manifest-list-b-0",
        base_size=11,
        delta="manifest-list-d-1",
        delta_size=22,
        index_manifest="index-manifest-new-0",
    )
    got = build(snapshot(total_record_count=57), change, lists, CommitKind.OVERWRITE)
    assert paimon_json(got)["commitKind"] == "OVERWRITE"
    assert (got.id, got.total_record_count, got.delta_record_count) == (8, 44, -13)
    assert got.index_manifest == "index-manifest-new-0"


def test_index_changes_that_leave_no_index_drop_the_index_manifest() -> None:
    latest = snapshot(index_manifest="index-manifest-a-0")
    change = PlannedChange([], index_changes=[index_entry(DELETE, "idx")])
    assert build(latest, change).index_manifest is None  # none written: nothing stays live


def test_inconsistent_lists_are_refused() -> None:
    with_changelog = PlannedChange([entry(ADD, "a", 1)], changelog=[entry(ADD, "c", 1)])
    with pytest.raises(CommitError, match="changelog"):
        build(None, with_changelog)  # no changelog list for a changelog
    stray_index = CommitLists("manifest-list-b-0", 1, "manifest-list-d-1", 1, index_manifest="x")
    with pytest.raises(CommitError, match="index"):
        build(None, PlannedChange([entry(ADD, "a", 1)]), stray_index)


def test_ids_and_record_delta() -> None:
    assert next_snapshot_id(None) == 1
    assert next_snapshot_id(snapshot(id=41)) == 42
    assert record_delta([entry(ADD, "a", 3), entry(DELETE, "b", 5), entry(ADD, "c", 1)]) == -1
    assert record_delta([]) == 0


def test_commit_kind_is_its_json_string() -> None:
    assert [k.value for k in CommitKind] == ["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"]
    built = build(None, PlannedChange([]), kind=CommitKind.COMPACT)
    stored = Snapshot.from_json(built.to_json())
    assert stored.commit_kind == CommitKind.COMPACT and stored.commit_kind == "COMPACT"
    # a built snapshot carries the plain string, like one read back (XCom, JSON, repr agree)
    assert type(built.commit_kind) is str and built == stored


# ---------------------------------------------------------------------- manifest metadata
def test_manifest_file_meta() -> None:
    entries = [
        entry(ADD, "a", 1, partition=part(3), bucket=2, level=0),
        entry(DELETE, "b", 1, partition=part(1), bucket=0, level=5),
        entry(ADD, "c", 1, partition=part(None), bucket=1, level=2),
        entry(ADD, "d", 1, partition=part(3), bucket=1, level=1),
    ]
    meta = manifest_file_meta(
        entries, file_name="manifest-x-0", file_size=999, schema_id=3, partition_types=[INT]
    )
    stats = meta.partition_stats
    assert binary_row.deserialize(stats.min_values, [INT]) == (1,)
    assert binary_row.deserialize(stats.max_values, [INT]) == (3,)
    assert stats.null_counts == (1,)
    assert meta == ManifestFileMeta(
        file_name="manifest-x-0",
        file_size=999,
        num_added_files=3,
        num_deleted_files=1,
        partition_stats=stats,
        schema_id=3,
        min_bucket=0,
        max_bucket=2,
        min_level=0,
        max_level=5,
        total_buckets=4,
    )


def test_manifest_file_meta_without_partitions() -> None:
    meta = manifest_file_meta(
        [entry(ADD, "a", 1)], file_name="m", file_size=1, schema_id=0, partition_types=[]
    )
    assert meta.partition_stats == SimpleStats(NO_PARTITION, NO_PARTITION, ())


# ---------------------------------------------------------------------- attempt decisions
def test_deletes_must_still_be_live() -> None:
    kept, gone = entry(DELETE, "kept", 1), entry(DELETE, "gone", 1, level=2)
    live = {kept.identifier, entry(ADD, "gone", 1, level=1).identifier}  # "gone" moved level
    assert has_deletes([entry(ADD, "a", 1), kept]) and not has_deletes([entry(ADD, "a", 1)])
    check_deletes_live([kept, entry(ADD, "new", 1)], live)
    with pytest.raises(CommitConflictError, match="'gone'"):
        check_deletes_live([kept, gone], live)


@pytest.mark.parametrize(
    ("snapshot_id", "earliest", "stale"),
    [(5, None, False), (5, 4, False), (5, 5, True), (5, 9, True), (1, 1, True)],
)
def test_base_is_stale(snapshot_id: int, earliest: int | None, stale: bool) -> None:
    assert base_is_stale(snapshot_id, earliest) is stale


def test_new_base_manifests_are_the_ones_not_in_the_latest() -> None:
    def metas(*names: str) -> list[ManifestFileMeta]:
        return [ManifestFileMeta(n, 1, 1, 0, SimpleStats(), 0) for n in names]

    latest = metas("manifest-a", "manifest-b")
    assert new_base_manifests(metas("manifest-merged"), latest) == ["manifest-merged"]
    assert new_base_manifests(metas("manifest-b", "manifest-a"), latest) == []
    assert new_base_manifests([], latest) == []
