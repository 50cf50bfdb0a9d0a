"""The lakeops data source and jobs on a local[2] SparkSession."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import lakeops.spark as ls
from lakeops import Catalog, Table

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())]
)
DDL = "dt string, id long, v long, op string"
ENGINES = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update", "ignore-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}


def _rows(n: int, seed: int) -> list[tuple]:
    import random

    rng = random.Random(seed)
    return [
        (f"d{i % 3}", rng.randrange(n // 2), rng.randrange(100), rng.choice(["+I", "+U"]))
        for i in range(n)
    ]


def _table(catalog: Catalog, name: str, options: dict) -> Table:
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4", "rowkind.field": "op", **options},
    )


def _state(t: Table) -> list[dict]:
    return sorted(t.read().to_pylist(), key=lambda r: (r["dt"], r["id"]))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_write_equals_table_write(spark, catalog: Catalog, engine: str) -> None:
    via_spark = _table(catalog, f"db.s_{engine.replace('-', '_')}", ENGINES[engine])
    direct = _table(catalog, f"db.d_{engine.replace('-', '_')}", ENGINES[engine])
    for seed in (1, 2):  # two commits: merges across files too
        rows = _rows(400, seed)
        ls.write(spark.createDataFrame(rows, DDL), via_spark.root)
        # same rows, same order per key: one writer per bucket keeps sequence order
        direct.write(
            pa.Table.from_pylist(
                [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA
            )
        )
    assert [s.commit_kind for s in via_spark.snapshots()].count("APPEND") == 2
    assert _state(via_spark) == _state(direct)


def test_read_equals_table_read_and_filters_prune(spark, catalog: Catalog) -> None:
    t = _table(catalog, "db.r", {})
    t.write(
        pa.Table.from_pylist(
            [dict(zip(SCHEMA.names, r, strict=True)) for r in _rows(600, 3)], schema=SCHEMA
        )
    )
    df = ls.read(spark, t.root)
    assert sorted(df.toArrow().to_pylist(), key=lambda r: (r["dt"], r["id"])) == _state(t)
    assert df.rdd.getNumPartitions() == len(t.splits())
    one_day = df.filter("dt = 'd1'")
    assert (
        one_day.rdd.getNumPartitions()
        == len(t.splits(filter=[("dt", "=", "d1")]))
        < df.rdd.getNumPartitions()
    )
    assert one_day.count() == sum(1 for r in _state(t) if r["dt"] == "d1")


def test_failing_task_leaves_no_snapshot_and_no_files(spark, catalog: Catalog) -> None:
    from pyspark.sql.types import StructType

    t = _table(catalog, "db.f", {})

    def explode(batches):  # type: ignore[no-untyped-def]
        import pyarrow as pa_

        for i, batch in enumerate(batches):
            if i == 3:
                raise RuntimeError("task failure injected by the test")
            yield pa_.RecordBatch.from_pylist(batch.to_pylist())

    df = spark.createDataFrame(_rows(4000, 4), DDL).repartition(2)
    failing = df.mapInArrow(explode, StructType.fromDDL(DDL))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "200")
    with pytest.raises(Exception, match="task failure injected"):
        failing.write.format("lakeops").mode("append").option("path", t.root).save()
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert t.snapshots() == []
    assert list(Path(t.root).rglob("*.parquet")) == []


def test_overwrite(spark, catalog: Catalog) -> None:
    t = _table(catalog, "db.o", {})
    ls.write(spark.createDataFrame(_rows(300, 5), DDL), t.root)
    ls.write(
        spark.createDataFrame([("d0", 1, 7, "+I")], DDL),
        t.root,
        mode="overwrite",
        overwrite_partitions=[{"dt": "d0"}],
    )
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    state = _state(t)
    assert [r for r in state if r["dt"] == "d0"] == [{"dt": "d0", "id": 1, "v": 7, "op": "+I"}]
    assert any(r["dt"] == "d1" for r in state)  # other partitions untouched
    # rows outside the listed partitions: refused, as Paimon's commit refuses them
    with pytest.raises(Exception, match="does not replace"):
        ls.write(
            spark.createDataFrame([("d0", 1, 8, "+I"), ("d9", 1, 8, "+I")], DDL),
            t.root,
            mode="overwrite",
            overwrite_partitions=[{"dt": "d0"}],
        )
    assert _state(t) == state
    ls.write(spark.createDataFrame([("d2", 2, 2, "+I")], DDL), t.root, mode="overwrite")
    assert _state(t) == [{"dt": "d2", "id": 2, "v": 2, "op": "+I"}]


def test_jobs_on_a_local_cluster(catalog: Catalog, tmp_path: Path) -> None:
    """The entry points under spark-submit semantics: a separate driver process with executors
    in their own processes (local-cluster), writing then compacting; a write on the native path
    (``--via native``) keeps each key's last row, as the plain model says."""
    t = _table(catalog, "db.j", {"write-only": "true"})
    source = tmp_path / "source.parquet"
    import pyarrow.parquet as pq

    rows = [dict(zip(SCHEMA.names, r, strict=True)) for r in _rows(500, 6)]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), source)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    master = "local-cluster[2,1,1024]"

    def job(*args: str, table: Table = t) -> dict:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "lakeops.spark.jobs",
                *args,
                "--table",
                table.root,
                "--master",
                master,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    written = job("write", "--source", str(source))
    assert written["commit_kind"] == "APPEND"
    assert written["path"] == "python"
    compacted = job("compact", "--full")
    assert compacted["commit_kind"] == "COMPACT"
    direct = _table(catalog, "db.j2", {})
    direct.write(pq.read_table(source))
    assert _state(t) == _state(direct)

    native = catalog.create_table(
        "db.jn",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "4"},
    )
    assert job("write", "--source", str(source), "--via", "native", table=native)["path"] == (
        "native"
    )
    last = {(r["dt"], r["id"]): r for r in rows}  # the deduplicate engine: last row per key
    assert _state(native) == sorted(last.values(), key=lambda r: (r["dt"], r["id"]))


