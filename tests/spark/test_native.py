"""The native write path of ``lakeops.spark.write`` (:mod:`lakeops.spark.native`): tables it
writes read, in lakeops, pypaimon 2.1 and Java Paimon 0.9, as the plain upsert model says and
as the same DataFrames written by the Python writer; Java Paimon's own upserts land in the
buckets the native path chose; what it cannot write goes to the Python writer or is refused
before anything is written."""

from __future__ import annotations

import logging
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeops.spark as ls
from lakeops import Catalog
from lakeops.errors import DataValidationError, UnsupportedFeatureError
from lakeops.format.bucket_hash import assign_buckets
from tests.interop.conftest import java_classpath  # noqa: F401  (the session fixture)
from tests.interop.java_oracle import json_rows, normalize, run_ops
from tests.interop.oracle import oracle_script

pytestmark = [pytest.mark.slow, pytest.mark.spark]

_NAME = re.compile(r"data-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0\.parquet")

# (name, Arrow schema, primary keys, partition keys, Spark DDL, rows of write 1, of write 2)
DDL = "id bigint, v bigint, s string, f double"
FLAT = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string()), ("f", pa.float64())])
PARTED = pa.schema(
    [
        ("k", pa.string()),
        ("dt", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("d", pa.date32()),
        ("ok", pa.bool_()),
        ("n", pa.int32()),
    ]
)


def _flat_rows(round_: int) -> list[tuple[Any, ...]]:
    # ids repeat within the write (the last row per id wins) and across writes
    return [
        (i % 150 + 100 * round_, i + 1000 * round_, f"s{i}-{round_}", i / 7 if i % 5 else None)
        for i in range(400)
    ]


def _parted_rows(round_: int) -> list[tuple[Any, ...]]:
    import datetime as dt

    return [
        (
            f"key-{i % 90 + 40 * round_}",
            ("2024-01-01", "2024-01-02", "2024-01-03")[i % 3],
            Decimal(i * 3 + round_) / 100,
            dt.date(2024, 1, 1) + dt.timedelta(days=i % 40),
            i % 2 == 0,
            None if i % 11 == 0 else i - round_,
        )
        for i in range(300)
    ]


CASES = {
    "unpartitioned-bigint-key": (
        FLAT,
        ["id"],
        [],
        DDL,
        _flat_rows,
        {"bucket": "3"},
    ),
    "partitioned-string-key": (
        PARTED,
        ["k", "dt"],
        ["dt"],
        "k string, dt string, amount decimal(12,2), d date, ok boolean, n int",
        _parted_rows,
        {"bucket": "2", "file.compression": "snappy"},
    ),
}


def _model(schema: pa.Schema, keys: list[str], *writes: list[tuple[Any, ...]]) -> pa.Table:
    """Plain upsert model: the last row per key, over the writes in order."""
    state: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    index = [schema.names.index(k) for k in keys]
    for rows in writes:
        for row in rows:
            state[tuple(row[i] for i in index)] = row
    rows = [dict(zip(schema.names, r, strict=True)) for r in state.values()]
    return pa.Table.from_pylist(rows, schema).sort_by([(k, "ascending") for k in keys])


def _rows(table: pa.Table, keys: list[str]) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: tuple(r[k] for k in keys))


def _check_files(root: str, schema: pa.Schema, bucket_keys: list[str], t: Any) -> int:
    """Every data file is named data-<uuid>-0.parquet in a bucket-N directory and holds only
    keys whose Paimon bucket is N (lakeops.format.bucket_hash); no staging is left. Returns the
    number of data files."""
    files = 0
    types = t.schema.types_of(bucket_keys)
    for directory, dirs, names in os.walk(root):
        assert "_lakeops_spark_staging" not in dirs
        for name in names:
            if not name.endswith(".parquet"):
                continue
            assert _NAME.fullmatch(name), name
            bucket = int(os.path.basename(directory).removeprefix("bucket-"))
            data = pq.read_table(os.path.join(directory, name), columns=bucket_keys)
            cols = [data.column(k) for k in bucket_keys]
            assert set(assign_buckets(cols, types, t.options.bucket).tolist()) == {bucket}
            files += 1
    return files


