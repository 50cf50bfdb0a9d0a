"""Spark topologies of dynamic-bucket tables (``bucket = -1``), as Paimon's Spark/Flink writers:
rows are shuffled to bucket assigners, assigned, then shuffled by (partition, bucket) to the
writers; the driver commits once.

* **Dynamic buckets** (the primary key holds every partition field): each row's assigner
  channel is computed from its partition hash and key hash (:func:`~lakeops.bucket.dynamic.
  assigner_of`); each channel's assigner loads the partition's HASH index for the keys routed to
  it and opens new buckets only among the ids it owns (``bucket % assigners == channel %
  assigners``), so parallel assigners never hand out the same bucket. Writers record the key
  hashes of their bucket and commit its new HASH index file.
* **Cross-partition upserts**: the table's live keys are read split by split on the executors
  (the bootstrap), unioned with the input and shuffled by primary-key hash to the assigners; each
  keeps the global index of its keys (columnar, :class:`~lakeops.bucket.cross_partition.
  GlobalIndex`), resolves moved keys by the merge engine (retractions, rewritten partitions)
  and assigns new keys among its owned buckets, with exact per-bucket counts computed once on
  the driver.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.table.primary_key import Table
from lakeops.write.records import BUCKET_COLUMN, KIND_COLUMN

__all__ = ["assign_cross_partition", "assign_dynamic"]

_CHANNEL = "__lakeops_channel"
_SEQ = "__lakeops_arrival"
_SOURCE = "__lakeops_source"  # 0: existing key (bootstrap), 1: input row


def _parallelism(spark: Any, configured: int | None) -> int:
    return max(1, configured or spark.sparkContext.defaultParallelism)


def assign_dynamic(df: Any, options: dict[str, str]) -> Any:
    """``df`` with a ``__lakeops_bucket`` column assigned by per-channel hash-index assigners."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    from lakeops.spark.tables import open_table

    table = open_table(options)
    dyn = _dynamic_options(table)
    channels = _parallelism(df.sparkSession, dyn.assigner_parallelism)
    assigners = min(dyn.initial_buckets or channels, channels)
    keys = table.schema.bucket_keys
    parts = table.schema.partition_keys

    def add_channel(batches: Any) -> Any:
        from lakeops.bucket.dynamic import assigner_of
        from lakeops.format.bucket_hash import hash_rows

        t = open_table(options)
        key_types = t.schema.types_of(keys)
        part_types = t.schema.types_of(parts)
        for batch in batches:
            n = batch.num_rows
            if not n:
                yield batch.append_column(_CHANNEL, pa.array([], pa.int32()))
                continue
            kh = hash_rows(
                [
                    batch.column(k).cast(ty.to_arrow())
                    for k, ty in zip(keys, key_types, strict=True)
                ],
                key_types,
            )
            ph = (
                hash_rows(
                    [
                        batch.column(k).cast(ty.to_arrow())
                        for k, ty in zip(parts, part_types, strict=True)
                    ],
                    part_types,
                )
                if parts
                else np.zeros(n, np.int32)
            )
            channel = np.empty(n, dtype=np.int64)
            for value in np.unique(ph):
                rows = ph == value
                channel[rows] = assigner_of(int(value), kh[rows], channels, assigners)
            yield batch.append_column(_CHANNEL, pa.array(channel.astype(np.int32)))

    with_channel = df.mapInArrow(
        add_channel,
        StructType([*df.schema.fields, StructField(_CHANNEL, IntegerType(), False)]),
    )

    def assign(group: pa.Table) -> pa.Table:
        from lakeops.bucket.dynamic import PartitionIndex, partition_groups
        from lakeops.format import binary_row
        from lakeops.format.bucket_hash import hash_rows
        from lakeops.write.records import to_records

        t = open_table(options)
        schema = t.schema
        channel = int(group.column(_CHANNEL)[0].as_py())
        data = group.drop_columns([_CHANNEL])
        records = to_records(data, schema, t.options)
        mask = _prepare_mask(t, records)
        data = data.filter(pa.array(mask))
        records = records.filter(pa.array(mask))
        key_types = schema.types_of(keys)
        part_types = schema.types_of(parts)
        hashes = hash_rows([records.column(k) for k in keys], key_types)
        entries = t.store.index_entries(t.latest_snapshot())
        buckets = np.empty(records.num_rows, dtype=np.int32)
        for values, rows in partition_groups(records, parts):
            pbytes = binary_row.serialize(list(values), part_types)
            phash = (
                int(
                    hash_rows(
                        [
                            pa.array([v], ty.to_arrow())
                            for v, ty in zip(values, part_types, strict=True)
                        ],
                        part_types,
                    )[0]
                )
                if parts
                else 0
            )
            index = PartitionIndex.load(
                [e for e in entries if e.partition == pbytes],
                lambda e: t.store.hash_index(e, t.schema),
                partition_hash=phash,
                num_channels=channels,
                num_assigners=assigners,
                assign_id=channel,
                target_row_num=dyn.target_row_num,
                max_buckets=dyn.max_buckets,
            )
            buckets[rows] = index.assign(hashes[rows])
        return data.append_column(BUCKET_COLUMN, pa.array(buckets))

    out_schema = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    return with_channel.groupBy(_CHANNEL).applyInArrow(assign, out_schema)


