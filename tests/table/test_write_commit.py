"""One write and one commit for both table kinds (``BaseTable.write`` / ``commit``), checked
against a plain model of the rows written: overwrites of the whole table and of listed
partitions, an append table's commit published as written, and automatic tags on an append
table's writes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

import lakeops.commit.committer as committer_module
from lakeops import AppendTable, Catalog, Table
from lakeops.format.manifest import FileKind

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])

Row = tuple[str, int, str]


def _rows(table: Table | AppendTable) -> list[Row]:
    got = table.read().to_pylist()
    return sorted((r["dt"], r["k"], r["v"]) for r in got)


def _data(rows: list[Row]) -> pa.Table:
    return pa.table(
        {"dt": [r[0] for r in rows], "k": [r[1] for r in rows], "v": [r[2] for r in rows]},
        schema=SCHEMA,
    )


def _open(catalog: Catalog, kind: str) -> Table | AppendTable:
    keys = ["dt", "k"] if kind == "primary-key" else []
    options = {"bucket": "2"} if kind == "primary-key" else {}
    return catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options
    )


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_write_overwrites_the_table_or_the_listed_partitions(catalog: Catalog, kind: str) -> None:
    table = _open(catalog, kind)
    first = [("a", 1, "x"), ("a", 2, "y"), ("b", 3, "z")]
    table.write(_data(first))
    model = list(first)

    # a partition overwrite replaces the rows of "a" only
    snapshot = table.write(_data([("a", 9, "n")]), overwrite=[{"dt": "a"}])
    model = [r for r in model if r[0] != "a"] + [("a", 9, "n")]
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    assert _rows(table) == sorted(model)

    # a whole-table overwrite with no rows empties the table
    snapshot = table.write(_data([]), overwrite=True)
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    assert _rows(table) == []

    # no rows and no overwrite: nothing is committed
    assert table.write(_data([])) is None
    assert table.latest_snapshot() == snapshot


def test_an_append_table_commit_publishes_its_files_as_written(catalog: Catalog) -> None:
    """Two writers of an append table prepared on the same base: the later commit's files are
    published as they were written (no re-sequencing, no stale key placement: nothing is
    merged by key), and every row of both is in the table."""
    table = _open(catalog, "append")
    first, second = table.new_write(), table.new_write()
    first.write(_data([("a", 1, "x")]))
    second.write(_data([("a", 2, "y"), ("b", 3, "z")]))
    early, late = first.prepare_commit(), second.prepare_commit()
    table.commit(early)
    snapshot = table.commit(late)
    assert snapshot is not None and snapshot.commit_kind == "APPEND"
    added = {
        e.file.file_name for e in table.store.delta_entries(snapshot) if e.kind == FileKind.ADD
    }
    assert added == {f.file_name for m in late for f in m.new_files}
    assert _rows(table) == [("a", 1, "x"), ("a", 2, "y"), ("b", 3, "z")]


class _Clock:
    """The committer's ``time`` module at a scripted local time."""

    def __init__(self) -> None:
        self.now = dt.datetime(2024, 1, 1, 10)
        self.sleep = lambda _seconds: None

    def time(self) -> float:
        return self.now.timestamp()


def test_an_append_table_write_creates_automatic_tags(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Automatic tags follow every commit of either kind, an append table's writes included
    (Paimon's commit callback runs for both)."""
    clock = _Clock()
    monkeypatch.setattr(committer_module, "time", clock)
    options: dict[str, Any] = {"tag.automatic-creation": "process-time"}
    table = catalog.create_table("db.t", schema=SCHEMA, options=options)
    assert isinstance(table, AppendTable)
    table.write(_data([("a", 1, "x")]))
    clock.now = dt.datetime(2024, 1, 2, 1)
    table.write(_data([("a", 2, "y")]))
    # as for primary-key tables: the first snapshot tags the day before its own, then one
    # tag per day ended
    assert [(t.name, t.snapshot.id) for t in table.tags()] == [
        ("2023-12-31", 1),
        ("2024-01-01", 2),
    ]