@pytest.mark.interop
@pytest.mark.parametrize("case", sorted(CASES))
def test_native_tables_read_as_the_model_in_pypaimon_and_java(
    spark: Any,
    catalog: Catalog,
    warehouse: Path,
    java_classpath: str,  # noqa: F811
    case: str,
) -> None:
    schema, keys, partition, ddl, rows_of, options = CASES[case]
    native = catalog.create_table(
        "db.native", schema=schema, primary_keys=keys, partition_keys=partition, options=options
    )
    python = catalog.create_table(
        "db.python", schema=schema, primary_keys=keys, partition_keys=partition, options=options
    )
    writes = [rows_of(0), rows_of(1)]
    for rows in writes:
        df = spark.createDataFrame(rows, ddl)  # in list order, over several tasks
        assert df.rdd.getNumPartitions() > 1
        assert ls.write(df, native.root, via="auto") == "native"
        if partition:  # (one task: the Python writer's shuffle then keeps the order too)
            assert ls.write(df.coalesce(1), python.root, via="python") == "python"
    model = _model(schema, keys, *writes)
    bucket_keys = native.schema.bucket_keys
    assert _check_files(native.root, schema, bucket_keys, native) >= 2
    expected = _rows(model, keys)
    assert _rows(native.read(), keys) == expected
    if partition:  # the same DataFrames through the Python writer read the same
        assert _rows(python.read(), keys) == expected
    (theirs,) = oracle_script(warehouse, [{"op": "read", "table": "db.native"}])
    assert _rows(theirs, keys) == expected
    # Java reads the native files, then upserts and deletes some keys into the buckets it
    # computes itself: a key the native path put in another bucket would now read twice
    first = model.slice(0, 5)
    changed = first.set_column(
        schema.names.index(schema.names[-1]),
        schema.field(schema.names[-1]),
        pa.array([None] * 5, schema.field(schema.names[-1]).type),
    )
    deleted = model.slice(5, 2)
    java = run_ops(
        java_classpath,
        warehouse,
        [
            {"op": "read", "table": "db.native"},
            {
                "op": "write",
                "table": "db.native",
                "rows": json_rows(changed) + json_rows(deleted, ["-D", "-D"]),
            },
            {"op": "read", "table": "db.native"},
        ],
    )
    assert normalize(java[0]["rows"], keys) == normalize(json_rows(model), keys)
    after = pa.concat_tables([changed, model.slice(7)])
    assert normalize(java[2]["rows"], keys) == normalize(json_rows(after), keys)
    assert _rows(native.read(), keys) == _rows(after, keys)


def test_what_the_native_path_cannot_write_takes_the_python_writer_or_is_refused(
    spark: Any, catalog: Catalog
) -> None:
    partial = catalog.create_table(
        "db.partial",
        schema=FLAT,
        primary_keys=["id"],
        options={"bucket": "2", "merge-engine": "partial-update"},
    )
    df = spark.createDataFrame([(1, 10, "a", None), (1, None, None, 2.5)], DDL).coalesce(1)
    with pytest.raises(UnsupportedFeatureError, match="merge-engine = partial-update"):
        ls.write(df, partial.root, via="native")
    assert partial.latest_snapshot() is None
    assert ls.write(df, partial.root, via="auto") == "python"
    assert partial.read().to_pylist() == [{"id": 1, "v": 10, "s": "a", "f": 2.5}]
    # a DataFrame type the table does not have exactly (int for BIGINT): the Python writer casts
    plain = catalog.create_table(
        "db.plain", schema=FLAT, primary_keys=["id"], options={"bucket": "2"}
    )
    narrow = spark.createDataFrame([(1, 10, "a", 1.0)], "id int, v bigint, s string, f double")
    assert ls.write(narrow, plain.root, via="auto") == "python"
    # a NULL key is refused, nothing is written and no staged file is left
    one = spark.createDataFrame([(1, 1, "a", 1.0)], DDL)
    assert ls.write(one, plain.root, via="auto") == "native"
    nulls = spark.createDataFrame([(2, 1, "a", 1.0), (None, 2, "b", 2.0)], DDL)
    with pytest.raises(DataValidationError, match="'id'"):
        ls.write(nulls, plain.root, via="native")
    assert [s.id for s in plain.snapshots()] == [1, 2]
    assert not os.path.exists(os.path.join(plain.root, "_lakeops_spark_staging"))
    # overwrite replaces the table's rows
    seven = spark.createDataFrame([(7, 70, "x", None)], DDL)
    assert ls.write(seven, plain.root, mode="overwrite", via="native") == "native"
    assert plain.read().to_pylist() == [{"id": 7, "v": 70, "s": "x", "f": None}]


