"""Branches (lakeops.maintenance.branches) against a plain model of the rows of each branch:
created from a tag (also of an expired snapshot), a snapshot or empty; written, changed and
compacted apart from the main branch; listed; fast-forwarded (and a fast-forward cut short at
any file, then run again, ends where an uninterrupted one does); deleted; the main branch's
expiry and orphan cleanup keep every file a branch references; refusals change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError, SnapshotNotFoundError
from lakeops.io.file_io import FileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def _rows(table: Any) -> dict[int, str | None]:
    return {r["id"]: r["v"] for r in table.read().to_pylist()}


def _data(pairs: dict[int, str]) -> pa.Table:
    return pa.table({"id": list(pairs), "v": list(pairs.values())}, schema=SCHEMA)


def _table(catalog: Catalog, keyed: bool = True) -> Any:
    keys = ["id"] if keyed else []
    options = {"bucket": "1"} if keyed else {}
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=keys, options=options)
    table.write(_data({1: "a", 2: "b"}))
    table.create_tag("t1")
    table.write(_data({3: "main"}))
    return table


@pytest.mark.parametrize("keyed", [True, False])
def test_a_branch_lives_apart_and_fast_forwards(catalog: Catalog, keyed: bool) -> None:
    table = _table(catalog, keyed)
    table.create_branch("dev", from_tag="t1")
    dev = table.branch("dev")
    assert _rows(dev) == {1: "a", 2: "b"} and dev.tags()[0].name == "t1"
    dev.write(_data({4: "dev"}))
    dev.delete(pc.field("id") == 1)
    dev.compact(full=True)
    table.write(_data({5: "main2"}))
    assert _rows(dev) == {2: "b", 4: "dev"}
    assert _rows(table) == {1: "a", 2: "b", 3: "main", 5: "main2"}
    assert _rows(catalog.get_table("db.t$branch_dev")) == _rows(dev)
    assert [b.name for b in table.branches()] == ["dev"]
    snapshot = table.fast_forward("dev")
    main = catalog.get_table("db.t")
    assert _rows(main) == {2: "b", 4: "dev"}
    assert snapshot.id == main.latest_snapshot().id == dev.latest_snapshot().id
    main.write(_data({6: "after"}))  # the main branch goes on from the branch
    assert _rows(catalog.get_table("db.t")) == {2: "b", 4: "dev", 6: "after"}
    table.delete_branch("dev")
    assert table.branches() == []


def test_create_from_a_snapshot_and_empty(catalog: Catalog) -> None:
    table = _table(catalog)
    table.create_branch("at1", from_snapshot=1)
    table.create_branch("empty")
    assert _rows(table.branch("at1")) == {1: "a", 2: "b"}
    empty = table.branch("empty")
    assert empty.latest_snapshot() is None and empty.read().num_rows == 0
    empty.write(_data({9: "x"}))
    assert _rows(empty) == {9: "x"}
    with pytest.raises(ConfigurationError, match="exists already"):
        table.create_branch("empty")
    assert table.create_branch("empty", ignore_if_exists=True).name == "empty"


def test_a_branch_of_an_expired_snapshot_comes_from_its_tag(catalog: Catalog) -> None:
    table = _table(catalog)
    for i in range(4):
        table.write(_data({10 + i: "w"}))
    table.expire_snapshots(retain_min=1, retain_max=1)
    assert not table.store.snapshot_exists(1)
    with pytest.raises(SnapshotNotFoundError):
        table.create_branch("gone", from_snapshot=1)
    table.create_branch("kept", from_tag="t1")
    assert _rows(table.branch("kept")) == {1: "a", 2: "b"}


@pytest.mark.parametrize(
    ("name", "message"),
    [("main", "main branch"), ("123", "only digits"), ("a/b", "'/'"), ("  ", "blank")],
)
def test_bad_names_are_refused(catalog: Catalog, warehouse: Path, name: str, message: str) -> None:
    table = _table(catalog)
    before = sorted(p for p in warehouse.rglob("*") if p.is_file())
    with pytest.raises(ConfigurationError, match=message):
        table.create_branch(name)
    assert sorted(p for p in warehouse.rglob("*") if p.is_file()) == before


def test_maintenance_runs_on_the_main_branch_and_keeps_branches(catalog: Catalog) -> None:
    table = _table(catalog)
    table.create_branch("dev", from_tag="t1")
    dev = table.branch("dev")
    dev.write(_data({7: "dev"}))
    for name in ("expire_snapshots", "remove_orphan_files", "create_branch"):
        with pytest.raises(ConfigurationError, match="main branch"):
            getattr(dev, name)(*(["x"] if name == "create_branch" else []))
    table.delete_tag("t1")
    for i in range(3):
        table.write(_data({20 + i: "w"}))
    table.expire_snapshots(retain_min=1, retain_max=1)
    import datetime as dt

    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert _rows(table.branch("dev")) == {1: "a", 2: "b", 7: "dev"}
    assert table.check().ok


class _CutShort(Exception):
    pass


@pytest.mark.parametrize("cut_at", range(0, 12))
def test_a_fast_forward_cut_short_is_completed_by_running_it_again(
    catalog: Catalog, cut_at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast-forward stops at its ``cut_at``-th file operation; the table reads as one of
    the two branches meanwhile, and running it again gives the uninterrupted result."""
    table = _table(catalog)
    table.create_branch("dev", from_tag="t1")
    dev = table.branch("dev")
    dev.write(_data({4: "dev"}))
    table.write(_data({5: "main2"}))
    table.create_tag("late")
    calls = {"n": 0}
    real_write, real_delete = FileIO.overwrite_atomic, FileIO.delete

    def counted(real: Any) -> Any:
        def op(self: FileIO, *args: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == cut_at + 1:
                raise _CutShort
            return real(self, *args)

        return op

    monkeypatch.setattr(FileIO, "overwrite_atomic", counted(real_write))
    monkeypatch.setattr(FileIO, "delete", counted(real_delete))
    try:
        table.fast_forward("dev")
        finished = True
    except _CutShort:
        finished = False
    monkeypatch.setattr(FileIO, "overwrite_atomic", real_write)
    monkeypatch.setattr(FileIO, "delete", real_delete)
    middle = _rows(catalog.get_table("db.t"))
    assert middle in ({1: "a", 2: "b", 3: "main", 5: "main2"}, {1: "a", 2: "b", 4: "dev"})
    if not finished:
        table.fast_forward("dev")
    main = catalog.get_table("db.t")
    assert _rows(main) == {1: "a", 2: "b", 4: "dev"}
    assert [t.name for t in main.tags()] == ["t1"]
    assert main.check().ok
