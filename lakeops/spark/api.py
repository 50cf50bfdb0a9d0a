"""The Python-side helpers around the data source: register, read, write, compact, and the
row-level delete / update / merge (of primary-key tables on the executors,
:mod:`lakeops.spark.row_level`)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from lakeops.commit.exactly_once import latest_snapshot_of_user
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.manifest import FileKind
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.snapshot import Snapshot
from lakeops.kv.formats import check_writable
from lakeops.maintenance.rescale import RescaleResult
from lakeops.parallel import check_parallelism
from lakeops.spark.bucket_expr import with_bucket
from lakeops.table import AnyTable
from lakeops.table.append import AppendTable
from lakeops.table.modes import WriteMode
from lakeops.table.row_level import MergeBuilder, RowChanges

__all__ = [
    "WritePath",
    "compact",
    "delete",
    "merge",
    "read",
    "register",
    "rescale",
    "update",
    "write",
]

log = logging.getLogger(__name__)

#: which path :func:`write` takes (``"auto"``: native where it can) and took
WritePath = Literal["auto", "native", "python"]

BUCKET_COLUMN = "__lakeops_bucket"
# Spark type names of the key types the JVM bucket expression handles (exact matches only; any
# other input type goes through the Arrow UDF, which casts like the writer does)
_SPARK_TYPE_NAMES = {
    "BOOLEAN": "boolean",
    "TINYINT": "byte",
    "SMALLINT": "short",
    "INT": "integer",
    "DATE": "date",
    "BIGINT": "long",
}


def register(spark: Any) -> None:
    """Register the ``lakeops`` data source with a SparkSession (idempotent), enable Python
    data-source filter pushdown (used for partition and file pruning), and, on a local master
    where the user chose no interpreter, start the Python workers with the interpreter running
    lakeops (:func:`lakeops.spark.workers.use_this_python`)."""
    from lakeops.spark.datasource import LakeopsDataSource
    from lakeops.spark.workers import use_this_python

    use_this_python(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(LakeopsDataSource)


def _options(
    path: str, storage_options: Mapping[str, Any] | None, catalog_options: Mapping[str, str] | None
) -> dict[str, str]:
    return {
        "path": path,
        "storage_options": json.dumps(dict(storage_options or {})),
        "catalog_options": json.dumps(dict(catalog_options or {})),
    }


def read(
    spark: Any,
    path: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    columns: Sequence[str] | None = None,
) -> Any:
    """A DataFrame of the table's merged rows; with ``columns``, of those columns only, in that
    order, and only those are read from the files (Spark's Python data sources get no column
    pruning from a ``select``, so this is how a read skips columns)."""
    register(spark)
    reader = spark.read.format("lakeops").options(
        **_options(path, storage_options, catalog_options)
    )
    if columns is not None:
        from pyspark.sql.types import StructType

        from lakeops.spark.tables import open_table
        from lakeops.spark.types import spark_schema

        options = _options(path, storage_options, catalog_options)
        table = spark_schema(open_table(options).arrow_schema)
        by_name = {f.name: f for f in table.fields}
        missing = [c for c in columns if c not in by_name]
        if missing or not columns:
            raise ConfigurationError(
                f"columns {missing or list(columns)} are not columns of the table at {path} "
                f"(its columns: {table.fieldNames()})"
            )
        reader = reader.schema(StructType([by_name[c] for c in columns]))
    return reader.load()


def _write_native(
    df: Any,
    table: Any,
    via: WritePath,
    mode: WriteMode,
    overwrite_partitions: Sequence[Mapping[str, Any]] | None,
    commit_user: str | None,
    watermark: int | None,
) -> bool:
    """Write ``df`` through the native path when it can write the table exactly (True); else
    refuse for ``via = "native"`` or return False (the Python writer takes it)."""
    from lakeops.spark.native import refusal, write_native

    df_types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    why = refusal(table, df_types, mode)
    if why is None:
        write_native(
            df,
            table,
            overwrite=mode == "overwrite",
            overwrite_partitions=overwrite_partitions,
            commit_user=commit_user,
            watermark=watermark,
        )
        return True
    if via == "native":
        raise UnsupportedFeatureError(
            f"lakeops.spark.write cannot take the native path: {why}; use via='auto' or 'python'"
        )
    log.info("lakeops.spark.write: Python writer (%s)", why)
    return False


def write(
    df: Any,
    path: str,
    *,
    mode: WriteMode = "append",
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    overwrite_partitions: Sequence[Mapping[str, Any]] | None = None,
    parallelism: int | None = None,
    via: WritePath = "python",
    commit_user: str | None = None,
    watermark: int | None = None,
) -> WritePath:
    """Write ``df`` into the table as one commit, one writer per (partition, bucket), and
    return which path wrote it: ``"native"`` or ``"python"`` (also logged).

    ``via``: ``"python"`` (default) takes the Python writer; ``"auto"`` takes the native path
    (:mod:`lakeops.spark.native`: Spark computes the Paimon columns, sorts and writes the
    Parquet files, the driver commits them) whenever it can write the table exactly, else the
    Python writer; ``"native"`` refuses (:class:`~lakeops.errors.UnsupportedFeatureError`,
    naming why) where the native path cannot write. The native path is opt-in
    (``benchmarks/spark_native_write.md`` compares the two writers).

    ``parallelism``: the most buckets one task flushes at once; default and cap: the task's
    CPUs (``spark.task.cpus``), so executors never run more threads than their task slots.

    ``commit_user``: a stable commit user makes the write exactly-once — run again after its
    commit landed (a retried task), it publishes nothing and deletes the files it wrote
    (:mod:`lakeops.commit.exactly_once`). Without one, every call commits.

    ``watermark`` (epoch milliseconds): stored in the snapshot, as :meth:`lakeops.Table.commit`
    stores it (the larger of it and the latest snapshot's; it drives
    ``tag.automatic-creation = watermark``).

    The Python path: the bucket of every row is computed with Paimon's hash (in the JVM for
    integer-like keys, see :mod:`lakeops.spark.bucket_expr`, else in a vectorised Arrow UDF),
    the DataFrame is repartitioned by (partition columns, bucket), so each bucket has exactly
    one writer per job and sequence numbers stay consistent, then written through the
    ``lakeops`` data source. An append table with unaware bucket (``bucket = -1``): every task
    writes what it holds, with no shuffle; a fixed-bucket append table (``bucket-key``) gets
    one writer per bucket, which keeps the rows of a bucket in the order that writer receives
    them.
    """

    return _write(
        df,
        path,
        mode=mode,
        storage_options=storage_options,
        catalog_options=catalog_options,
        overwrite_partitions=overwrite_partitions,
        parallelism=parallelism,
        via=via,
        commit_user=commit_user,
        watermark=watermark,
    )


def _write(
    df: Any,
    path: str,
    *,
    mode: WriteMode,
    storage_options: Mapping[str, Any] | None,
    catalog_options: Mapping[str, str] | None,
    overwrite_partitions: Sequence[Mapping[str, Any]] | None,
    parallelism: int | None,
    via: WritePath,
    commit_user: str | None,
    watermark: int | None,
    last_safe_snapshot: int | None = None,
) -> WritePath:
    """:func:`write`, with an overwrite's ``last_safe_snapshot`` (see ``Table.commit``)."""
    from lakeops.spark.tables import open_table

    check_parallelism(parallelism)
    spark = df.sparkSession
    register(spark)
    options = _options(path, storage_options, catalog_options)
    if parallelism is not None:
        options["parallelism"] = str(parallelism)
    if commit_user:
        options["commit_user"] = commit_user
    if watermark is not None:
        options["watermark"] = str(int(watermark))
    if last_safe_snapshot is not None:
        options["last_safe_snapshot"] = str(int(last_safe_snapshot))
    table = open_table(options)
    check_writable(table.schema)
    if via not in ("auto", "native", "python"):
        raise ConfigurationError(f"via must be 'auto', 'native' or 'python', not {via!r}")
    if via != "python" and _write_native(
        df, table, via, mode, overwrite_partitions, commit_user, watermark
    ):
        return "native"
    if table.options.bucket == POSTPONE_BUCKET:
        # postpone buckets: every task writes its rows to bucket-postpone, no shuffle needed
        df.write.format("lakeops").mode(mode).options(**options).save()
        return "python"
    if isinstance(table, AppendTable) and table.options.bucket == -1:
        # unaware bucket: any task may write any row (each writes bucket 0 numbering its rows
        # from 0, as Paimon's unaware-bucket writers do), so no shuffle
        if overwrite_partitions:
            options["overwrite_partitions"] = json.dumps([dict(p) for p in overwrite_partitions])
        df.write.format("lakeops").mode(mode).options(**options).save()
        return "python"
    if table.options.bucket == -1:  # dynamic buckets: assigners, one writer per partition/bucket
        from lakeops.spark.dynamic import assign_cross_partition, assign_dynamic

        cached = None
        if table.schema.cross_partition_update:
            assigned, cached = assign_cross_partition(df, options)
        else:
            assigned = assign_dynamic(df, options)
        parts = [*table.schema.partition_keys, BUCKET_COLUMN]
        routed = assigned.repartition(spark.sparkContext.defaultParallelism, *parts)
        if overwrite_partitions:
            options["overwrite_partitions"] = json.dumps([dict(p) for p in overwrite_partitions])
        try:
            routed.write.format("lakeops").mode(mode).options(**options).save()
        finally:
            if cached is not None:
                cached.unpersist()
        return "python"
    routed = _by_bucket(df, table)
    if overwrite_partitions:
        options["overwrite_partitions"] = json.dumps([dict(p) for p in overwrite_partitions])
    routed.write.format("lakeops").mode(mode).options(**options).save()
    return "python"