def test_many_partitions_and_an_empty_write(spark: Any, catalog: Catalog) -> None:
    """Every (partition, bucket) gets its own task: each written file holds one partition and
    one bucket, by Paimon's hash; keys repeat and the last row in the DataFrame's order wins;
    an empty DataFrame commits nothing, and as an overwrite it empties the table. Judged by the
    upsert model."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.string()), ("v", pa.int64())])
    table = catalog.create_table(
        "db.nullparts",
        schema=schema,
        primary_keys=["id", "p"],
        partition_keys=["p"],
        options={"bucket": "3"},
    )
    rows = [(i % 97, f"p{i % 11}", i) for i in range(1500)]
    df = spark.createDataFrame(rows, "id bigint, p string, v bigint")  # keeps the list's order
    assert df.rdd.getNumPartitions() > 1
    assert ls.write(df, table.root, via="native") == "native"
    model = {(r[0], r[1]): r[2] for r in rows}
    expected = sorted(
        ({"id": k[0], "p": k[1], "v": v} for k, v in model.items()),
        key=lambda r: (r["p"], r["id"]),
    )
    got = sorted(table.read().to_pylist(), key=lambda r: (r["p"], r["id"]))
    assert got == expected
    (snapshot,) = table.snapshots()
    files = [(e.partition, e.bucket, e.file) for e in table.store.live_entries(snapshot)]
    assert len({(p, b) for p, b, _ in files}) == len(files) > 12  # one file per (partition, bucket)
    paths = []
    numbered: list[int] = []
    for _, bucket, meta in files:
        path = next(
            os.path.join(d, meta.file_name)
            for d, _, names in os.walk(table.root)
            if meta.file_name in names
        )
        assert os.path.basename(os.path.dirname(path)) == f"bucket-{bucket}"
        paths.append(path)
        ids = pq.read_table(path, columns=["id"]).column("id")
        assert set(assign_buckets([ids], table.schema.types_of(["id"]), 3).tolist()) == {bucket}
        # the kept rows are numbered by their position in the DataFrame: the file's range
        sequences = pq.read_table(path, columns=["_SEQUENCE_NUMBER"]).column(0).to_pylist()
        assert (min(sequences), max(sequences)) == (
            meta.min_sequence_number,
            meta.max_sequence_number,
        )
        numbered.extend(sequences)
        # numbers that never repeat in a file are written without a dictionary
        chunk = pq.ParquetFile(path).metadata.row_group(0)
        encodings = {
            chunk.column(i).path_in_schema: chunk.column(i).encodings
            for i in range(chunk.num_columns)
        }
        assert not any("DICTIONARY" in e for e in encodings["_SEQUENCE_NUMBER"]), encodings
    assert len({os.path.dirname(os.path.dirname(path)) for path in paths}) == 11
    last = {key: position for position, key in enumerate((r[0], r[1]) for r in rows)}
    assert sorted(numbered) == sorted(last.values())

    # a static partition overwrite with rows of another partition is refused, as Paimon's
    # commit refuses it; its files are gone and the table reads as before
    strays = spark.createDataFrame([(1, "p0", 1), (2, "p1", 2)], "id bigint, p string, v bigint")
    with pytest.raises(Exception, match="does not replace"):
        ls.write(
            strays, table.root, mode="overwrite", overwrite_partitions=[{"p": "p0"}], via="native"
        )
    assert [s.id for s in table.snapshots()] == [1]
    assert sorted(table.read().to_pylist(), key=lambda r: (r["p"], r["id"])) == expected
    assert sorted(
        os.path.join(d, n) for d, _, ns in os.walk(table.root) for n in ns if n.endswith(".parquet")
    ) == sorted(paths)

    empty = spark.createDataFrame([], "id bigint, p string, v bigint")
    assert ls.write(empty, table.root, via="native") == "native"
    assert [s.id for s in table.snapshots()] == [1]
    assert ls.write(empty, table.root, mode="overwrite", via="native") == "native"
    assert table.read().num_rows == 0


@pytest.mark.interop
def test_an_input_that_grows_between_the_jobs_is_written_again_in_order(
    spark: Any,
    catalog: Catalog,
    warehouse: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The counting job sees each input partition's rows; every later run of a partition adds
    one row repeating a key (a ``mapInArrow`` that remembers the partitions it ran): the count
    fails the first write job, the write runs again ordered within each task, and the table
    holds what that run saw, a key's last row in the DataFrame winning. Judged by the upsert
    model over that run's rows."""
    table = catalog.create_table(
        "db.grows", schema=FLAT, primary_keys=["id"], options={"bucket": "3"}
    )
    marks = str(tmp_path / "marks")
    os.makedirs(marks)
    base = spark.createDataFrame(_flat_rows(0), DDL)
    partitions = base.rdd.glom().collect()
    assert len(partitions) > 1

    def grow(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark import TaskContext

        p = TaskContext.get().partitionId()
        seen = os.path.exists(os.path.join(marks, str(p)))
        open(os.path.join(marks, str(p)), "a").close()
        yield from batches
        if seen:
            yield pa.RecordBatch.from_pylist(
                [{"id": p, "v": -p, "s": "late", "f": None}], schema=FLAT
            )

    df = base.mapInArrow(grow, base.schema)
    caplog.set_level(logging.INFO, logger="lakeops.spark.native")
    assert ls.write(df, table.root, via="native") == "native"
    assert "writing again, ordered within each task" in caplog.text
    seen_rows = [
        row
        for p, rows in enumerate(partitions)
        for row in [*(tuple(r) for r in rows), (p, -p, "late", None)]
    ]
    assert _rows(table.read(), ["id"]) == _rows(_model(FLAT, ["id"], seen_rows), ["id"])
    (theirs,) = oracle_script(warehouse, [{"op": "read", "table": "db.grows"}])
    assert _rows(theirs, ["id"]) == _rows(table.read(), ["id"])


@pytest.mark.parametrize("count", [3, 8])
def test_every_row_reaches_the_task_its_index_names(spark: Any, count: int) -> None:
    """Both ways of sending row ``r`` to shuffle partition ``index(r)``: ``repartitionById``
    (Spark 4.1+) and, for older Spark, a hash repartition on a value found per partition."""
    from pyspark.sql import functions as F

    from lakeops.spark.native import _to_partition, _to_partition_by_hash

    frame = spark.createDataFrame([(i % count, i) for i in range(200)], "want int, n int")
    for route in (_to_partition, _to_partition_by_hash):
        placed = route(frame, count, F.col("want")).select(
            "want", "n", F.spark_partition_id().alias("got")
        )
        rows = placed.collect()
        assert len(rows) == 200
        assert all(r["want"] == r["got"] for r in rows), route.__name__


def test_an_input_cut_by_a_shuffle_is_ordered_within_each_task(
    spark: Any, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    """A DataFrame whose partitions a shuffle cuts (here a round-robin repartition; a join or
    an aggregation alike) is not counted first (adaptive execution may cut it otherwise in
    another job): each task orders a key's rows itself, and a key's last row in the
    DataFrame's order (as ``collect`` returns it) wins. Judged by the upsert model over that
    order."""
    table = catalog.create_table(
        "db.shuffled", schema=FLAT, primary_keys=["id"], options={"bucket": "3"}
    )
    df = spark.createDataFrame(_flat_rows(0), DDL).repartition(3)
    in_order = [tuple(r) for r in df.collect()]
    caplog.set_level(logging.INFO, logger="lakeops.spark.native")
    assert ls.write(df, table.root, via="native") == "native"
    assert "ordering a key's rows within each task" in caplog.text
    assert "writing again" not in caplog.text
    assert _rows(table.read(), ["id"]) == _rows(_model(FLAT, ["id"], in_order), ["id"])
    # an aggregation's result, counted the same way
    summed = df.groupBy("id").agg({"v": "max"}).withColumnRenamed("max(v)", "v")
    summed = summed.selectExpr("id", "v", "cast(null as string) as s", "cast(null as double) as f")
    caplog.clear()
    assert ls.write(summed, table.root, mode="overwrite", via="native") == "native"
    assert "ordering a key's rows within each task" in caplog.text
    expected = {r["id"]: r["v"] for r in summed.collect()}
    assert {r["id"]: r["v"] for r in table.read().to_pylist()} == expected
