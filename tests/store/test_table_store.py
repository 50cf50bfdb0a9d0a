"""Table metadata access (:mod:`lakeops.store`) on tables written by pypaimon 2.1 and Java
Paimon 0.9 (the golden warehouses): the live files and per-commit changes agree with what the
writers recorded (record counts in their snapshot JSON, the data files on disk); ``LATEST`` and
``EARLIEST`` are hints only; missing and broken files are named errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lakeops.errors import CorruptMetadataError, LakeopsError, TableNotFoundError
from lakeops.format.manifest import FileKind
from lakeops.io.file_io import FileIO
from lakeops.store import TableStore
from tests.conftest import GOLDEN

TABLES = ["s1_buckets", "s2_partitioned", "s3_seqfield", "s4_partial", "s5_agg", "s6_firstrow"]
WAREHOUSES = ["pypaimon-wh", "java-compacted-wh"]


def _store(root: Path) -> TableStore:
    return TableStore(FileIO(str(root)), str(root))


def _json(root: Path, sid: int) -> dict:
    return json.loads((root / "snapshot" / f"snapshot-{sid}").read_text())


def _data_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("data-*") if p.is_file()}


@pytest.mark.parametrize("warehouse", WAREHOUSES)
@pytest.mark.parametrize("name", TABLES)
def test_live_files_and_changes_agree_with_the_writer(warehouse: str, name: str) -> None:
    root = GOLDEN / warehouse / "db.db" / name
    store = _store(root)
    ids = store.snapshot_ids()
    assert ids == sorted(int(p.name[9:]) for p in (root / "snapshot").glob("snapshot-*"))
    previous: set[tuple] = set()
    for sid in ids:
        snapshot = store.snapshot(sid)
        written = _json(root, sid)
        live = store.live_entries(snapshot)
        # the writer's own counts: every record of the live files, and this commit's change
        assert sum(e.file.row_count for e in live) == written["totalRecordCount"], sid
        delta = store.delta_entries(snapshot)
        signed = sum(e.file.row_count * (1 if e.kind == FileKind.ADD else -1) for e in delta)
        assert signed == written["deltaRecordCount"], sid
        # live files = the previous live files, less this commit's deletes, plus its adds
        added = {e.identifier for e in delta if e.kind == FileKind.ADD}
        deleted = {e.identifier for e in delta if e.kind != FileKind.ADD}
        assert {e.identifier for e in live} == (previous - deleted) | added, sid
        assert {e.file.file_name for e in live} <= _data_files(root)
        previous = {e.identifier for e in live}
    if warehouse == "pypaimon-wh":  # never compacted: every data file on disk is live
        assert {i[3] for i in previous} == _data_files(root)
    assert store.latest_snapshot() == store.snapshot(ids[-1])
    assert store.latest_schema().id == store.schema_ids()[-1] == 0


@pytest.fixture
def table_copy(tmp_path: Path) -> Path:
    """A writable copy of a Java-compacted table (snapshots 1-4, an ``EARLIEST`` hint)."""
    target = tmp_path / "s1_buckets"
    shutil.copytree(GOLDEN / "java-compacted-wh" / "db.db" / "s1_buckets", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target


@pytest.mark.parametrize("hint", [None, b"1", b"99", b"not a number", b""])
def test_latest_is_found_whatever_the_hint_says(table_copy: Path, hint: bytes | None) -> None:
    latest = table_copy / "snapshot" / "LATEST"
    latest.unlink()
    if hint is not None:
        latest.write_bytes(hint)
    assert _store(table_copy).latest_snapshot_id() == 4


def test_a_snapshot_published_after_the_hint_is_seen(table_copy: Path) -> None:
    store = _store(table_copy)
    assert store.latest_snapshot_id() == 4
    text = (table_copy / "snapshot" / "snapshot-4").read_text()
    (table_copy / "snapshot" / "snapshot-5").write_text(text.replace('"id" : 4', '"id" : 5'))
    assert store.latest_snapshot_id() == 5  # LATEST still says 4


@pytest.mark.parametrize("hint", [None, b"1", b"garbage"])
def test_earliest_after_expiry(table_copy: Path, hint: bytes | None) -> None:
    (table_copy / "snapshot" / "snapshot-1").unlink()
    earliest = table_copy / "snapshot" / "EARLIEST"
    earliest.unlink()
    if hint is not None:
        earliest.write_bytes(hint)
    assert _store(table_copy).earliest_snapshot_id() == 2  # a stale hint is not believed


def test_missing_and_broken_snapshots_are_named(table_copy: Path) -> None:
    store = _store(table_copy)
    with pytest.raises(LakeopsError, match="snapshot 99 does not exist"):
        store.snapshot(99)
    (table_copy / "snapshot" / "snapshot-1").unlink()
    with pytest.raises(LakeopsError, match="expired"):
        store.changelog_or_snapshot(1)
    (table_copy / "snapshot" / "snapshot-3").write_text('{"id": 3, "schemaId"')
    with pytest.raises(CorruptMetadataError, match="snapshot/snapshot-3"):
        store.snapshot(3)


def test_missing_manifest_is_named(table_copy: Path) -> None:
    store = _store(table_copy)
    snapshot = store.snapshot(4)
    (table_copy / "manifest" / snapshot.delta_manifest_list).unlink()
    with pytest.raises(CorruptMetadataError, match=snapshot.delta_manifest_list):
        store.delta_entries(snapshot)


def test_no_schema_is_no_table(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.schema_ids() == []
    assert store.latest_snapshot() is None and store.live_entries(None) == []
    with pytest.raises(TableNotFoundError, match="no schema files"):
        store.latest_schema()
