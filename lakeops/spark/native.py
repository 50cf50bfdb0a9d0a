"""The native write path of :func:`lakeops.spark.write`: Spark computes the Paimon columns,
sorts and encodes the files itself; the driver reads their key columns, checks them, drops
repeated keys and commits.

For a fixed-bucket primary-key table with the ``deduplicate`` merge engine (and nothing that
must happen while writing: no changelog producer, no deletion vectors, no sequence or row-kind
field), one write is one Spark job plus one small job that counts the rows of every input
partition (and collects the partition values of a partitioned table; see below for a
DataFrame cut by a shuffle):

1. the bucket of every row by Paimon's hash (:mod:`lakeops.spark.bucket_expr` in the JVM, else
   the vectorised Arrow UDF), and ``_SEQUENCE_NUMBER`` = the table's next sequence number + the
   row's position in the DataFrame (its input partition's first position, from the counting
   job, + its index in that partition). A task holding more rows than the counting job saw
   (an input that changed between the two jobs, or whose partitions Spark cut differently)
   fails the job, and the write runs again without the count (below);
2. one shuffle with one partition per (partition, bucket) (:func:`_routed`; Spark's
   ``repartitionById`` where it has one, else a value per task that Spark's hash partitioning
   sends there), so each bucket has exactly one writer, and one sort by the key alone (a
   single integer key sorts by Spark's radix sort; a sort led by the bucket, or with a second
   column to order a key's rows, compares whole rows);
3. ``_KEY_<k>`` copies of the (trimmed) primary key and ``_VALUE_KIND`` = INSERT;
4. Spark's Parquet writer writes each task's rows as one file into a staging directory below
   the table, with the table's codec. Spark writes the physical types Paimon 0.9 writes for
   every type this path accepts (see :func:`refusal`): INT(8)/INT(16) for TINYINT/SMALLINT,
   DECIMAL as INT32 / INT64 / FIXED_LEN_BYTE_ARRAY by precision, DATE as INT32 DATE;
   Paimon 0.9 writes no Parquet field ids (its readers match columns by name), neither does this;
5. the driver reads every file's key, sequence, partition and bucket-key columns and checks that
   the file holds one partition and, by Paimon's hash of every row, one bucket (a file that
   does not fails the write: nothing is committed); where a key repeats, it rewrites the file
   keeping, of each key, the row with the highest sequence number, which is the key's last row
   in the DataFrame and the row the ``deduplicate`` engine keeps (Paimon's readers require one
   row per key in a file), so a write whose keys are unique pays one read of those columns;
6. the driver moves every file to ``<partition path>/bucket-N/data-<uuid>-0.parquet`` and
   commits the files, with their key and sequence ranges, as level-0 ``DataFileMeta`` with the
   committer, which re-sequences them if another commit added files to the same bucket
   meanwhile. Nothing is compacted here (as with ``write-only``).

A DataFrame whose partitions come from a shuffle (:func:`_stable_partitions`: adaptive
execution cuts a shuffle's output from its map outputs' sizes, which differ in a job reading
fewer columns) is not counted but ordered within each task; so is a write whose count did not
hold (step 1), once more: every row carries its ``monotonically_increasing_id``, a task sorts
by (key, that id) and numbers its rows from the table's next sequence number, so a key's last
row in the DataFrame again has its highest sequence number.

Whatever this path cannot do exactly goes through the Python writer, which
:func:`refusal` names.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeops.bucket.counts import check_bucket_count, partition_bucket_counts
from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER
from lakeops.errors import CommitStateUnknownError, DataValidationError, LakeopsError
from lakeops.format import binary_row, paths
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.commit_message import CommitMessage
from lakeops.format.data_file import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from lakeops.format.kv import KIND, SEQ, RowKind, key_column
from lakeops.format.schema import TableSchema
from lakeops.format.types import MAX_VARCHAR, DataType
from lakeops.kv.file_index import INDEX_SUFFIX, plan_file_index
from lakeops.kv.formats import settings_for, writer_kwargs
from lakeops.kv.parquet_layout import dictionary_columns, writer_options
from lakeops.kv.writer import local_millis
from lakeops.spark.bucket_expr import with_bucket

__all__ = ["NativeWrite", "refusal", "spark_type_name", "write_native"]

log = logging.getLogger(__name__)

BUCKET = "__lakeops_bucket"
_ORDER = "__lakeops_order"
_PART = "__lakeops_p"
_ROUTE = "__lakeops_route"
_NULL_MARK = "lakeops native write: NULL in NOT NULL column"
_CHANGED_MARK = "lakeops native write: the DataFrame changed between its two jobs"
_COUNT_MARK = "lakeops native write: a task holds rows its input partition's count did not"
#: ``monotonically_increasing_id`` keeps the row index within its task in the low 33 bits
_ROW_INDEX_BITS = (1 << 33) - 1
#: Spark's Parquet codec names of the codecs Paimon tables use
_SPARK_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4_raw",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}
_SIMPLE = {
    "BOOLEAN": "boolean",
    "TINYINT": "tinyint",
    "SMALLINT": "smallint",
    "INT": "int",
    "BIGINT": "bigint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DATE": "date",
}
#: key types whose order in Spark's sort is Paimon's key order (floats differ: NaN, -0.0)
_KEY_ROOTS = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "VARCHAR", "DECIMAL"}
)


def spark_type_name(data_type: DataType) -> str | None:
    """The Spark ``simpleString`` a DataFrame column must have for the native path to write
    ``data_type`` unchanged, or None when the native path does not write that type."""
    root = data_type.root
    if root in _SIMPLE:
        return _SIMPLE[root]
    if root == "VARCHAR" and data_type.length == MAX_VARCHAR:
        return "string"
    if root == "VARBINARY" and data_type.length == MAX_VARCHAR:
        return "binary"
    if root == "DECIMAL":
        return f"decimal({data_type.precision},{data_type.scale})"
    return None


def refusal(table: Any, df_types: Mapping[str, str], mode: str) -> str | None:
    """Why the native path cannot write ``df`` (column -> Spark type) into ``table``, or None
    when it can. Checked before anything is written."""
    found = _table_refusal(table)
    if found is not None:
        return found
    if mode not in ("append", "overwrite"):
        return f"mode = {mode}"
    return _columns_refusal(table.schema, df_types)


def _table_refusal(table: Any) -> str | None:
    """Why the table's options or storage keep the native path out, or None: it writes level-0
    Parquet files of a primary-key table's fixed buckets, on the local file system inside the
    table, with no merging, changelog, deletion vectors or ordering on write."""
    schema: TableSchema = table.schema
    options = table.options
    context = table.context
    if not schema.primary_keys:
        return "the table has no primary key"
    if options.bucket < 1:
        return f"bucket = {options.bucket} (dynamic buckets need the assigners)"
    if options.merge_engine != "deduplicate":
        return f"merge-engine = {options.merge_engine} merges on write"
    if context.changelog.producer != "none":
        return f"changelog-producer = {context.changelog.producer} writes on write"
    if options.deletion_vectors:
        return "deletion-vectors.enabled = true"
    if options.sequence_fields or options.rowkind_field:
        return "sequence.field / rowkind.field order rows by their values"
    if options.ignore_delete:
        return "ignore-delete is set"
    settings = settings_for(schema.options, 0)
    if settings.format != "parquet":
        return f"level-0 files are {settings.format}"
    if settings.compression not in _SPARK_CODECS:
        return f"file.compression = {settings.compression}"
    if not table.file_io.is_local:
        return "the table is not on the local file system"
    if context.locations.write_roots and context.locations.strategy != "none":
        return "the table writes external paths"
    return None


def _columns_refusal(schema: TableSchema, df_types: Mapping[str, str]) -> str | None:
    """Why the DataFrame's columns cannot be written as they are, or None: exactly the table's
    columns, each of the Spark type the table's type maps to, keys of hashable types."""
    if set(df_types) != set(schema.field_names) or len(df_types) != len(schema.field_names):
        return "the DataFrame's columns are not the table's"
    for f in schema.fields:
        wanted = spark_type_name(f.type)
        if wanted is None:
            return f"column {f.name!r} has type {f.type.to_paimon()}"
        if df_types[f.name] != wanted:
            return f"column {f.name!r} is {df_types[f.name]} in the DataFrame, not {wanted}"
    for k in schema.trimmed_primary_keys:
        if schema.field(k).type.root not in _KEY_ROOTS:
            return f"key column {k!r} has type {schema.field(k).type.to_paimon()}"
    return None