def _prepare_mask(table: Any, records: pa.Table) -> np.ndarray:
    """Which records the merge engine's ``prepare`` keeps (ignore-delete etc.); raises what it
    raises (first-row refusing deletes)."""
    marker = "__lakeops_row"
    tagged = records.append_column(marker, pa.array(np.arange(records.num_rows)))
    kept = table.context.engine.prepare(tagged)
    mask = np.zeros(records.num_rows, dtype=bool)
    mask[kept.column(marker).to_numpy()] = True
    return mask


def _dynamic_options(table: Any) -> Any:
    return table.context.buckets


def assign_cross_partition(df: Any, options: dict[str, str]) -> tuple[Any, Any]:
    """Rows to write (partitions rewritten, retractions added) with ``__lakeops_bucket`` and
    ``__lakeops_kind``, assigned by per-key-hash global-index assigners; and the cached
    bootstrap DataFrame of existing keys, to ``unpersist()`` once the write is done."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, IntegerType, StructField, StructType

    from lakeops.bucket.cross_partition import bootstrap_splits
    from lakeops.read.scan import table_deletion_files
    from lakeops.spark.tables import open_table

    spark = df.sparkSession
    table = open_table(options)
    schema = table.schema
    dyn = _dynamic_options(table)
    assigners = _parallelism(spark, dyn.assigner_parallelism)
    key_names = list(dict.fromkeys([*schema.primary_keys, *schema.partition_keys]))
    snapshot = table.latest_snapshot()
    splits = bootstrap_splits(
        table.store,
        schema,
        snapshot,
        dyn.index_ttl_ms,
        table_deletion_files(table.context, snapshot),
    )
    key_fields = [f for f in df.schema.fields if f.name in key_names]
    input_names = [f.name for f in df.schema.fields]
    boot_schema = StructType([*key_fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    boot_names = [f.name for f in key_fields]

    def read_keys(batches: Any) -> Any:
        from lakeops.bucket.cross_partition import split_keys

        t = open_table(options)
        assert isinstance(t, Table)  # dynamic buckets are a primary-key table's
        reader = t.split_reader()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                split = splits[i]
                keys = split_keys(reader, t.schema, split)
                keys = keys.select(boot_names)
                yield from keys.append_column(
                    BUCKET_COLUMN, pa.array(np.full(keys.num_rows, split.bucket, np.int32))
                ).to_batches()

    tasks = max(1, min(len(splits), 2 * spark.sparkContext.defaultParallelism))
    boot = (
        spark.range(len(splits), numPartitions=tasks).mapInArrow(read_keys, boot_schema).persist()
    )
    # exact keys per (partition, bucket), for the assigners' bucket filling
    counts_rows = boot.groupBy(*schema.partition_keys, BUCKET_COLUMN).count().collect()
    counts = json.dumps(
        [
            [list(r[: len(schema.partition_keys)]), r[BUCKET_COLUMN], r["count"]]
            for r in counts_rows
        ],
        default=str,
    )
    source = df.withColumn(_SEQ, F.monotonically_increasing_id()).withColumn(
        _SOURCE, F.lit(1).cast("byte")
    )
    existing = boot.withColumn(_SEQ, F.lit(-1).cast("long")).withColumn(
        _SOURCE, F.lit(0).cast("byte")
    )
    merged = source.unionByName(existing, allowMissingColumns=True)
    channel = F.pmod(F.hash(*[F.col(k) for k in schema.primary_keys]), F.lit(assigners))
    merged = merged.withColumn(_CHANNEL, channel.cast("int"))

    def assign(group: pa.Table) -> pa.Table:
        from lakeops.bucket.cross_partition import GlobalIndex
        from lakeops.write.records import to_records

        t = open_table(options)
        aid = int(group.column(_CHANNEL)[0].as_py())
        index = GlobalIndex(
            t.schema,
            t.options.merge_engine,
            dyn.target_row_num,
            owns=lambda b: b % assigners == aid,
        )
        for values, bucket, n in json.loads(counts):  # exact fill of every bucket
            pid = index.partition_id(tuple(_typed(t, values)))
            index.counts[pid][int(bucket)] = int(n)
        is_boot = group.column(_SOURCE).to_numpy() == 0
        existing_keys = group.filter(pa.array(is_boot))
        if existing_keys.num_rows:
            index.load(
                existing_keys.select(key_names),
                existing_keys.column(BUCKET_COLUMN).to_numpy(),
                count=False,
            )
        rows = group.filter(pa.array(~is_boot)).sort_by(_SEQ)
        data = rows.select(input_names)
        records = to_records(data, t.schema, t.options)
        records = records.filter(pa.array(_prepare_mask(t, records)))
        out, buckets = index.resolve(records)
        kinds = out.column("_VALUE_KIND")
        out = out.drop_columns(["_VALUE_KIND"]).select(input_names)
        return out.append_column(BUCKET_COLUMN, pa.array(buckets)).append_column(KIND_COLUMN, kinds)

    out_schema = StructType(
        [
            *df.schema.fields,
            StructField(BUCKET_COLUMN, IntegerType(), False),
            StructField(KIND_COLUMN, ByteType(), False),
        ]
    )
    return merged.groupBy(_CHANNEL).applyInArrow(assign, out_schema), boot


def _typed(table: Any, values: list[Any]) -> list[Any]:
    """Partition values from the driver's JSON, as the partition columns' Python values."""
    arrow = table.schema.arrow_schema()
    return [
        pa.array([v]).cast(arrow.field(k).type)[0].as_py() if v is not None else None
        for k, v in zip(table.schema.partition_keys, values, strict=True)
    ]
