"""Point lookups of primary keys.

Keys are routed to their (partition, bucket) with the writer's hash; inside a bucket only files
whose key range contains one of the keys are opened, and for a single-column key Parquet
row-group statistics skip the rest of each file. The found records are merged with the table's
engine exactly as a read merges them. Tables that need lookup (``changelog-producer=lookup``,
first-row, deletion vectors, ``force-lookup``) are looked up in levels ≥ 1 only, as Paimon's
lookups are: level-0 data becomes visible to them when an L0 flush lifts it. Postponed rows of
a postpone table are looked up only where its reads merge them (``postpone.merge-on-read``,
:mod:`lakeops.read.postpone`). A file with a
deletion vector (``deletion-vectors.enabled``) is read whole and loses its deleted rows before
the merge, as a batch read of the table does (:mod:`lakeops.read.merge_read`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import DataValidationError
from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.floats import canonical_table, is_floating, order_value
from lakeops.format.kv import KIND, key_column
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.kv.reader import KeyValueReader
from lakeops.merge import merge_sorted, sort_records
from lakeops.merge.engine import is_retraction
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.postpone import merges_on_read, routed, sequenced_after
from lakeops.read.scan import table_deletion_files
from lakeops.store.context import TableContext

__all__ = ["lookup"]


def _key_tuples(table: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def lookup(
    ctx: TableContext,
    keys: pa.Table,
    columns: Sequence[str],
    levels_from: int,
) -> pa.Table:
    """The current rows of ``keys`` (a table of the primary-key columns)."""
    store, schema, options, engine = ctx.store, ctx.schema, ctx.options, ctx.engine
    needed = list(dict.fromkeys([*schema.primary_keys, *schema.partition_keys]))
    missing = [k for k in needed if k not in keys.column_names]
    if missing:
        raise DataValidationError(
            f"lookup keys lack column(s) {missing}; give every primary-key "
            f"and partition column ({needed})"
        )
    keys = canonical_table(
        pa.table(
            [keys.column(k).cast(schema.field(k).type.to_arrow()) for k in needed], names=needed
        ),
        needed,
    )
    if any(keys.column(k).null_count for k in needed):
        raise DataValidationError("lookup keys contain nulls; primary keys are never null")
    reader = KeyValueReader(store.file_io, schema, store.schema, store.root)
    trimmed = schema.trimmed_primary_keys
    latest = store.latest_snapshot()
    vectors = table_deletion_files(ctx, latest)
    dvs = DeletionVectorReader(store.file_io)
    entries = list(store.live_entries(latest))
    live = [e for e in entries if e.bucket != POSTPONE_BUCKET]
    fixed = options.bucket > 0
    buckets = (
        assign_buckets(
            [keys.column(k) for k in schema.bucket_keys],
            schema.types_of(schema.bucket_keys),
            options.bucket,
        )
        if fixed
        else None
    )
    # dynamic buckets: a key may be in any bucket of its partition (key ranges prune files)
    partition_buckets: dict[bytes, set[int]] = {}
    if not fixed:
        for e in live:
            partition_buckets.setdefault(e.partition, set()).add(e.bucket)
    part_types = schema.types_of(schema.partition_keys)
    part_rows = _key_tuples(keys, list(schema.partition_keys)) if schema.partition_keys else None
    key_partitions = [
        binary_row.serialize(list(row), part_types) for row in part_rows or [()] * keys.num_rows
    ]
    # postponed rows are looked up where reads merge them (postpone.merge-on-read), routed as
    # the read routes them, after the bucket's files; elsewhere they are not read, so not here
    postponed = (
        routed(ctx, entries, set(key_partitions).__contains__) if merges_on_read(ctx) else {}
    )
    for pbytes, bucket in postponed:
        partition_buckets.setdefault(pbytes, set()).add(bucket)
    wanted: dict[tuple[bytes, int], list[int]] = {}
    for i, pbytes in enumerate(key_partitions):
        for bucket in (
            [int(buckets[i])] if buckets is not None else partition_buckets.get(pbytes, ())
        ):
            wanted.setdefault((pbytes, bucket), []).append(i)
    files: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    locations = ctx.locations
    for e in live:
        if e.file.level >= levels_from and (e.partition, e.bucket) in wanted:
            files.setdefault((e.partition, e.bucket), []).append(e.file)
    value_cols = [
        c
        for c in dict.fromkeys([*columns, *options.sequence_fields, *engine.merge_columns()])
        if c not in trimmed
    ]
    parts = []
    for (pbytes, bucket), rows in wanted.items():
        subset = keys.take(pa.array(rows))
        # key tuples in Java's total order for floats, as reader.key_range gives the bounds
        sought = sorted({tuple(map(order_value, t)) for t in _key_tuples(subset, trimmed)})
        candidates = _candidates(reader, files.get((pbytes, bucket), []), sought)
        extra = postponed.get((pbytes, bucket))
        if not candidates and extra is None:
            continue
        directory = locations.bucket_path(pbytes, bucket)
        probe = (
            pa.table({key_column(k): subset.column(k) for k in trimmed})
            .group_by([key_column(k) for k in trimmed])
            .aggregate([])
        )
        records = [
            _read_matching(
                reader,
                directory,
                f,
                value_cols,
                probe,
                dvs,
                vectors.get((pbytes, bucket, f.file_name)),
            )
            for f in candidates
        ]
        if extra is not None:
            bucket_files = files.get((pbytes, bucket), [])
            after = max((f.max_sequence_number for f in bucket_files), default=-1)
            numbered = sequenced_after(extra, after).select(reader.record_schema(value_cols).names)
            records.append(_semi_join(numbered, probe))
        merged = merge_sorted(
            sort_records(
                pa.concat_tables(records),
                reader.merge_keys,
                options.sequence_fields,
                options.sequence_descending,
            ),
            reader.merge_keys,
            engine,
        )
        live = merged.filter(pc.invert(is_retraction(merged.column(KIND))))
        for k in trimmed:
            live = (
                live.append_column(k, live.column(key_column(k)))
                if k not in live.column_names
                else live
            )
        parts.append(
            live.select(list(columns)).cast(
                pa.schema([schema.arrow_schema().field(c) for c in columns])
            )
        )
    target = pa.schema([schema.arrow_schema().field(c) for c in columns])
    return pa.concat_tables(parts) if parts else target.empty_table()


def _candidates(
    reader: KeyValueReader, files: list[DataFileMeta], sought: list[tuple[Any, ...]]
) -> list[DataFileMeta]:
    """The ``files`` whose key range holds one of the ``sought`` keys (sorted key tuples)."""
    found = []
    for f in files:
        lo, hi = reader.key_range(f)
        at = bisect.bisect_left(sought, lo)
        if at < len(sought) and sought[at] <= hi:
            found.append(f)
    return found


def _read_matching(
    reader: KeyValueReader,
    directory: str,
    f: DataFileMeta,
    value_cols: list[str],
    probe: pa.Table,
    dvs: DeletionVectorReader,
    vector: DeletionFile | None,
) -> pa.Table:
    """Records of one file whose key is in ``probe`` (row groups pruned by statistics unless
    the file has a deletion ``vector``: then every row is read, and the deleted ones dropped)."""
    key_cols = probe.column_names
    if vector is not None:
        return _semi_join(dvs.apply(reader.read(directory, f, value_cols), vector, f), probe)
    # float keys: Parquet statistics leave NaN out of min/max, so no row group is skipped; the
    # join compares the canonical NaN bits both sides carry (lakeops.format.floats)
    if len(key_cols) == 1 and not is_floating(probe.schema.field(0).type):
        return reader.read_filtered(
            directory, f, value_cols, key_cols[0], probe.column(0).to_pylist()
        )
    return _semi_join(reader.read(directory, f, value_cols), probe)


def _semi_join(records: pa.Table, probe: pa.Table) -> pa.Table:
    """The records whose key is in ``probe``, sorted by key, with the records' own schema (a
    join loses NOT NULL flags, which the other files' records keep)."""
    keys = probe.column_names
    found = records.join(probe, keys=keys, join_type="left semi")
    return found.sort_by([(k, "ascending") for k in keys]).cast(records.schema)
