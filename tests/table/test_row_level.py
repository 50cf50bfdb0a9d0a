"""Row-level changes (lakeops.table.row_level) against a plain model of the rows: random
deletes, updates and merges on a primary-key table and on append tables rewritten
copy-on-write, with deletion vectors and with fixed buckets; NULL conditions touch nothing;
refusals (as Paimon refuses) write nothing; racing commits never lose a change silently."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.errors import (
    CommitConflictError,
    ConfigurationError,
    DataValidationError,
    UnsupportedFeatureError,
)

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), False), pa.field("p", pa.string(), False), ("v", pa.int32())]
)
KINDS = {
    "pk": ({"bucket": "2"}, ["p", "id"]),
    "append": ({}, []),
    "append-dv": ({"deletion-vectors.enabled": "true"}, []),
    "append-fixed": ({"bucket": "2", "bucket-key": "id"}, []),
}


def _table(catalog: Catalog, kind: str, name: str = "db.t") -> Any:
    options, keys = KINDS[kind]
    return catalog.create_table(
        name, schema=SCHEMA, primary_keys=keys, partition_keys=["p"], options=options
    )


def _rows(ids: range, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"id": i, "p": rng.choice("ab"), "v": None if rng.random() < 0.15 else rng.randrange(50)}
        for i in ids
    ]


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["id"], r["p"], -1 if r["v"] is None else r["v"])


def _bag(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(_key(r) for r in rows)


def _files(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_size) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("kind", list(KINDS))
def test_random_changes_match_the_model(catalog: Catalog, kind: str) -> None:
    """Appends (ids unique), then deletes (v >= t), updates (v < t: v + 1000, or NULL), and
    merges of a source (existing ids with new v: update; ``source.v < 0``: delete; new ids:
    insert); the model applies each as SQL says. Every step is read back exactly."""
    rng = random.Random(hash(kind) % 1000)
    table = _table(catalog, kind)
    model: list[dict[str, Any]] = []
    next_id = 0
    for step in range(12):
        op = rng.choice(["write", "delete", "update", "merge"]) if step > 1 else "write"
        t = rng.randrange(50)
        if op == "write":
            rows = _rows(range(next_id, next_id + rng.randrange(5, 40)), rng)
            next_id += len(rows)
            table.write(pa.Table.from_pylist(rows, schema=SCHEMA))
            model += rows
        elif op == "delete":
            done = table.delete(pc.field("v") >= t)
            gone = [r for r in model if r["v"] is not None and r["v"] >= t]
            model = [r for r in model if not (r["v"] is not None and r["v"] >= t)]
            assert done.deleted == len(gone)
        elif op == "update":
            value = pc.field("v") + 1000 if rng.random() < 0.5 else None
            done = table.update((pc.field("v") < t) & (pc.field("p") == "a"), {"v": value})
            hit = [r for r in model if r["v"] is not None and r["v"] < t and r["p"] == "a"]
            for r in hit:
                r["v"] = None if value is None else r["v"] + 1000
            assert done.updated == len(hit)
        else:
            existing = rng.sample(model, min(len(model), 5))
            fresh = _rows(range(next_id, next_id + 3), rng)
            next_id += 3
            source = [{**r, "v": rng.randrange(-5, 5)} for r in existing] + fresh
            done = (
                table.merge(pa.Table.from_pylist(source, schema=SCHEMA), on=["id", "p"])
                .when_matched_delete(condition=pc.field("source.v") < 0)
                .when_matched_update({"v": pc.field("source.v") * 10})
                .when_not_matched_insert_all()
                .execute()
            )
            by_id = {(r["id"], r["p"]): r for r in source}
            kept = []
            for r in model:
                s = by_id.get((r["id"], r["p"]))
                if s is None:
                    kept.append(r)
                elif s["v"] >= 0:
                    kept.append({**r, "v": s["v"] * 10})
            model = kept + fresh
            assert (done.deleted, done.inserted) == (
                sum(1 for r in existing if by_id[(r["id"], r["p"])]["v"] < 0),
                3,
            )
        assert _bag(table.read().to_pylist()) == _bag(model), (step, op)


@pytest.mark.parametrize("kind", list(KINDS))
def test_nothing_matched_commits_nothing(catalog: Catalog, kind: str) -> None:
    table = _table(catalog, kind)
    table.write(pa.table({"id": [1, 2], "p": ["a", "a"], "v": [None, 3]}, schema=SCHEMA))
    before = table.latest_snapshot()
    # v IS NULL for row 1: NULL > 100 is not true, so it stays
    assert table.delete(pc.field("v") > 100).snapshot_id is None
    assert table.update(pc.field("v") > 100, {"v": 1}).snapshot_id is None
    assert table.latest_snapshot() == before
    assert table.delete(~(pc.field("v") > 100)).deleted == 1  # NOT NULL is NULL: row 1 stays
    assert table.read().column("id").to_pylist() == [1]


@pytest.mark.parametrize(
    ("options", "op", "message"),
    [
        ({"merge-engine": "first-row"}, "delete", "first-row"),
        ({"merge-engine": "partial-update"}, "delete", "remove-record-on-delete"),
        ({"merge-engine": "aggregation"}, "delete", "aggregation.remove-record-on-delete"),
        ({"merge-engine": "aggregation"}, "update", "deduplicate and partial-update"),
        ({"merge-engine": "first-row"}, "merge", "deduplicate and partial-update"),
        ({"ignore-delete": "true"}, "delete", "ignore-delete"),
        ({}, "update-key", "primary key"),
        ({}, "no-condition", "needs a condition"),
        ({}, "bad-value", "does not fit"),
        ({}, "duplicate-source", "several source rows"),
    ],
)
def test_refusals_write_nothing(
    catalog: Catalog, warehouse: Path, options: dict[str, str], op: str, message: str
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["p", "id"], partition_keys=["p"], options=options
    )
    table.write(pa.table({"id": [1, 2], "p": ["a", "a"], "v": [1, 2]}, schema=SCHEMA))
    files = _files(warehouse)
    dup = pa.table({"id": [1, 1], "p": ["a", "a"], "v": [5, 6]}, schema=SCHEMA)
    actions = {
        "delete": lambda: table.delete(pc.field("id") == 1),
        "update": lambda: table.update(pc.field("id") == 1, {"v": 5}),
        "merge": lambda: table.merge(dup, on=["id"]).when_matched_delete().execute(),
        "update-key": lambda: table.update(pc.field("id") == 1, {"id": 5}),
        "no-condition": lambda: table.delete(None),  # type: ignore[arg-type]
        "bad-value": lambda: table.update(pc.field("id") == 1, {"v": 2**40}),
        "duplicate-source": lambda: (
            table.merge(dup, on=["id", "p"]).when_matched_update_all().execute()
        ),
    }
    with pytest.raises((UnsupportedFeatureError, ConfigurationError, DataValidationError)) as e:
        actions[op]()
    assert message in str(e.value)
    assert _files(warehouse) == files


def test_partial_update_and_aggregation_delete_where_paimon_allows(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), False), ("a", pa.int64()), ("b", pa.string())])
    partial = catalog.create_table(
        "db.pu",
        schema=schema,
        primary_keys=["k"],
        options={
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
        },
    )
    partial.write(pa.table({"k": [1, 2], "a": [1, None], "b": [None, "x"]}, schema=schema))
    partial.write(pa.table({"k": [1, 2], "a": [None, 2], "b": ["y", None]}, schema=schema))
    assert partial.delete(pc.field("b") == "x").deleted == 1
    # update: +U of the merged row, the new value set (partial-update keeps non-null fields)
    assert partial.update(pc.field("k") == 1, {"a": 10}).updated == 1
    assert partial.read().to_pylist() == [{"k": 1, "a": 10, "b": "y"}]
    agg = catalog.create_table(
        "db.agg",
        schema=schema,
        primary_keys=["k"],
        options={
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "sum",
            "aggregation.remove-record-on-delete": "true",
        },
    )
    agg.write(pa.table({"k": [1, 2], "a": [1, 2], "b": ["p", "q"]}, schema=schema))
    agg.write(pa.table({"k": [1, 2], "a": [10, 20], "b": ["p", "q"]}, schema=schema))
    assert agg.delete(pc.field("a") > 20).deleted == 1
    assert agg.read().to_pylist() == [{"k": 1, "a": 11, "b": "p"}]


def test_row_tracking_tables_are_refused(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, options={"row-tracking.enabled": "true"})
    table.write(pa.table({"id": [1], "p": ["a"], "v": [1]}, schema=SCHEMA))
    with pytest.raises(UnsupportedFeatureError, match="row tracking"):
        table.delete(pc.field("id") == 1)


def test_a_vector_added_meanwhile_makes_the_delete_conflict(catalog: Catalog) -> None:
    """Two deletes plan on the same snapshot and give the same file a vector: the second to
    commit finds the first's vector in an index file it does not replace — refused, its own
    index file deleted, and retried it deletes its rows on top of the first's."""
    table = _table(catalog, "append-dv")
    table.write(pa.table({"id": [1, 2, 3], "p": ["a"] * 3, "v": [1, 2, 3]}, schema=SCHEMA))
    other = catalog.get_table("db.t")
    real = table._committer

    def first_the_other() -> Any:
        other.delete(pc.field("id") == 1)
        return real()

    table._committer = first_the_other  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError):
        table.delete(pc.field("id") == 3)
    table._committer = real  # type: ignore[method-assign]
    assert sorted(table.read().column("id").to_pylist()) == [2, 3]
    assert table.delete(pc.field("id") == 3).deleted == 1
    assert table.read().column("id").to_pylist() == [2]
    index = Path(table.root) / "index"
    live = {e.file.file_name for e in table.store.index_entries(table.latest_snapshot())}
    assert {p.name for p in index.iterdir()} - live <= {
        e.file.file_name for s in table.snapshots() for e in table.store.index_entries(s)
    }