@pytest.mark.interop
def test_pypaimon_reads_a_spark_written_table(spark, catalog: Catalog, warehouse) -> None:
    from tests.interop.oracle import oracle_read

    t = _table(catalog, "db.i", {})
    ls.write(spark.createDataFrame(_rows(500, 7), DDL), t.root)
    ls.write(spark.createDataFrame(_rows(200, 8), DDL), t.root)
    theirs = sorted(oracle_read(warehouse, "db.i").to_pylist(), key=lambda r: (r["dt"], r["id"]))
    assert theirs == _state(t)


@pytest.mark.parametrize(
    ("key_type", "ddl_type"),
    [(pa.int32(), "int"), (pa.date32(), "date"), (pa.string(), "string")],
)
def test_one_writer_per_bucket(spark, catalog: Catalog, key_type, ddl_type: str) -> None:
    """Rows are routed so that every (partition, bucket) gets exactly one writer: one level-0
    file each. Integer-like keys are hashed in the JVM, others in the Arrow UDF; a routing hash
    that disagreed with Paimon's would split a bucket over several tasks (several files)."""
    import datetime as dt

    schema = pa.schema([("dt", pa.string()), ("k", key_type), ("v", pa.int64())])
    table = catalog.create_table(
        f"db.route_{ddl_type}",
        schema=schema,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "5", "write-only": "true"},
    )
    raw = range(-300, 300)
    keys = {
        "int": list(raw),
        "date": [dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in raw],
        "string": [f"key-{i}" for i in raw],
    }[ddl_type]
    rows = [(f"d{i % 2}", k, i) for i, k in enumerate(keys)]
    df = spark.createDataFrame(rows, f"dt string, k {ddl_type}, v long").repartition(3)
    ls.write(df, table.root)
    splits = table.splits()
    assert len(splits) == 10  # 2 partitions x 5 buckets, every bucket hit by 300 keys
    assert all(len(s.files) == 1 for s in splits), [len(s.files) for s in splits]
    assert table.read().num_rows == len(rows)


