"""Row-level changes through ``lakeops.spark`` (delete, update, merge of a Spark DataFrame)
against a plain model of the rows, with pypaimon 2.1 reading the result: primary-key tables
(fixed, dynamic and postpone buckets, partitioned) change on the executors — one task per
bucket or partition, one commit under a commit user of the job's own — append tables on the
driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeops.spark as ls
from lakeops import Catalog
from tests.interop.oracle import oracle_read

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.mark.parametrize("keyed", [True, False])
def test_delete_update_merge_through_spark(spark: Any, tmp_path: Path, keyed: bool) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    keys = ["id"] if keyed else []
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=keys, options={"bucket": "2"} if keyed else {}
    )
    table.write(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}, schema=SCHEMA))
    path = table.root
    assert ls.delete(path, pc.field("id") == 1).deleted == 1
    assert ls.update(path, pc.field("id") == 2, {"v": "B"}).updated == 1
    source = spark.createDataFrame([(3, "C"), (9, "new")], "id long, v string")
    done = (
        ls.merge(source, path, on=["id"])
        .when_matched_update({"v": pc.field("source.v")})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (done.updated, done.inserted) == (1, 1)
    got = sorted(tuple(r) for r in ls.read(spark, path).collect())
    assert got == [(2, "B"), (3, "C"), (4, "d"), (9, "new")]


PARTED = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("n", pa.int64())]
)


@pytest.mark.parametrize("bucket", ["3", "-1", "-2"])
def test_primary_key_changes_run_on_the_executors(spark: Any, tmp_path: Path, bucket: str) -> None:
    """Partitioned primary-key tables with fixed, dynamic and postpone buckets: each change is
    one snapshot of the job's own commit user, its counts are the model's, and pypaimon reads
    the model after every change."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.p",
        schema=PARTED,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": bucket},
    )
    model = {(dt, i): i * 10 for dt in ("a", "b") for i in range(40)}
    rows = [{"dt": dt, "id": i, "n": n} for (dt, i), n in model.items()]
    table.write(pa.Table.from_pylist(rows, schema=PARTED))
    path = table.root

    seen = [table.store.latest_snapshot_id() or 0]

    def check(op: str) -> None:
        # the change's own snapshot (a postpone table's write is followed by its move)
        latest = table.store.latest_snapshot_id() or 0
        users = [table.store.snapshot(i).commit_user for i in range(seen[-1] + 1, latest + 1)]
        assert [u for u in users if u.startswith(f"lakeops-{op}-")], users
        seen.append(latest)
        if bucket != "-2":  # pypaimon 2.1 does not read postponed files
            got = oracle_read(tmp_path, "db.p").to_pylist()
            assert {(r["dt"], r["id"]): r["n"] for r in got} == model
        got = sorted(tuple(r) for r in ls.read(spark, path).collect())
        assert got == sorted((dt, i, n) for (dt, i), n in model.items())

    sevens = pc.field("id").isin(list(range(0, 40, 7)))
    gone = ls.delete(path, sevens & (pc.field("dt") == "a"), spark=spark)
    doomed = [k for k in model if k[0] == "a" and k[1] % 7 == 0]
    for k in doomed:
        del model[k]
    assert gone.deleted == len(doomed)
    check("delete")

    done = ls.update(path, pc.field("id") > 30, {"n": pc.field("n") + 1}, spark=spark)
    touched = [k for k in model if k[1] > 30]
    for k in touched:
        model[k] += 1
    assert done.updated == len(touched)
    check("update")

    source = spark.createDataFrame(
        [("a", 1, -1, False), ("b", 2, 0, True), ("b", 50, 500, False), ("a", 7, 70, False)],
        "dt string, id long, n long, gone boolean",
    )
    merged = (
        ls.merge(source, path, on=["dt", "id"])
        .when_matched_delete(condition=pc.field("source.gone"))
        .when_matched_update({"n": pc.field("source.n")})
        .when_not_matched_insert({c: pc.field("source." + c) for c in ("dt", "id", "n")})
        .execute()
    )
    model[("a", 1)] = -1
    del model[("b", 2)]
    model[("b", 50)] = 500
    model[("a", 7)] = 70  # deleted above: inserted again
    assert (merged.deleted, merged.updated, merged.inserted) == (1, 1, 2)
    check("merge")


