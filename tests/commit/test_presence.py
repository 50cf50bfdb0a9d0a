"""A commit never publishes a snapshot that names a missing file: the files it adds are checked
before the publish, and a commit whose files were deleted meanwhile (a forced orphan cleanup
between ``prepare_commit`` and ``commit``) is refused with nothing published."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.commit.presence import CommitPresence, verify_present
from lakeops.commit.snapshot_builder import PlannedChange
from lakeops.errors import MissingCommitFileError
from lakeops.format.manifest import FileKind, ManifestEntry
from tests.interop.oracle import oracle_read

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _pairs(table: pa.Table) -> dict[int, str]:
    return dict(zip(table["id"].to_pylist(), table["v"].to_pylist(), strict=True))


def _prepared_then_orphaned(table: Table) -> tuple[list, tuple[str, ...]]:
    """Base rows 0..9 committed; a writer prepares rows 5..19 and, before it commits, a
    forced orphan cleanup deletes its data files. Returns its messages and what was deleted."""
    table.write(_rows(range(10), "a"))
    writer = table.new_write()
    writer.write(_rows(range(5, 20), "b"))
    messages = writer.prepare_commit()
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True).deleted
    assert removed and all("bucket-" in name for name in removed)  # the writer's data files
    return messages, removed


def _manifest_names(root: Path) -> set[str]:
    return {p.name for p in (root / "manifest").iterdir()}


def test_a_commit_whose_files_were_deleted_is_refused_and_publishes_nothing(
    catalog: Catalog, warehouse: Path
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    messages, removed = _prepared_then_orphaned(table)
    root = warehouse / "db.db" / "t"
    latest = table.latest_snapshot()
    manifests = _manifest_names(root)
    with pytest.raises(MissingCommitFileError) as refused:
        table.commit(messages)
    assert set(refused.value.paths) == set(removed)
    for name in removed:
        assert name in str(refused.value)
    assert "nothing was committed" in str(refused.value)
    assert table.latest_snapshot() == latest
    assert _manifest_names(root) == manifests  # the commit's own manifests were withdrawn
    assert _pairs(table.read()) == {i: f"a{i}" for i in range(10)}
    assert table.check().ok
    table.write(_rows(range(5, 20), "c"))  # the table takes the write run again
    assert _pairs(table.read()) == {i: f"a{i}" for i in range(5)} | {
        i: f"c{i}" for i in range(5, 20)
    }


@pytest.mark.interop
def test_after_a_refused_commit_pypaimon_reads_the_table(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    messages, _ = _prepared_then_orphaned(table)
    with pytest.raises(MissingCommitFileError):
        table.commit(messages)
    assert _pairs(oracle_read(warehouse, "db.t")) == {i: f"a{i}" for i in range(10)}


def test_an_append_table_commit_with_a_deleted_file_is_refused(catalog: Catalog) -> None:
    table = catalog.create_table("db.a", schema=SCHEMA, options={"bucket": "-1"})
    table.write(_rows(range(3), "a"))
    writer = table.new_write()
    writer.write(_rows(range(3, 6), "b"))
    messages = writer.prepare_commit()
    assert table.remove_orphan_files(older_than=dt.timedelta(0), force=True).deleted
    latest = table.latest_snapshot()
    with pytest.raises(MissingCommitFileError):
        table.commit(messages)
    assert table.latest_snapshot() == latest
    assert sorted(table.read()["id"].to_pylist()) == [0, 1, 2]


def test_on_s3_a_commit_whose_files_were_deleted_is_refused(
    s3_warehouse: tuple[str, dict],
) -> None:
    uri, storage = s3_warehouse
    catalog = Catalog(uri, storage_options=storage)
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    messages, removed = _prepared_then_orphaned(table)
    latest = table.latest_snapshot()
    with pytest.raises(MissingCommitFileError) as refused:
        table.commit(messages)
    assert set(refused.value.paths) == set(removed)
    assert table.latest_snapshot() == latest
    assert _pairs(table.read()) == {i: f"a{i}" for i in range(10)}


class _CountingExists:
    """Records the paths whose existence is asked (a spy around the real ``exists``)."""

    def __init__(self, table: Table) -> None:
        self.fio = table.store.file_io
        self.real = self.fio.exists
        self.asked: list[str] = []

    def __call__(self, path: str) -> bool:
        self.asked.append(path)
        return self.real(path)


def test_each_file_is_requested_once_per_commit_and_new_files_are_checked(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    writer = table.new_write()
    writer.write(_rows(range(20), "a"))
    messages = writer.prepare_commit()
    entries = [
        ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
        for m in messages
        for f in m.new_files
    ]
    assert len(entries) == 2
    spy = _CountingExists(table)
    monkeypatch.setattr(spy.fio, "exists", spy)
    state = CommitPresence()
    context = table.context
    verify_present(context, PlannedChange(entries[:1]), (), state)
    assert len(spy.asked) == 1
    verify_present(context, PlannedChange(entries[:1]), (), state)  # a retry of the same plan
    assert len(spy.asked) == 1
    verify_present(context, PlannedChange(entries), (), state)  # a re-plan adds a file
    assert len(spy.asked) == 2 and spy.asked[1].endswith(entries[1].file.file_name)
    deletes = [ManifestEntry(FileKind.DELETE, *_fields(e)) for e in entries]
    verify_present(context, PlannedChange(deletes), (), CommitPresence())  # deletes: none
    assert len(spy.asked) == 2


def _fields(e: ManifestEntry) -> tuple:
    return (e.partition, e.bucket, e.total_buckets, e.file)


def test_own_manifests_are_checked_on_retries(catalog: Catalog) -> None:
    """The first check comes right after the commit wrote its manifests; a retry (a later
    check of the same commit) finds one gone and names it."""
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    state = CommitPresence()
    verify_present(table.context, PlannedChange(()), ["manifest-gone-0"], state)
    with pytest.raises(MissingCommitFileError) as refused:
        verify_present(table.context, PlannedChange(()), ["manifest-gone-0"], state)
    assert refused.value.paths == ("manifest/manifest-gone-0",)