def _by_bucket(df: Any, table: AnyTable) -> Any:
    """``df`` repartitioned by (partition columns, Paimon's bucket of its bucket keys) into a
    multiple of the bucket count, so one task writes each fixed bucket."""
    keys = table.schema.bucket_keys
    key_types = table.schema.types_of(keys)
    num_buckets = table.options.bucket
    spark_types = {f.name: f.dataType.typeName() for f in df.schema.fields}
    nullable = {f.name for f in df.schema.fields if f.nullable}
    # integer-like keys are hashed in the JVM, with no Python round trip; the JVM expression
    # hashes non-null keys only: an append table's bucket key may be null (its bucket then
    # comes from the Arrow UDF, which hashes nulls as the writer does)
    bucketed = with_bucket(
        df,
        keys,
        key_types,
        num_buckets,
        BUCKET_COLUMN,
        in_jvm=all(
            spark_types.get(k) == _SPARK_TYPE_NAMES.get(t.root)
            for k, t in zip(keys, key_types, strict=True)
        )
        and not (isinstance(table, AppendTable) and nullable.intersection(keys)),
    )
    parts = [*table.schema.partition_keys, BUCKET_COLUMN]
    parallelism = df.sparkSession.sparkContext.defaultParallelism
    groups = max(num_buckets, 1) * max(parallelism // max(num_buckets, 1), 1)
    return bucketed.repartition(groups, *parts).drop(BUCKET_COLUMN)


def _merge_route(table: AnyTable, on: Sequence[str]) -> Any:
    """How a merge's source reaches its tasks (:mod:`lakeops.spark.row_level`): by bucket for
    fixed buckets, by partition for dynamic ones, by the ``on`` columns for postpone buckets."""

    def route(df: Any) -> Any:
        parallelism = df.sparkSession.sparkContext.defaultParallelism
        bucket = table.options.bucket
        if bucket > 0:
            return _by_bucket(df, table)
        columns = list(table.schema.partition_keys) if bucket == -1 else list(on)
        return df.repartition(parallelism, *columns) if columns else df.repartition(1)

    return route


def compact(
    spark: Any,
    path: str,
    *,
    full: bool = False,
    force_level0: bool = False,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    parallelism: int | None = None,
) -> Snapshot | None:
    """Distributed compaction (``full``) or level-0 flush (``force_level0``): buckets are
    planned on the driver, compacted by Spark tasks (``spark.task.cpus`` buckets per task, one
    by default, each task on at most its task CPUs; ``parallelism`` lowers that) and committed
    once by the driver as one ``COMPACT`` snapshot; None when nothing needed compacting. If any
    task fails, or the commit conflicts, nothing is committed and every file the job wrote is
    deleted. Memory per task is bounded (streaming merge). See
    :mod:`lakeops.spark.compaction`."""
    from lakeops.spark.compaction import compact as run

    return run(
        spark,
        _options(path, storage_options, catalog_options),
        full=full,
        force_level0=force_level0,
        partitions=partitions,
        parallelism=parallelism,
    )


def rescale(
    spark: Any,
    path: str,
    *,
    bucket: int | None = None,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    parallelism: int | None = None,
) -> RescaleResult:
    """:meth:`lakeops.Table.rescale_buckets` on Spark: the driver changes ``bucket`` (when
    given) and plans the partitions to rewrite (default: those holding another count) at the
    latest snapshot; Spark tasks read their rows at that snapshot (a primary-key table's merged
    rows, split by split), route them to the table's bucket count and write each bucket once,
    as :func:`write` does; the driver publishes ONE ``OVERWRITE`` commit of those partitions,
    refused (:class:`~lakeops.errors.CommitConflictError`, which Spark hands on wrapped as it
    does every error of a data source's commit; the written files deleted) when another job
    changed their rows after the planned snapshot (Paimon's
    ``commit.strict-mode.last-safe-snapshot``). ``parallelism``: as :func:`write`'s."""
    from lakeops.spark.tables import open_table

    check_parallelism(parallelism)
    register(spark)
    options = _options(path, storage_options, catalog_options)
    table = open_table(options)
    plan, previous, name = table._plan_rescale(bucket, partitions)
    if plan.empty or plan.snapshot is None:
        return RescaleResult((), previous, table.options.bucket, 0, None)
    read = {**options, "scan.snapshot-id": str(plan.snapshot.id)}
    user = f"lakeops-rescale-{uuid.uuid4().hex}"  # names this job's OVERWRITE snapshot
    specs = _partition_specs(table, plan.partitions)
    if specs is not None:  # the splits of exactly those partitions, matched as the overwrite
        read["partitions"] = json.dumps(specs)
    _write(
        spark.read.format("lakeops").options(**read).load(),
        path,
        mode="overwrite",
        storage_options=storage_options,
        catalog_options=catalog_options,
        overwrite_partitions=specs,
        parallelism=parallelism,
        via="python",
        commit_user=user,
        watermark=None,
        last_safe_snapshot=plan.snapshot.id,
    )
    table = open_table(options)
    snapshot = latest_snapshot_of_user(table.store, user)
    assert snapshot is not None
    added = table.store.delta_entries(snapshot)
    written = sum(e.file.row_count for e in added if e.kind == FileKind.ADD)
    return RescaleResult(
        tuple(name(p) for p in plan.partitions), previous, table.options.bucket, written, snapshot
    )


def _partition_specs(table: AnyTable, partitions: Sequence[bytes]) -> list[dict[str, Any]] | None:
    """Specs of serialized ``partitions`` as users write them (their directory values; None
    for an unpartitioned table, whose overwrite is whole)."""
    keys = list(table.schema.partition_keys)
    names = table.context.locations.partitions
    if not keys or names is None:
        return None
    types = table.schema.types_of(keys)
    return [
        dict(zip(keys, names.value_names(binary_row.deserialize_internal(p, types)), strict=True))
        for p in partitions
    ]


def _active_spark(spark: Any | None) -> Any | None:
    """``spark``, else the active SparkSession (None where there is none)."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def delete(
    path: str,
    filter: Any,
    *,
    spark: Any | None = None,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
) -> RowChanges:
    """Delete the rows ``filter`` (a ``pyarrow.compute`` expression or tuples, as
    :meth:`lakeops.Table.delete` takes) holds for, as Paimon's ``DELETE``, one commit. A
    primary-key table changes on the executors of ``spark`` (default: the active session),
    one task per bucket the filter may touch (:mod:`lakeops.spark.row_level`); an append
    table, a cross-partition-update table, or no session: on the driver, with the library."""
    from lakeops.spark import row_level
    from lakeops.spark.tables import open_table

    options = _options(path, storage_options, catalog_options)
    table = open_table(options)
    session = _active_spark(spark)
    if session is None or not row_level.on_executors(table):
        return table.delete(filter)
    register(session)
    return row_level.delete(session, options, table, filter)


def update(
    path: str,
    filter: Any,
    set: Mapping[str, Any],
    *,
    spark: Any | None = None,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
) -> RowChanges:
    """Set columns of the rows ``filter`` holds for (:meth:`lakeops.Table.update`), one commit:
    on the executors or the driver as :func:`delete` decides."""
    from lakeops.spark import row_level
    from lakeops.spark.tables import open_table

    options = _options(path, storage_options, catalog_options)
    table = open_table(options)
    session = _active_spark(spark)
    if session is None or not row_level.on_executors(table):
        return table.update(filter, set)
    register(session)
    return row_level.update(session, options, table, filter, set)


def merge(
    source: Any,
    path: str,
    on: Sequence[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
) -> MergeBuilder:
    """A ``MERGE INTO`` of a Spark DataFrame ``source`` into the table at ``path``, matched on
    ``on`` (:meth:`lakeops.Table.merge`); add clauses, then ``execute()`` (one commit). Into a
    primary-key table matched on every primary-key column, the source stays distributed: it is
    routed as a write routes its rows and each task merges its share
    (:mod:`lakeops.spark.row_level`). Otherwise the source is collected to the driver as Arrow
    (``toArrow``), so it must fit there, and merged with the library."""
    from lakeops.spark import row_level
    from lakeops.spark.tables import open_table

    options = _options(path, storage_options, catalog_options)
    table = open_table(options)
    if hasattr(source, "sparkSession") and row_level.on_executors(table, on):
        register(source.sparkSession)
        return row_level.SparkMergeBuilder(source, table, on, options, _merge_route(table, on))
    data = source.toArrow() if hasattr(source, "toArrow") else source
    return table.merge(data, on)