# ------------------------------------------------------------ reader options and table creation
def _upserts(seed: int, n: int = 60) -> list[dict]:
    """Rows of SCHEMA for a ``rowkind.field`` table: upserts and some deletes of known keys."""
    import random

    rng = random.Random(seed)
    return [
        {
            "dt": f"d{i % 2}",
            "id": rng.randrange(40),
            "v": rng.randrange(1000),
            "op": rng.choice(["+I", "+U", "-D"] if seed > 1 else ["+I"]),
        }
        for i in range(n)
    ]


def _model(*batches: list[dict]) -> dict[tuple, dict]:
    """The merged state of SCHEMA rows applied in order (last row per key wins; -D deletes)."""
    state: dict[tuple, dict] = {}
    for batch in batches:
        for row in batch:
            key = (row["dt"], row["id"])
            if row["op"] == "-D":
                state.pop(key, None)
            else:
                state[key] = row
    return state


def _order(row: dict) -> tuple:
    return (row["dt"], row["id"])


def _spark_rows(df) -> list[dict]:  # type: ignore[no-untyped-def]
    return sorted(df.toArrow().to_pylist(), key=_order)


def test_time_travel_and_incremental_reads(spark, catalog: Catalog, warehouse) -> None:
    """scan.snapshot-id / versionAsOf / scan.tag-name / scan.timestamp-millis against a model of
    each snapshot; incremental-between (delta: pypaimon's incremental read is the oracle; diff,
    to a tag: the two models' difference) with Paimon's ``rowkind`` column first."""
    from tests.interop.oracle import oracle_changes

    t = _table(catalog, "db.tt", {})
    batches = [_upserts(seed) for seed in (1, 2, 3)]
    for batch in batches:
        t.write(pa.Table.from_pylist(batch, schema=SCHEMA))

    def load():  # type: ignore[no-untyped-def]  # a fresh reader: options accumulate
        return spark.read.format("lakeops")

    t.create_tag("v2", 2)
    t.create_tag("v3", 3)
    for options, upto in (
        ({"scan.snapshot-id": "1"}, 1),
        ({"versionAsOf": "2"}, 2),
        ({"scan.tag-name": "v2"}, 2),
        # the newest snapshot committed at or before the time (two commits may share a ms)
        (
            {"scan.timestamp-millis": str(t.snapshot(1).time_millis)},
            max(i for i in (1, 2, 3) if t.snapshot(i).time_millis <= t.snapshot(1).time_millis),
        ),
        ({}, 3),
    ):
        got = _spark_rows(load().options(**options).load(t.root))
        assert got == sorted(_model(*batches[:upto]).values(), key=_order), options

    delta = load().option("incremental-between", "1,3").load(t.root)
    assert delta.columns == ["rowkind", *SCHEMA.names]
    theirs = oracle_changes(warehouse, "db.tt", 1, 3).to_pylist()
    assert sorted(tuple(r.values()) for r in delta.toArrow().to_pylist()) == sorted(
        (r["_row_kind"], r["dt"], r["id"], r["v"], r["op"]) for r in theirs
    )

    before, after = _model(batches[0]), _model(*batches)
    expected = []
    for key in before.keys() | after.keys():
        old, new = before.get(key), after.get(key)
        if old is None:
            expected.append(("+I", *new.values()))
        elif new is None:
            expected.append(("-D", *old.values()))
        elif old != new:
            expected += [("-U", *old.values()), ("+U", *new.values())]
    diff = (
        load()
        .option("incremental-between", "1,v3")  # a tag name for snapshot 3
        .option("incremental-between-scan-mode", "diff")
        .load(t.root)
    )
    assert sorted(tuple(r.values()) for r in diff.toArrow().to_pylist()) == sorted(expected)