@dataclass(frozen=True)
class NativeWrite:
    """What a native write committed."""

    files: int
    rows: int


def _next_sequence(table: Any, overwrite: bool) -> tuple[int, int | None, dict[bytes, int]]:
    """(first sequence number of this write, base snapshot id for the committer, the bucket
    count each partition's live files hold)."""
    if overwrite:
        return 0, None, {}
    store = table.store
    base = store.latest_snapshot()
    if base is None:
        return 0, 0, {}
    live = store.live_entries(base)
    first = max((e.file.max_sequence_number for e in live), default=-1) + 1
    return first, base.id, partition_bucket_counts(live)


def _partition_name(table: Any) -> Any:
    """How the table names a serialized partition (its directory; "" when unpartitioned)."""
    names = table.context.locations.partitions
    if names is None or not table.schema.partition_keys:
        return lambda _partition: ""
    return names.dir_of


def _preimages(spark: Any, count: int) -> list[int]:
    """For every shuffle partition ``i < count``, a BIGINT that Spark's hash partitioning
    (``pmod(hash(v), count)``, which ``repartition(count, col)`` uses) sends to partition ``i``;
    found by Spark itself on a small range."""
    from pyspark.sql import functions as F

    size = max(count * 16, 64)
    while True:
        found = (
            spark.range(size)
            .select(F.expr(f"pmod(hash(id), {count})").alias("p"), "id")
            .groupBy("p")
            .agg(F.min("id").alias("v"))
            .collect()
        )
        if len(found) == count:
            by_partition = {int(r["p"]): int(r["v"]) for r in found}
            return [by_partition[i] for i in range(count)]
        size *= 4