def test_executors_change_committed_records_no_compaction_has_reached(
    spark: Any, tmp_path: Path
) -> None:
    """A deletion-vector table whose level 0 holds a ``write-only`` writer's committed records
    (batch reads skip them until compacted): the executors' delete removes their rows and
    their update starts from their values, as ``lakeops.table.row_level`` does."""
    from lakeops.format.schema_change import RemoveOption, SetOption

    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("n", pa.int64())])
    options = {"bucket": "2", "deletion-vectors.enabled": "true"}
    table = catalog.create_table("db.dv", schema=schema, primary_keys=["id"], options=options)
    table.write(pa.table({"id": [1, 2, 3], "n": [1, 2, 3]}, schema=schema))
    table.alter(SetOption("write-only", "true"))
    catalog.get_table("db.dv").write(
        pa.table({"id": [1, 2, 4, 5], "n": [10, 20, 40, 50]}, schema=schema)
    )
    table.alter(RemoveOption("write-only"))
    path = table.root
    assert ls.delete(path, pc.field("id").isin([2, 4]), spark=spark).deleted == 2
    assert ls.update(path, pc.field("id") <= 5, {"n": pc.field("n") + 1}, spark=spark).updated == 3
    catalog.get_table("db.dv").compact(full=True)
    got = {r["id"]: r["n"] for r in oracle_read(tmp_path, "db.dv").to_pylist()}
    assert got == {1: 11, 3: 4, 5: 51}


@pytest.mark.parametrize("op", ["delete", "update", "merge"])
def test_a_change_whose_snapshot_expires_while_its_tasks_read_runs_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    """After the driver planned a change, another job writes, compacts the files its tasks
    are to read and expires the planned snapshot: the job fails, commits nothing, and is
    planned and run again on the latest snapshot (it failed with the tasks' errors before);
    the rows are the model's."""
    import lakeops.spark.row_level as spark_row_level

    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("n", pa.int64())])
    table = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "2"}
    )
    model = {i: i for i in range(20)}
    for half in (range(10), range(10, 20)):
        table.write(pa.table({"id": list(half), "n": list(half)}, schema=schema))
    real = spark_row_level._run
    runs: list[str] = []

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        if not runs:
            other = catalog.get_table("db.t")
            other.write(pa.table({"id": [3, 30], "n": [33, 30]}, schema=schema))
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1)
        runs.append(args[2].op)
        return real(*args, **kwargs)

    monkeypatch.setattr(spark_row_level, "_run", overtaken)
    model.update({3: 33, 30: 30})
    if op == "delete":
        done = ls.delete(table.root, pc.field("id") < 5, spark=spark)
        for i in range(5):
            del model[i]
        assert done.deleted == 5
    elif op == "update":
        done = ls.update(table.root, pc.field("id") < 5, {"n": pc.field("n") + 1}, spark=spark)
        for i in range(5):
            model[i] += 1
        assert done.updated == 5
    else:
        source = spark.createDataFrame([(3, -3), (40, 40)], "id long, n long")
        done = (
            ls.merge(source, table.root, on=["id"])
            .when_matched_update({"n": pc.field("source.n")})
            .when_not_matched_insert_all()
            .execute()
        )
        model.update({3: -3, 40: 40})
        assert (done.updated, done.inserted) == (1, 1)
    assert runs == [op, op]
    got = catalog.get_table("db.t").read().to_pylist()
    assert {r["id"]: r["n"] for r in got} == model
    assert len(got) == len(model)
