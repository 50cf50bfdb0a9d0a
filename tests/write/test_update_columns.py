"""Column updates by row id of a data-evolution table (lakeops.write.update_columns), against
a plain model (row id -> row) over random commits: appends, updates of random column subsets
of random rows, reads at every step; the files they write (one per updated row-id group,
only the updated columns, the group's first row id); refusals that write nothing; an update
whose rows an overwrite replaced before it published is refused; compactions between the
steps change no row; an update and a compaction that race never leave rows readers cannot
line up."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import (
    CommitConflictError,
    ConfigurationError,
    DataValidationError,
    UnsupportedFeatureError,
)

SCHEMA = pa.schema(
    [("id", pa.int64()), ("p", pa.string()), ("s", pa.string()), ("x", pa.float64())]
)
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
READ = ["id", "p", "s", "x", "_ROW_ID"]


def _table(catalog: Catalog, **options: str):
    return catalog.create_table(
        "db.t", schema=SCHEMA, partition_keys=["p"], options={**EVOLUTION, **options}
    )


def _rows(table) -> dict[int, dict[str, Any]]:
    return {r.pop("_ROW_ID"): r for r in table.read(columns=READ).to_pylist()}


def test_random_updates_match_the_model(catalog: Catalog) -> None:
    rng = random.Random(3)
    table = _table(catalog)
    model: dict[int, dict[str, Any]] = {}
    next_id = 0
    for step in range(8):
        n = rng.randrange(1, 7)
        batch = [
            {"id": next_id + i, "p": rng.choice("ab"), "s": f"s{step}-{i}", "x": float(i)}
            for i in range(n)
        ]
        table.write(pa.Table.from_pylist(batch, schema=SCHEMA))
        got = _rows(table)
        # the new rows hold the next n ids (the model learns which id each got)
        new_ids = sorted(rid for rid in got if rid not in model)
        assert new_ids == list(range(next_id, next_id + n))
        model.update({rid: got[rid] for rid in new_ids})
        assert sorted(r["id"] for r in got.values()) == sorted(r["id"] for r in model.values())
        next_id += n
        cols = rng.sample(["s", "x"], rng.randrange(1, 3))
        ids = rng.sample(sorted(model), rng.randrange(1, min(4, len(model)) + 1))
        values: dict[str, list[Any]] = {"_ROW_ID": ids}
        for c in cols:
            values[c] = [
                None if rng.random() < 0.2 else (f"u{step}" if c == "s" else -step - 0.5)
                for _ in ids
            ]
        for j, rid in enumerate(ids):
            for c in cols:
                model[rid][c] = values[c][j]
        data = pa.table({"_ROW_ID": pa.array(ids, pa.int64()), **{c: values[c] for c in cols}})
        before = len(table.snapshots())
        table.update_columns(data)
        assert len(table.snapshots()) == before + 1
        assert _rows(table) == model, step
        if step % 3 == 2:  # a compaction merges the groups' columns; nobody sees a change
            table.compact(full=True)
            assert _rows(table) == model, step


def test_one_file_per_updated_group_of_the_updated_columns(catalog: Catalog) -> None:
    table = _table(catalog)
    table.write(
        pa.table(
            {"id": [1, 2, 3], "p": ["a", "b", "a"], "s": ["x", "y", "z"], "x": [1.0, 2.0, 3.0]},
            schema=SCHEMA,
        )
    )
    before = {f.file_name for s in table.splits() for f in s.files}
    got = _rows(table)
    a_ids = sorted(rid for rid, r in got.items() if r["p"] == "a")
    snapshot = table.update_columns(
        pa.table({"_ROW_ID": pa.array([a_ids[1]], pa.int64()), "x": [7.5]}), columns=["x"]
    )
    new = [(s.partition, f) for s in table.splits() for f in s.files if f.file_name not in before]
    assert len(new) == 1
    partition, f = new[0]
    assert partition == ("a",)
    assert (f.first_row_id, f.row_count, f.write_cols) == (a_ids[0], 2, ("x",))
    assert f.min_sequence_number == f.max_sequence_number == snapshot.id
    assert snapshot.next_row_id == 3  # updates take no new row ids
    got[a_ids[1]]["x"] = 7.5
    assert _rows(table) == got


def test_refusals_write_nothing(catalog: Catalog, warehouse: Path) -> None:
    table = _table(catalog)
    table.write(
        pa.table({"id": [1, 2], "p": ["a", "a"], "s": ["x", "y"], "x": [1.0, 2.0]}, schema=SCHEMA)
    )
    files = sorted(p.name for p in warehouse.rglob("*") if p.is_file())
    bad = [
        (pa.table({"s": ["q"]}), DataValidationError, "_ROW_ID"),
        (
            pa.table({"_ROW_ID": pa.array([5], pa.int64()), "s": ["q"]}),
            ConfigurationError,
            "not rows",
        ),
        (
            pa.table({"_ROW_ID": pa.array([0, 0], pa.int64()), "s": ["q", "r"]}),
            DataValidationError,
            "unique",
        ),
        (
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "p": ["b"]}),
            DataValidationError,
            "partition",
        ),
        (
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "nope": ["b"]}),
            DataValidationError,
            "not a column",
        ),
        (
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "x": ["abc"]}),
            DataValidationError,
            "cannot hold",
        ),
    ]
    for data, error, match in bad:
        with pytest.raises(error, match=match):
            table.update_columns(data)
    assert sorted(p.name for p in warehouse.rglob("*") if p.is_file()) == files
    plain = catalog.create_table(
        "db.plain", schema=SCHEMA, options={"row-tracking.enabled": "true"}
    )
    plain.write(pa.table({"id": [1], "p": ["a"], "s": ["x"], "x": [1.0]}, schema=SCHEMA))
    with pytest.raises(UnsupportedFeatureError, match=r"data-evolution\.enabled"):
        plain.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "s": ["q"]}))


def test_an_update_of_rows_an_overwrite_replaced_is_refused(
    catalog: Catalog, warehouse: Path
) -> None:
    """The update reads snapshot 1; an overwrite replaces its rows before it publishes."""
    table = _table(catalog)
    table.write(
        pa.table({"id": [1, 2], "p": ["a", "a"], "s": ["x", "y"], "x": [1.0, 2.0]}, schema=SCHEMA)
    )
    other = catalog.get_table("db.t")
    real_commit = table.commit

    def overwritten_first(messages, **kw):
        other.write(
            pa.table({"id": [9], "p": ["a"], "s": ["o"], "x": [0.0]}, schema=SCHEMA),
            overwrite=True,
        )
        return real_commit(messages, **kw)

    table.commit = overwritten_first  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError, match="replaced"):
        table.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "s": ["q"]}))
    table.commit = real_commit  # type: ignore[method-assign]
    assert _rows(catalog.get_table("db.t")) == {2: {"id": 9, "p": "a", "s": "o", "x": 0.0}}
    live = {f.file_name for s in table.splits() for f in s.files}
    on_disk = {p.name for p in (warehouse / "db.db" / "t").glob("p=*/bucket-0/*")}
    # the overwritten files stay until expiry; the update's own file is gone
    assert not [n for n in on_disk - live if n not in _overwritten(table)]


def _overwritten(table) -> set[str]:
    """Names of the files snapshot 1 held (replaced by the overwrite)."""
    return {f.file_name for s in table.splits(snapshot_id=1) for f in s.files}


def test_column_subset_append_is_refused_naming_update_columns(
    catalog: Catalog, warehouse: Path
) -> None:
    """A write lacking columns of a data-evolution table is refused before anything is
    written; the error says what Paimon's column-subset append would mean (new row ids, the
    missing columns null) and points to update_columns for existing rows."""
    table = _table(catalog)
    with pytest.raises(
        DataValidationError, match=r"missing column\(s\) \['s', 'x'\].*update_columns"
    ):
        table.write(pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]}))
    assert table.latest_snapshot() is None
    assert not [
        p for p in (warehouse / "db.db" / "t").rglob("*") if p.is_file() and "schema" not in p.parts
    ]


def _two_groups(catalog: Catalog):
    """Rows 0-1 and 2-3 of partition a (two row-id groups that follow one another)."""
    table = _table(catalog)
    for ids in ((0, 1), (2, 3)):
        rows = [{"id": i, "p": "a", "s": f"s{i}", "x": float(i)} for i in ids]
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    return table


def test_a_compaction_that_merged_groups_an_update_wrote_into_meanwhile_commits_nothing(
    catalog: Catalog, warehouse: Path
) -> None:
    """The compaction (merging [0,2) and [2,4)) is planned; an update of row 1 commits
    before it: committing the merge would leave a file of rows [0,2) beside one of [0,4),
    which no reader could line up, so the compaction is refused and its file deleted."""
    table = _two_groups(catalog)
    real = table.commit_compaction

    def updated_first(messages, **kw):
        catalog.get_table("db.t").update_columns(
            pa.table({"_ROW_ID": pa.array([1], pa.int64()), "s": ["upd"]})
        )
        return real(messages, **kw)

    table.commit_compaction = updated_first  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError, match="merged"):
        table.compact(full=True)
    table = catalog.get_table("db.t")
    assert _rows(table)[1]["s"] == "upd" and len(_rows(table)) == 4
    live = {f.file_name for s in table.splits() for f in s.files}
    on_disk = {p.name for p in (warehouse / "db.db" / "t").glob("p=*/bucket-0/*")}
    assert on_disk == live
    assert table.compact(full=True) is not None  # on the new snapshot it merges all three
    assert {r["s"] for r in _rows(table).values()} == {"s0", "upd", "s2", "s3"}


def test_an_update_racing_a_compaction_of_its_group_wins(catalog: Catalog) -> None:
    """Each group compacted alone (a group of two files: a row and its update) keeps its row
    ids, so an update planned before that compaction still lines up after it and, newer,
    supplies its column; an update planned before a merge of groups is refused instead."""
    table = _table(catalog, **{"target-file-size": "1 b"})  # every group above the target
    for ids in ((0, 1), (2, 3)):
        rows = [{"id": i, "p": "a", "s": f"s{i}", "x": float(i)} for i in ids]
        table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    table.update_columns(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "x": [-1.0]}))
    other = catalog.get_table("db.t")
    real = other.commit

    def compacted_first(messages, **kw):
        assert catalog.get_table("db.t").compact(full=True) is not None
        return real(messages, **kw)

    other.commit = compacted_first  # type: ignore[method-assign]
    other.update_columns(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "s": ["late"]}))
    got = _rows(catalog.get_table("db.t"))
    assert got[0]["x"] == -1.0 and got[1]["s"] == "late" and got[2]["s"] == "s2"