def _to_partition(frame: Any, count: int, index: Any) -> Any:
    """``frame`` in ``count`` shuffle partitions, row ``r`` in partition ``index(r)`` (an INT in
    ``[0, count)``): Spark's ``repartitionById`` (Spark 4.1+), else a hash repartition on a value
    that Spark's hash partitioning sends to that partition (:func:`_preimages`)."""
    if hasattr(frame, "repartitionById"):
        return frame.withColumn(_ROUTE, index).repartitionById(count, _ROUTE).drop(_ROUTE)
    return _to_partition_by_hash(frame, count, index)


def _to_partition_by_hash(frame: Any, count: int, index: Any) -> Any:
    """:func:`_to_partition` for Spark before 4.1: a hash repartition on a value Spark's hash
    partitioning sends to partition ``index(r)``."""
    from pyspark.sql import functions as F

    routes = _preimages(frame.sparkSession, count)
    route = F.element_at(F.array(*[F.lit(v).cast("bigint") for v in routes]), index + 1)
    return frame.withColumn(_ROUTE, route).repartition(count, _ROUTE).drop(_ROUTE)


def _routed(
    prepared: Any, values: list[tuple[Any, ...]], parts: list[str], num_buckets: int
) -> Any:
    """``prepared`` in one shuffle partition per (partition, bucket); ``values`` are the
    partition values of ``prepared`` (``[()]`` when unpartitioned).

    Every (partition value, bucket) gets its own shuffle partition (:func:`_to_partition`), so
    a task holds one bucket of one partition and sorts by the key alone. A row whose partition
    is not among ``values`` (an input that changed between the two jobs) fails the job instead
    of being dropped. The driver checks every file's partition and bucket again
    (:func:`_describe`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    spark = prepared.sparkSession
    count = len(values) * num_buckets
    if not parts:
        return _to_partition(prepared, count, F.col(BUCKET))
    names = [f"__lakeops_r{i}" for i in range(len(parts))]
    table_rows = [
        (*value, bucket, i * num_buckets + bucket)
        for i, value in enumerate(values)
        for bucket in range(num_buckets)
    ]
    routing = spark.createDataFrame(
        table_rows,
        StructType(
            [
                *[
                    StructField(n, prepared.schema[p].dataType, True)
                    for n, p in zip(names, parts, strict=True)
                ],
                StructField("__lakeops_rb", IntegerType(), False),
                StructField("__lakeops_ri", IntegerType(), False),
            ]
        ),
    )
    on = [prepared[p].eqNullSafe(routing[n]) for p, n in zip(parts, names, strict=True)]
    joined = prepared.join(
        F.broadcast(routing), [*on, prepared[BUCKET] == routing["__lakeops_rb"]], "left"
    )
    index = F.when(F.col("__lakeops_ri").isNull(), F.raise_error(F.lit(_CHANGED_MARK))).otherwise(
        F.col("__lakeops_ri")
    )
    routed = _to_partition(joined, count, index)
    return routed.drop(*names, "__lakeops_rb", "__lakeops_ri")


@dataclass(frozen=True)
class _Counted:
    """What the counting job found: the partition values (``[()]`` when unpartitioned) and
    the rows of every input partition (``None``: order within the tasks instead)."""

    values: list[tuple[Any, ...]]
    rows: list[int] | None


def _hashable(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytearray) else value


def _count_input(prepared: Any, parts: list[str], counted: bool) -> _Counted:
    """One small job over ``prepared``: its partition values and, when ``counted``, the rows of
    each of its partitions (Spark's ``spark_partition_id``)."""
    from pyspark.sql import functions as F

    if not counted:
        if not parts:
            return _Counted([()], None)
        found = prepared.select(*parts).distinct().collect()
        return _Counted([tuple(r) for r in found], None)
    pid = "__lakeops_pid"
    counted_by = prepared.select(F.spark_partition_id().alias(pid), *parts)
    if not parts:
        found = counted_by.groupBy(pid).agg(F.count(F.lit(1)).alias("n")).collect()
        rows = {int(r[pid]): int(r["n"]) for r in found}
        return _Counted([()] if rows else [], _by_partition(rows))
    # one scan, two groupings: the rows of each input partition, and the partition values
    found = (
        counted_by.groupingSets([[pid], parts], pid, *parts)
        .agg(F.count(F.lit(1)).alias("n"), F.grouping(pid).alias("by_value"))
        .collect()
    )
    values: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    rows = {}
    for r in found:
        if r["by_value"]:
            value = tuple(r[p] for p in parts)
            values.setdefault(tuple(_hashable(v) for v in value), value)
        else:
            rows[int(r[pid])] = int(r["n"])
    return _Counted(list(values.values()), _by_partition(rows))


def _by_partition(rows: dict[int, int]) -> list[int]:
    """The counts ``rows`` (partition id -> rows) as a list indexed by partition id."""
    return [rows.get(i, 0) for i in range(max(rows, default=-1) + 1)]


#: logical operators that keep their input's partitions (or, for sources, cut them the same way
#: in every job whatever columns it reads): over only these, counting a DataFrame's partitions
#: in one job tells how the next job cuts them
_NARROW = frozenset(
    {
        "Project",
        "Filter",
        "Union",
        "Sample",
        "Generate",
        "MapInArrow",
        "MapInPandas",
        "SubqueryAlias",
        "Range",
        "LocalRelation",
        "LogicalRDD",
        "LogicalRelation",
        "InMemoryRelation",
        "DataSourceV2Relation",
        "DataSourceV2ScanRelation",
        "HiveTableRelation",
    }
)


def _stable_partitions(df: Any) -> bool:
    """Whether ``df``'s optimized plan holds only :data:`_NARROW` operators, so that a job
    counting its partitions sees them as the write job will. A shuffle in the plan (a join, an
    aggregation, a repartition...) is cut by adaptive execution from its map outputs' sizes,
    which differ when a job reads fewer columns; and a DataFrame without a JVM plan (Spark
    Connect) cannot be inspected: both are ordered within each task instead."""
    try:
        stack = [df._jdf.queryExecution().optimizedPlan()]
    except Exception:  # no JVM plan to inspect (e.g. Spark Connect)
        return False
    while stack:
        node = stack.pop()
        if node.nodeName() not in _NARROW:
            return False
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return True


def _numbered(frame: Any, first_sequence: int, rows: list[int]) -> Any:
    """``frame`` with :data:`_ORDER` = ``first_sequence`` + each row's position in the
    DataFrame: the rows before its input partition (``rows``: each partition's count) + its
    index there. A row past its partition's count (or in a partition the count did not see)
    fails the job (:data:`_COUNT_MARK`). The row's index is taken once, into its own column
    (``monotonically_increasing_id`` counts the rows it is evaluated for)."""
    from pyspark.sql import functions as F

    offsets = [0, *np.cumsum(rows[:-1], dtype=np.int64).tolist()] if rows else []
    pid = F.spark_partition_id() + 1
    offset = F.try_element_at(F.array(*[F.lit(o).cast("bigint") for o in offsets]), pid)
    count = F.try_element_at(F.array(*[F.lit(int(n)).cast("bigint") for n in rows]), pid)
    frame = frame.withColumn(_ORDER, F.monotonically_increasing_id().bitwiseAND(_ROW_INDEX_BITS))
    index = F.col(_ORDER)
    return frame.withColumn(
        _ORDER,
        F.when(offset.isNull() | (index >= count), F.raise_error(F.lit(_COUNT_MARK))).otherwise(
            F.lit(first_sequence) + offset + index
        ),
    )


def _plan(df: Any, table: Any, first_sequence: int, *, counted: bool = True) -> Any:
    """The DataFrame Spark writes, one file per task (None: nothing to write). ``counted``:
    number the rows by their position in the DataFrame (a counting job first, one sort by the
    key); otherwise order a key's rows within each task (a sort by (key, row id))."""
    from pyspark.sql import functions as F

    schema: TableSchema = table.schema
    fields = schema.field_names
    parts = [f"{_PART}{i}" for i in range(len(schema.partition_keys))]
    keys = schema.trimmed_primary_keys
    # (a NOT NULL column given as nullable: fail the job naming it instead of writing a NULL)
    checked = []
    for f in schema.fields:
        c = F.col(f"`{f.name}`")
        if not f.type.nullable and df.schema[f.name].nullable:
            c = F.when(c.isNull(), F.raise_error(F.lit(f"{_NULL_MARK} {f.name!r}"))).otherwise(c)
        checked.append(c.alias(f.name))
    prepared = df.select(*checked)
    prepared = prepared.select(
        *[F.col(f"`{n}`") for n in fields],
        *[F.col(f"`{p}`").alias(a) for p, a in zip(schema.partition_keys, parts, strict=True)],
    )
    # counted before the bucket (whose Arrow UDF, for keys the JVM expression does not hash, a
    # projection cannot prune)
    found = _count_input(prepared, parts, counted)
    if not found.values:  # no rows
        return None
    # (refusal() checked the DataFrame has the key types exactly; key columns are NOT NULL)
    prepared = with_bucket(
        prepared,
        schema.bucket_keys,
        schema.types_of(schema.bucket_keys),
        table.options.bucket,
        BUCKET,
        in_jvm=True,
    )
    key_order = [F.col(f"`{k}`") for k in keys]
    if found.rows is not None:
        prepared = _numbered(prepared, first_sequence, found.rows)
        routed = _routed(prepared, found.values, parts, table.options.bucket)
        # one (partition, bucket) per task, in key order; a key's rows in any order (the
        # driver keeps the one with the highest sequence number)
        ordered = routed.sortWithinPartitions(*key_order)
        sequence = F.col(_ORDER)
    else:
        prepared = prepared.withColumn(_ORDER, F.monotonically_increasing_id())
        routed = _routed(prepared, found.values, parts, table.options.bucket)
        # a key's rows in the DataFrame's order, numbered in that order below
        ordered = routed.sortWithinPartitions(*key_order, F.col(_ORDER))
        sequence = F.lit(first_sequence) + F.monotonically_increasing_id().bitwiseAND(
            F.lit(_ROW_INDEX_BITS)
        )
    return ordered.select(
        *[F.col(f"`{k}`").alias(key_column(k)) for k in keys],
        sequence.alias(SEQ),
        F.lit(RowKind.INSERT).cast("tinyint").alias(KIND),
        *[F.col(f"`{n}`") for n in fields],
    )


def _staged_files(staging: str) -> list[str]:
    """Every Parquet file Spark wrote into ``staging``."""
    return sorted(
        os.path.join(staging, name)
        for name in os.listdir(staging)
        if name.endswith(".parquet") and not name.startswith((".", "_"))
    )


def _repeated(index: pa.Table, key_cols: Sequence[str]) -> np.ndarray:
    """For each row of ``index`` (sorted by key), whether its key equals the previous row's."""
    n = index.num_rows
    same = np.zeros(n, dtype=bool)
    if n > 1:
        equal = np.ones(n - 1, dtype=bool)
        for c in key_cols:
            column = index.column(c)
            eq = pc.equal(column.slice(1), column.slice(0, n - 1))
            equal &= eq.to_numpy(zero_copy_only=False)
        same[1:] = equal
    return same


def _latest(index: pa.Table, key_cols: Sequence[str]) -> np.ndarray:
    """For each row of ``index`` (sorted by key; its ``_SEQUENCE_NUMBER`` column), whether it
    is the row of its key with the highest sequence number (the first such row, were two
    equal): the row the ``deduplicate`` engine keeps."""
    same = _repeated(index, key_cols)
    if not same.any():
        return np.ones(index.num_rows, dtype=bool)
    sequences = np.asarray(index.column(SEQ).to_numpy(), dtype=np.int64)
    run = np.cumsum(~same) - 1
    highest = np.maximum.reduceat(sequences, np.flatnonzero(~same))
    keep: np.ndarray = sequences == highest[run]
    kept = np.flatnonzero(keep)
    keep[kept[1:][run[kept[1:]] == run[kept[:-1]]]] = False
    return keep


def _keep_latest(path: str, keep: np.ndarray, schema: TableSchema) -> None:
    """Rewrite the staged file at ``path`` with only the rows ``keep`` marks (each key's latest
    row in the DataFrame), batch by batch, with Paimon's physical types and the table's codec."""
    source = pq.ParquetFile(path)
    temporary = f"{path}.dedupe"
    offset = 0
    writer: pq.ParquetWriter | None = None
    try:
        for batch in source.iter_batches():
            mask = keep[offset : offset + batch.num_rows]
            offset += batch.num_rows
            kept = batch.filter(pa.array(mask))
            if writer is None:  # each column's encoding chosen as the Python writer does
                plain = _unique_columns(schema)
                writer = pq.ParquetWriter(
                    temporary,
                    source.schema_arrow,
                    use_dictionary=dictionary_columns(pa.Table.from_batches([kept]), plain),
                    **writer_kwargs(settings_for(schema.options, 0)),
                    **writer_options(schema),
                )
            writer.write_batch(kept)
    finally:
        if writer is not None:
            writer.close()
        source.close()
    os.replace(temporary, path)


def _file_index(path: str, schema: TableSchema) -> tuple[bytes | None, bytes | None]:
    """The file indexes ``file-index.*`` asks for over the staged file at ``path``, as the
    Python writer builds them (:mod:`lakeops.kv.file_index`): ``(embedded, None)`` when the
    container fits ``file-index.in-manifest-threshold``, ``(None, container)`` when it must be
    written as the ``<data file>.index`` extra file, ``(None, None)`` without indexes."""
    plan = plan_file_index(schema)
    if plan is None:
        return None, None
    read = pq.read_table(path, columns=plan.columns)
    fields = {f.name: f.type for f in schema.fields}
    columns = {c: read.column(c).cast(fields[c].to_arrow()).combine_chunks() for c in plan.columns}
    return plan.place(columns)


def _describe(
    path: str, table: Any
) -> tuple[bytes, int, DataFileMeta, str, int, bytes | None] | None:
    """Describe one staged file (None: an empty file, removed): its partition, bucket, meta,
    the path it moves to in its bucket directory, how many rows repeating a key it dropped,
    and the bytes of its extra file index (``<path>.index``; None when none is written).

    The file is one task's output, so one (partition, bucket): this is checked here, every
    row's bucket recomputed with Paimon's hash, and a file that breaks it fails the write.
    Spark sorted the file by key without removing repeats (a window over the key made the
    plan before the write half again as slow): where a key repeats, the file is rewritten with
    the row of each key with the highest sequence number only (:func:`_latest`), which is the
    key's last row in the DataFrame and the row the ``deduplicate`` engine keeps. Paimon's
    readers require one row per key in a file. The file's sequence range is its lowest and
    highest sequence number (not in key order: they number the rows in the DataFrame's
    order)."""
    schema: TableSchema = table.schema
    keys = schema.trimmed_primary_keys
    key_types = schema.types_of(keys)
    key_cols = [key_column(k) for k in keys]
    pf = pq.ParquetFile(path)
    if pf.metadata.num_rows == 0:
        os.remove(path)
        return None
    bucket_keys = schema.bucket_keys
    # a bucket key that is a key column is read once, as its _KEY_ copy
    bucket_cols = [key_column(k) if k in keys else k for k in bucket_keys]
    wanted = list(dict.fromkeys([*key_cols, SEQ, *schema.partition_keys, *bucket_cols]))
    index = pf.read(columns=wanted)
    pf.close()
    partition = []
    for p in schema.partition_keys:
        distinct = pc.unique(index.column(p))
        if len(distinct) != 1:
            raise LakeopsError(
                f"lakeops native write: a Spark task wrote rows of several partitions "
                f"({p} = {distinct.to_pylist()[:3]}); nothing was committed"
            )
        partition.append(distinct[0].as_py())
    buckets = assign_buckets(
        [
            index.column(c).cast(t.to_arrow())
            for c, t in zip(bucket_cols, schema.types_of(bucket_keys), strict=True)
        ],
        schema.types_of(bucket_keys),
        table.options.bucket,
    )
    bucket = int(buckets[0])
    if (buckets != bucket).any():
        raise LakeopsError(
            "lakeops native write: a Spark task wrote rows of several buckets "
            f"({sorted(set(buckets.tolist()))[:4]}); nothing was committed"
        )
    keep = _latest(index, key_cols)
    dropped = index.num_rows - int(keep.sum())
    if dropped:
        _keep_latest(path, keep, schema)
        index = index.filter(pa.array(keep))
    rows = index.num_rows
    if len(keys) == 1 and rows > 1:  # the key range below assumes Spark's sort held
        column = index.column(key_cols[0])
        if not pc.all(pc.less(column.slice(0, rows - 1), column.slice(1))).as_py():
            raise LakeopsError(
                "lakeops native write: a Spark task wrote a file whose keys are not in "
                "ascending order; nothing was committed"
            )
    first = [index.column(c)[0].as_py() for c in key_cols]
    last = [index.column(c)[rows - 1].as_py() for c in key_cols]
    if len(keys) == 1:
        mins, maxs = first, last
    else:
        bounds = [pc.min_max(index.column(c)) for c in key_cols]
        mins = [b["min"].as_py() for b in bounds]
        maxs = [b["max"].as_py() for b in bounds]
    sequences = pc.min_max(index.column(SEQ))
    pbytes = binary_row.serialize(partition, schema.types_of(schema.partition_keys))
    locations = table.context.locations
    name = locations.new_name(False, "parquet")
    directory = locations.bucket_path(pbytes, bucket)
    embedded, extra_index = _file_index(path, schema)
    meta = DataFileMeta(
        file_name=name,
        file_size=os.path.getsize(path),
        row_count=rows,
        min_key=binary_row.serialize(first, key_types),
        max_key=binary_row.serialize(last, key_types),
        key_stats=SimpleStats(
            binary_row.serialize(mins, key_types),
            binary_row.serialize(maxs, key_types),
            tuple(0 for _ in keys),
        ),
        value_stats=SimpleStats(),
        min_sequence_number=int(sequences["min"].as_py()),
        max_sequence_number=int(sequences["max"].as_py()),
        schema_id=schema.id,
        level=0,
        creation_time_millis=local_millis(),
        delete_row_count=0,
        file_source=FILE_SOURCE_APPEND,
        value_stats_cols=(),
        embedded_file_index=embedded,
        extra_files=(name + INDEX_SUFFIX,) if extra_index is not None else (),
    )
    return pbytes, bucket, meta, os.path.join(directory, name), dropped, extra_index


def _unique_columns(schema: TableSchema) -> list[str]:
    """The columns whose values never repeat in a file the native path commits: the sequence
    number, and a single-column key (both copies). Spark writes them without a dictionary:
    parquet-mr would build one for each column chunk's first page only to drop it for PLAIN,
    as the Python writer writes them (:mod:`lakeops.kv.parquet_layout`)."""
    keys = schema.trimmed_primary_keys
    return [SEQ, *([key_column(keys[0]), keys[0]] if len(keys) == 1 else [])]


def _write_staged(out: Any, staging: str, settings: Any, schema: TableSchema) -> None:
    """Spark's Parquet writer writes ``out`` into ``staging``, one file per task, with the
    table's level-0 codec (``settings``)."""
    writer = (
        out.write.mode("errorifexists")
        # one file per task: a key's rows never straddle two files
        .option("maxRecordsPerFile", 0)
        .option("compression", _SPARK_CODECS[settings.compression])
    )
    if settings.compression == "zstd":
        writer = writer.option("parquet.compression.codec.zstd.level", settings.zstd_level)
    for column in _unique_columns(schema):
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    writer.parquet(staging)


def _run_job(df: Any, table: Any, first_sequence: int, staging: str, settings: Any) -> bool:
    """Run the Spark job that writes ``df``'s files into ``staging`` (False: nothing to write);
    once more, ordered within each task, when the rows' count did not hold (see the module
    docstring). Errors the plan raises on purpose become lakeops errors."""
    counted = _stable_partitions(df)
    if not counted:
        log.info(
            "lakeops.spark.write: another job may cut the DataFrame's partitions otherwise (a "
            "shuffle in its plan, or no plan to inspect); ordering a key's rows within each task"
        )
    try:
        try:
            out = _plan(df, table, first_sequence, counted=counted)
            if out is not None:
                _write_staged(out, staging, settings, table.schema)
        except Exception as error:
            if not counted or _COUNT_MARK not in str(error):
                raise
            log.info(
                "lakeops.spark.write: a task held rows its input partition's count did not "
                "(the input changed, or Spark cut it differently, between the jobs); writing "
                "again, ordered within each task"
            )
            table.file_io.delete_tree(staging)
            out = _plan(df, table, first_sequence, counted=False)
            if out is not None:
                _write_staged(out, staging, settings, table.schema)
    except Exception as error:
        if _NULL_MARK in str(error):
            column = str(error).split(_NULL_MARK, 1)[1].split("'")[1]
            raise DataValidationError(
                f"column {column!r} is NOT NULL in the table but the DataFrame has a NULL "
                "there; nothing was written"
            ) from None
        if _CHANGED_MARK in str(error):
            raise LakeopsError(
                "lakeops native write: the DataFrame gave rows of a partition its first "
                "job did not see (is it nondeterministic? cache it, or use via='python'); "
                "nothing was written"
            ) from None
        raise
    return out is not None


def write_native(
    df: Any,
    table: Any,
    *,
    overwrite: bool,
    overwrite_partitions: Sequence[Mapping[str, Any]] | None = None,
    commit_user: str | None = None,
    watermark: int | None = None,
) -> NativeWrite:
    """Write ``df`` into ``table`` as one commit through Spark's Parquet writer (see the module
    docstring); :func:`refusal` must have returned None. On any failure before the commit
    every file written is deleted. ``commit_user``: as :meth:`lakeops.Table.commit` (a user
    that already committed publishes nothing; the files written here are deleted);
    ``watermark``: as :meth:`lakeops.Table.commit`."""
    first_sequence, base_id, counts = _next_sequence(table, overwrite)
    settings = settings_for(table.schema.options, 0)
    root = table.root
    staging = os.path.join(root, paths.SPARK_STAGING_DIR, str(uuid.uuid4()))
    placed: list[str] = []
    started = time.perf_counter()
    try:
        planned = _run_job(df, table, first_sequence, staging, settings)
        job_s = time.perf_counter() - started
        staged = _staged_files(staging) if planned else []
        with ThreadPoolExecutor(max_workers=min(8, max(len(staged), 1))) as pool:
            described = list(pool.map(lambda path: _describe(path, table), staged))
        by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        dropped = 0
        for source, item in zip(staged, described, strict=True):
            if item is None:
                continue
            pbytes, bucket, meta, target, repeats, extra_index = item
            # a partition still holding another bucket count must be rescaled first
            check_bucket_count(
                pbytes, table.options.bucket, counts, _partition_name(table), table.root
            )
            if (pbytes, bucket) in by_bucket:
                raise LakeopsError(
                    f"lakeops native write: two Spark tasks wrote bucket {bucket} of one "
                    "partition; nothing was committed"
                )
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.rename(source, target)
            placed.append(target)
            if extra_index is not None:
                placed.append(target + INDEX_SUFFIX)
                with open(target + INDEX_SUFFIX, "wb") as out_file:
                    out_file.write(extra_index)
            by_bucket.setdefault((pbytes, bucket), []).append(meta)
            dropped += repeats
        messages = [
            CommitMessage(
                pbytes, bucket, table.options.bucket, tuple(files), base_snapshot_id=base_id
            )
            for (pbytes, bucket), files in by_bucket.items()
        ]
        commit_overwrite: bool | list[dict[str, Any]] = overwrite
        if overwrite and overwrite_partitions:
            commit_overwrite = [dict(p) for p in overwrite_partitions]
        if messages or commit_overwrite:
            try:
                table.commit(
                    messages,
                    commit_user=commit_user,
                    commit_identifier=BATCH_COMMIT_IDENTIFIER if commit_user else None,
                    overwrite=commit_overwrite,
                    watermark=watermark,
                )
            except CommitStateUnknownError:
                placed = []  # the snapshot may reference the files: keep them
                raise
        rows = sum(f.row_count for m in messages for f in m.new_files)
        log.info(
            "lakeops.spark.write: native path wrote %d files, %d rows, dropped %d rows whose key "
            "a later row of the DataFrame repeats (Spark job %.2f s, footers and commit %.2f s)",
            len(placed),
            rows,
            dropped,
            job_s,
            time.perf_counter() - started - job_s,
        )
        result = NativeWrite(len(placed), rows)
        placed = []
        return result
    finally:
        for path in placed:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        table.file_io.delete_tree(staging)
        _remove_if_empty(os.path.join(root, paths.SPARK_STAGING_DIR))


def _remove_if_empty(directory: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(directory)