def test_a_rewrite_whose_file_was_compacted_meanwhile_conflicts(catalog: Catalog) -> None:
    table = _table(catalog, "append")
    for i in range(3):
        table.write(pa.table({"id": [i], "p": ["a"], "v": [i]}, schema=SCHEMA))
    real = table._committer

    def compacted_first() -> Any:
        assert catalog.get_table("db.t").compact(full=True) is not None
        return real()

    table._committer = compacted_first  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError):
        table.delete(pc.field("id") == 1)
    assert sorted(catalog.get_table("db.t").read().column("id").to_pylist()) == [0, 1, 2]


@pytest.mark.parametrize("failing", [2, 5])
def test_a_failed_rewrite_leaves_no_file_behind(
    catalog: Catalog, warehouse: Path, failing: int
) -> None:
    """A copy-on-write merge rewrites its files on several writers at once, file by file, then
    appends the updated and inserted rows with one more: when one fails — a rewrite's (the
    2nd writer made), or the appended rows' after every rewrite wrote its file (the 5th) —
    every writer's files are deleted and nothing is committed."""
    table = _table(catalog, "append")
    for i in range(4):
        table.write(
            pa.table({"id": [2 * i, 2 * i + 1], "p": ["a"] * 2, "v": [i, i]}, schema=SCHEMA)
        )
    before = _files(warehouse)
    real = table.new_write
    made: list[Any] = []

    def failing_second(**kwargs: Any) -> Any:
        writer = real(**kwargs)
        made.append(writer)
        if len(made) == failing:

            def fail(*_: Any, **__: Any) -> Any:
                raise OSError("disk full")

            writer.prepare_commit = fail
        return writer

    table.new_write = failing_second  # type: ignore[method-assign]
    source = pa.table({"id": [0, 2, 4, 6, 100], "p": ["a"] * 5, "v": [9] * 5}, schema=SCHEMA)
    with pytest.raises(OSError, match="disk full"):
        table.merge(
            source, on=["id", "p"]
        ).when_matched_update_all().when_not_matched_insert_all().execute()
    # four rewritten files and the appended rows, a writer each; a failed rewrite cancels
    # the files not yet started
    assert len(made) == 5 if failing == 5 else 2 <= len(made) <= 5
    assert _files(warehouse) == before
    assert sorted(catalog.get_table("db.t").read().column("v").to_pylist()) == [
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        3,
    ]