def test_first_write_creates_the_table_from_the_dataframe(spark, warehouse) -> None:
    """primary-key, partition, bucket and table options as write options create the table
    (columns nullable but the keys, column spelling kept for fields.<col>.* options); later
    writes append to it; pypaimon reads the aggregated rows the options asked for."""
    from tests.interop.oracle import oracle_read

    ddl = (
        "dt string, Id bigint, Amount decimal(20,2), ts timestamp, tn timestamp_ntz, "
        "tags array<string>, attrs map<string,int>, info struct<a:int,b:binary>"
    )
    rows = [
        (
            f"d{i % 2}",
            i,
            Decimal(i) / 4,
            dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=dt.UTC),
            dt.datetime(2024, 1, 1, 0, 0, i),
            [str(i)],
            {"k": i},
            (i, bytes([i])),
        )
        for i in range(20)
    ]
    df = spark.createDataFrame(rows, ddl)
    path = str(warehouse / "sales.db" / "orders")  # neither the database nor the table exists
    (
        df.write.format("lakeops")
        .mode("append")
        .option("primary-key", "dt,Id")
        .option("partition", "dt")
        .option("bucket", "2")
        .option("merge-engine", "aggregation")
        .option("fields.Amount.aggregate-function", "sum")
        .save(path)
    )
    df.write.format("lakeops").mode("append").save(path)  # the table exists: no options needed
    t = Catalog(str(warehouse)).get_table("sales.orders")
    assert (t.schema.primary_keys, t.schema.partition_keys) == (("dt", "Id"), ("dt",))
    assert t.schema.options == {
        "bucket": "2",
        "merge-engine": "aggregation",
        "fields.Amount.aggregate-function": "sum",
    }
    assert [str(f.type) for f in t.schema.fields] == [
        "STRING NOT NULL",
        "BIGINT NOT NULL",
        "DECIMAL(20, 2)",
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        "TIMESTAMP(6)",
        "ARRAY<STRING>",
        "MAP<STRING NOT NULL, INT>",
        "ROW<`a` INT, `b` BYTES>",
    ]
    theirs = sorted(oracle_read(warehouse, "sales.orders").to_pylist(), key=lambda r: r["Id"])
    assert [(r["Id"], r["Amount"], r["tags"]) for r in theirs] == [
        (i, Decimal(i) / 2, [str(i)]) for i in range(20)
    ]


def test_refusals_name_the_option_and_leave_nothing(spark, catalog: Catalog, warehouse) -> None:
    """An unknown option, a save without .mode(...), a table a write cannot create, a table the
    write options define differently: clear errors (raised through Spark), and no table
    directory or snapshot. The option checks themselves are in test_options.py."""
    t = _table(catalog, "db.x", {})
    t.write(pa.Table.from_pylist(_upserts(1, 5), schema=SCHEMA))
    with pytest.raises(Exception, match=r"unknown read option\(s\) \['snapshot_id'\].*versionAsOf"):
        spark.read.format("lakeops").option("snapshot_id", "1").load(t.root).count()
    df = spark.createDataFrame([("d0", 1, 2, "+I")], DDL)
    new = warehouse / "fresh.db" / "t"  # neither the database nor the table exists
    cases = [
        (df.write.format("lakeops"), "UNSUPPORTED_DATA_SOURCE_SAVE_MODE.*Append"),
        # without primary-key the write would create an append table: bucket = N needs a key
        (df.write.format("lakeops").mode("append").option("bucket", "2"), "needs.*bucket-key"),
        (
            df.write.format("lakeops")
            .mode("append")
            .option("primary-key", "id")
            .option("chain-table.enabled", "true"),
            "chain-table.enabled",
        ),
    ]
    for writer, message in cases:
        with pytest.raises(Exception, match=message):
            writer.save(str(new))
        assert not new.parent.exists()
    with pytest.raises(Exception, match=r"bucket='3' \(the table has '4'\)"):
        df.write.format("lakeops").mode("append").option("bucket", "3").save(t.root)
    assert len(t.snapshots()) == 1