@pytest.mark.parametrize("change", ["delete", "update", "merge"])
def test_a_change_sees_committed_records_no_compaction_has_reached(
    catalog: Catalog, change: str
) -> None:
    """A deletion-vector table's batch reads skip level 0 until it is compacted (as
    Paimon's); records a ``write-only`` writer (or one whose compaction lost a race) left there
    are committed all the same. A delete must remove their rows and an update or a merge start
    from their values: before, the delete missed them (the row came back at the next
    compaction) and the update rewrote the key from the value they replaced (losing them)."""
    from lakeops.format.schema_change import RemoveOption, SetOption

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    options = {"bucket": "1", "deletion-vectors.enabled": "true"}
    table = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options=options)
    table.write(pa.table({"id": [1, 3], "v": [1, 3]}, schema=schema))
    table.alter(SetOption("write-only", "true"))
    table = catalog.get_table("db.t")
    table.write(pa.table({"id": [1, 2], "v": [2, 20]}, schema=schema))
    assert sorted(table.read().to_pylist(), key=str) == [{"id": 1, "v": 1}, {"id": 3, "v": 3}]
    table.alter(RemoveOption("write-only"))
    table = catalog.get_table("db.t")
    if change == "delete":
        table.delete(pc.field("id").isin([1, 2]))
        want = {3: 3}
    elif change == "update":
        table.update(pc.field("id") <= 2, {"v": pc.field("v") + 10})
        want = {1: 12, 2: 30, 3: 3}
    else:
        source = pa.table({"id": [1, 2, 4], "v": [100, 200, 400]}, schema=schema)
        (
            table.merge(source, on=["id"])
            .when_matched_update({"v": pc.field("target.v") + pc.field("source.v")})
            .when_not_matched_insert_all()
            .execute()
        )
        want = {1: 102, 2: 220, 3: 3, 4: 400}
    table.compact(full=True)
    rows = catalog.get_table("db.t").read().to_pylist()
    assert {r["id"]: r["v"] for r in rows} == want
    assert len(rows) == len(want)


@pytest.mark.parametrize("change", ["delete", "update", "merge"])
def test_a_change_whose_snapshot_expires_while_it_reads_reads_again(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Another writer commits and expires (as every Paimon writer does after its commit) while
    a change reads: the snapshot it read is gone. The change reads the latest snapshot again
    and applies to the table as it is then (before, it failed with ``SnapshotExpiredError``)."""
    import lakeops.table.row_level as row_level

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["id"])
    table.write(pa.table({"id": [1, 2, 3], "v": [1, 2, 3]}, schema=schema))
    real = row_level.committed_rows
    reads = []

    def overtaken(*args: Any, **kwargs: Any) -> pa.Table:
        if not reads:  # the first read: another writer moves the table on, and expires
            other = catalog.get_table("db.t")
            for v in (10, 20, 30):
                other.write(pa.table({"id": [1, 4], "v": [v, v]}, schema=schema))
            other.expire_snapshots(retain_min=1, retain_max=1)
        reads.append(args[2].id)
        return real(*args, **kwargs)

    monkeypatch.setattr(row_level, "committed_rows", overtaken)
    if change == "delete":
        table.delete(pc.field("id").isin([1, 4]))
        want = {2: 2, 3: 3}
    elif change == "update":
        table.update(pc.field("id") <= 4, {"v": pc.field("v") + 1})
        want = {1: 31, 2: 3, 3: 4, 4: 31}
    else:
        source = pa.table({"id": [1, 5], "v": [100, 500]}, schema=schema)
        (
            table.merge(source, on=["id"])
            .when_matched_update({"v": pc.field("target.v") + pc.field("source.v")})
            .when_not_matched_insert_all()
            .execute()
        )
        want = {1: 130, 2: 2, 3: 3, 4: 30, 5: 500}
    assert len(reads) == 2 and reads[0] < reads[1]
    rows = catalog.get_table("db.t").read().to_pylist()
    assert {r["id"]: r["v"] for r in rows} == want
    assert len(rows) == len(want)


@pytest.mark.parametrize("vectors", [False, True])
@pytest.mark.parametrize("change", ["delete", "update", "merge"])
def test_an_append_change_whose_files_expire_while_it_reads_is_prepared_again(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, change: str, vectors: bool
) -> None:
    """Another job appends, compacts the files an append-table change is reading and expires
    the snapshots naming them: the change finds its files gone. It deletes what it wrote,
    prepares itself again on the latest snapshot and commits once (before, it failed with
    ``MissingDataFileError``, whose advice — restore or roll back — would discard the other
    job's commits); judged against a plain model of the rows."""
    import lakeops.table.row_files as row_files

    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    options = {"bucket": "-1", "deletion-vectors.enabled": str(vectors).lower()}
    table = catalog.create_table("db.t", schema=schema, options=options)
    for i in range(3):
        table.write(pa.table({"id": [i], "v": [i]}, schema=schema))
    real = row_files.AppendFiles.read
    raced: list[str] = []

    def overtaken(self: Any, *args: Any, **kwargs: Any) -> pa.Table:
        if not raced:
            raced.append(self.snapshot.id)
            other = catalog.get_table("db.t")
            other.write(pa.table({"id": [1, 9], "v": [50, 90]}, schema=schema))
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(row_files.AppendFiles, "read", overtaken)
    if change == "delete":
        done = table.delete(pc.field("id") == 1)
        want = [(0, 0), (2, 2), (9, 90)]
        assert done.deleted == 2
    elif change == "update":
        done = table.update(pc.field("id") == 1, {"v": pc.field("v") + 1})
        want = [(0, 0), (1, 2), (1, 51), (2, 2), (9, 90)]
        assert done.updated == 2
    else:
        source = pa.table({"id": [1, 4], "v": [100, 400]}, schema=schema)
        done = (
            table.merge(source, on=["id"])
            .when_matched_update({"v": pc.field("source.v")})
            .when_not_matched_insert_all()
            .execute()
        )
        want = [(0, 0), (1, 100), (1, 100), (2, 2), (4, 400), (9, 90)]
        assert (done.updated, done.inserted) == (2, 1)
    assert raced
    latest = catalog.get_table("db.t")
    assert sorted((r["id"], r["v"]) for r in latest.read().to_pylist()) == want
    assert done.snapshot_id == latest.latest_snapshot().id
    assert not latest.check().problems
