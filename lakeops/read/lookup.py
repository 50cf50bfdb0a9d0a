"""Point lookups of primary keys.

Keys are routed to their (partition, bucket) with the writer's hash, grouped whole-array;
inside a bucket only files whose key range may hold one of the keys are read — tested key by
key for up to :data:`_EXACT_PRUNING` keys a bucket, beyond whole-array by the first key field
(per-key Python would cost more than it prunes). Each file is read by
:mod:`lakeops.read.lookup_files`: its key columns first, of the row groups whose statistics
admit a key, then the other columns only of the row groups holding a match, with a
process-wide cache of decoded columns (``lookup.cache-max-memory-size``) — or, where local
lookup files are kept (:mod:`lakeops.read.lookup_local`), from the file's local lookup file,
built on local disk by the first lookup of the file in any process; the candidate files
of all buckets are read at once, on the cores available. A file with a deletion vector
(``deletion-vectors.enabled``) loses its deleted rows by position before the merge, as a batch
read of the table drops them (:mod:`lakeops.read.merge_read`). The found records are merged
with the table's engine exactly as a read merges them. Tables that need lookup
(``changelog-producer=lookup``, first-row, deletion vectors, ``force-lookup``) are looked up in
levels ≥ 1 only, as Paimon's lookups are: level-0 data becomes visible to them when an L0 flush
lifts it. Postponed rows of a postpone table are looked up only where its reads merge them
(``postpone.merge-on-read``, :mod:`lakeops.read.postpone`). A lookup reads the latest snapshot;
where expiry removed it while the lookup read (another job compacted its files meanwhile), it
looks up again at the then latest snapshot (:func:`lakeops.read.guard.at_latest`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import DataValidationError
from lakeops.format import binary_row
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile
from lakeops.format.floats import canonical_table, is_floating, order_value, total_order
from lakeops.format.kv import KIND, key_column
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.kv.reader import KeyValueReader
from lakeops.merge import group_starts, sort_merge
from lakeops.merge.engine import is_retraction
from lakeops.merge.lookup_view import LEVEL, with_level
from lakeops.parallel import run_ordered
from lakeops.read.deletions import DeletionVectorReader
from lakeops.read.guard import at_latest, guard_read, planned_on
from lakeops.read.lookup_files import UNIT_CACHE, FirstKeys, matching_records
from lakeops.read.lookup_local import local_settings
from lakeops.read.postpone import merges_on_read, routed, sequenced_after
from lakeops.read.scan import table_deletion_files
from lakeops.store.context import TableContext

__all__ = ["lookup"]

#: keys sought in one bucket, and in all, up to which files and units are pruned key by key
#: (Python, about 2 µs a key); beyond, files by their first key field (whole-array), units by
#: its least and greatest sought value
_EXACT_PRUNING = 4096
_EXACT_TOTAL = 65536
#: the transient column of row numbers partitions are grouped by
_ROW = "__lookup_row"


def _key_tuples(table: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


def lookup(
    ctx: TableContext,
    keys: pa.Table,
    columns: Sequence[str],
    levels_from: int,
) -> pa.Table:
    """The current rows of ``keys`` (a table of the primary-key columns)."""
    store, schema = ctx.store, ctx.schema
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
    # at the latest snapshot; again at the then latest where expiry removed it meanwhile
    return at_latest(
        store,
        lambda latest: guard_read(
            store,
            planned_on(latest),
            lambda: _lookup_at(ctx, keys, columns, levels_from, latest),
        ),
    )


def _lookup_at(
    ctx: TableContext,
    keys: pa.Table,
    columns: Sequence[str],
    levels_from: int,
    latest: Snapshot | None,
) -> pa.Table:
    """:func:`lookup` of ``keys`` (checked, canonical) at snapshot ``latest``."""
    store, schema, options, engine = ctx.store, ctx.schema, ctx.options, ctx.engine
    reader = KeyValueReader(store.file_io, schema, store.schema, store.root)
    UNIT_CACHE.resize(ctx.changelog.lookup_cache_bytes)
    local = local_settings(schema.options)
    trimmed = schema.trimmed_primary_keys
    vectors = table_deletion_files(ctx, latest)
    dvs = DeletionVectorReader(store.file_io)
    entries = list(store.live_entries(latest))
    live = [e for e in entries if e.bucket != POSTPONE_BUCKET]
    fixed = options.bucket > 0
    # a partition's files hold the bucket count they were written with (a rollback to before
    # a rescale brings the old count back): its keys are routed by that count, as the scan
    # prunes buckets by each file's count
    totals = {e.partition: e.total_buckets for e in live if e.total_buckets > 0}
    hashed: dict[int, np.ndarray] = {}

    def buckets_of(total: int) -> np.ndarray:
        if total not in hashed:
            hashed[total] = assign_buckets(
                [keys.column(k) for k in schema.bucket_keys],
                schema.types_of(schema.bucket_keys),
                total,
            )
        return hashed[total]

    buckets = (
        (lambda partition: buckets_of(totals.get(partition, options.bucket))) if fixed else None
    )
    # dynamic buckets: a key may be in any bucket of its partition (key ranges prune files)
    partition_buckets: dict[bytes, set[int]] = {}
    if not fixed:
        for e in live:
            partition_buckets.setdefault(e.partition, set()).add(e.bucket)
    by_partition = _by_partition(keys, schema)
    # postponed rows are looked up where reads merge them (postpone.merge-on-read), routed as
    # the read routes them, after the bucket's files; elsewhere they are not read, so not here
    postponed = (
        routed(ctx, entries, {p for p, _ in by_partition}.__contains__)
        if merges_on_read(ctx)
        else {}
    )
    for pbytes, bucket in postponed:
        partition_buckets.setdefault(pbytes, set()).add(bucket)
    wanted = _by_bucket(by_partition, buckets, partition_buckets)
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
    sought_in: list[_Bucket] = []
    for (pbytes, bucket), rows in wanted.items():
        subset = keys.take(pa.array(rows))
        exact = subset.num_rows <= _EXACT_PRUNING and keys.num_rows <= _EXACT_TOTAL
        firsts, candidates = _candidates(reader, files.get((pbytes, bucket), []), subset, exact)
        extra = postponed.get((pbytes, bucket))
        if not candidates and extra is None:
            continue
        # (semi-joins: a key asked twice needs no deduplication)
        probe = pa.table({key_column(k): subset.column(k) for k in trimmed})
        directory = locations.bucket_path(pbytes, bucket)
        sought_in.append(_Bucket(pbytes, bucket, directory, probe, firsts, candidates, extra))

    view = ctx.lookup_view

    def read(task: tuple[_Bucket, DataFileMeta]) -> pa.Table:
        b, f = task
        vector = _deleted(dvs, vectors.get((b.partition, b.bucket, f.file_name)), f)
        found = matching_records(
            reader, b.directory, f, value_cols, b.probe, b.firsts, vector, local=local
        )
        return with_level(found, f.level) if view else found

    # the candidate files of every bucket read at once (pyarrow decodes without the GIL)
    found = iter(run_ordered(read, [(b, f) for b in sought_in for f in b.candidates], None))
    target = pa.schema([schema.arrow_schema().field(c) for c in columns])
    parts = []
    for b in sought_in:
        records = [next(found) for _ in b.candidates]
        if b.extra is not None:
            bucket_files = files.get((b.partition, b.bucket), [])
            after = max((f.max_sequence_number for f in bucket_files), default=-1)
            numbered = sequenced_after(b.extra, after).select(
                reader.record_schema(value_cols).names
            )
            extra = _semi_join(numbered, b.probe)
            records.append(with_level(extra, 0) if view else extra)
        one_file = len(records) == 1  # one data file, no postponed rows
        parts.append(_current(ctx, reader, pa.concat_tables(records), target, one_file))
    return pa.concat_tables(parts) if parts else target.empty_table()


@dataclass(frozen=True)
class _Bucket:
    """What one lookup seeks in one (partition, bucket)."""

    partition: bytes
    bucket: int
    directory: str
    #: the sought keys (merge-key columns; a key may come twice)
    probe: pa.Table
    #: the sought values of the first key field (for the units' statistics)
    firsts: FirstKeys
    #: the files whose key range holds a sought key
    candidates: list[DataFileMeta]
    #: the bucket's postponed rows, where reads merge them
    extra: pa.Table | None


def _current(
    ctx: TableContext,
    reader: KeyValueReader,
    records: pa.Table,
    target: pa.Schema,
    one_file: bool = False,
) -> pa.Table:
    """The current rows (``target``'s columns) that ``records`` of one bucket merge into.
    ``one_file``: the records come from one data file, in its order — with unique keys they
    are already merged, as a batch read takes a one-file section (:mod:`lakeops.read.merge_read`).
    """
    options, engine = ctx.options, ctx.engine
    levels = None
    if LEVEL in records.column_names:  # a key's stale records below its lowest level go
        levels = records.column(LEVEL).to_numpy()
        records = records.drop_columns([LEVEL])
    if one_file and len(group_starts(records, reader.merge_keys)) == records.num_rows:
        merged = records
    else:
        merged = sort_merge(
            records,
            reader.merge_keys,
            engine,
            options.sequence_fields,
            options.sequence_descending,
            levels,
        )
    live = merged.filter(pc.invert(is_retraction(merged.column(KIND))))
    for k in ctx.schema.trimmed_primary_keys:
        if k not in live.column_names:
            live = live.append_column(k, live.column(key_column(k)))
    return live.select(target.names).cast(target)


def _by_partition(keys: pa.Table, schema: TableSchema) -> list[tuple[bytes, np.ndarray]]:
    """The rows of ``keys`` per partition (its BinaryRow bytes), grouped whole-array, in the
    order the partitions first occur."""
    names = list(schema.partition_keys)
    rows = np.arange(keys.num_rows, dtype=np.int64)
    if not keys.num_rows:
        return []
    if not names:
        return [(binary_row.serialize([], []), rows)]
    grouped = (
        keys.select(names)
        .append_column(_ROW, pa.array(rows))
        .group_by(names, use_threads=False)
        .aggregate([(_ROW, "list")])
    )
    types = schema.types_of(names)
    lists = grouped.column(f"{_ROW}_list").combine_chunks()
    out = [
        (
            binary_row.serialize([values[n] for n in names], types),
            lists[i].values.to_numpy(),
        )
        for i, values in enumerate(grouped.select(names).to_pylist())  # once a partition
    ]
    return out


def _by_bucket(
    by_partition: list[tuple[bytes, np.ndarray]],
    buckets: Callable[[bytes], np.ndarray] | None,
    partition_buckets: dict[bytes, set[int]],
) -> dict[tuple[bytes, int], np.ndarray]:
    """The rows sought in each (partition, bucket): those of its fixed bucket (``buckets``:
    of a partition, every row's bucket by that partition's bucket count), else every row of
    the partition, in each of its buckets; the (partition, bucket) pairs in the order their
    first rows come."""
    wanted: list[tuple[tuple[bytes, int], np.ndarray]] = []
    for pbytes, rows in by_partition:
        if buckets is None:
            wanted += [((pbytes, b), rows) for b in partition_buckets.get(pbytes, ())]
            continue
        of_rows = buckets(pbytes)[rows]
        # (a stable sort of 16-bit values is a radix sort: a third of the time of int32's)
        narrow = of_rows.astype(np.int16) if int(of_rows.max()) < 2**15 else of_rows
        order = np.argsort(narrow, kind="stable")
        found, starts = np.unique(of_rows[order], return_index=True)
        parts = np.split(rows[order], starts[1:])
        wanted += [((pbytes, b), part) for b, part in zip(found.tolist(), parts, strict=True)]
    return dict(sorted(wanted, key=lambda item: int(item[1].min())))


def _candidates(
    reader: KeyValueReader, files: list[DataFileMeta], subset: pa.Table, exact: bool
) -> tuple[FirstKeys, list[DataFileMeta]]:
    """What is known of the first key of ``subset`` (keys sought in one bucket), and the
    ``files`` whose key range may hold one of its keys: with ``exact``, tested key by key
    (Python, for a few keys), else whole-array by the first key field."""
    trimmed = reader.key_names
    if not exact:
        first = subset.column(trimmed[0])
        # file key ranges order floats as Java does (lakeops.format.floats)
        ordered = total_order(first) if is_floating(first.type) else first
        holding = [f for f in files if _first_key_within(ordered, reader.key_range(f))]
        return FirstKeys(bounds=_bounds(first)), holding
    # key tuples in Java's total order for floats, as reader.key_range gives the bounds
    sought = sorted({tuple(map(order_value, t)) for t in _key_tuples(subset, trimmed)})
    found = []
    for f in files:
        lo, hi = reader.key_range(f)
        at = bisect.bisect_left(sought, lo)
        if at < len(sought) and sought[at] <= hi:
            found.append(f)
    # statistics prune units by the first key (floats have none: lookup_files)
    return FirstKeys(values=[t[0] for t in sought]), found


def _first_key_within(
    first: pa.ChunkedArray, key_range: tuple[tuple[Any, ...], tuple[Any, ...]]
) -> bool:
    """Whether a value of ``first`` lies in the first field's span of a file's ``key_range``
    (True where Arrow cannot compare them)."""
    lo, hi = key_range[0][0], key_range[1][0]
    try:
        inside = pc.and_(
            pc.greater_equal(first, pa.scalar(lo, first.type)),
            pc.less_equal(first, pa.scalar(hi, first.type)),
        )
        return bool(pc.any(inside).as_py())
    except (pa.ArrowException, TypeError, ValueError):
        return True


def _bounds(column: pa.ChunkedArray) -> tuple[Any, Any] | None:
    """(least, greatest) of a key column as Python values; None for a FLOAT/DOUBLE key (Java
    orders NaN above every value, statistics leave it out) or where Arrow or Python cannot
    say them (the files are then not pruned)."""
    if is_floating(column.type):
        return None
    try:
        low, high = pc.min_max(column).values()
        return low.as_py(), high.as_py()
    except (pa.ArrowException, ValueError, TypeError):
        return None


def _deleted(
    dvs: DeletionVectorReader, vector: DeletionFile | None, f: DataFileMeta
) -> np.ndarray | None:
    """The positions of ``f`` its deletion ``vector`` deletes (None: no vector)."""
    return dvs.deleted(vector, f) if vector is not None else None


def _semi_join(records: pa.Table, probe: pa.Table) -> pa.Table:
    """The records whose key is in ``probe``, sorted by key, with the records' own schema (a
    join loses NOT NULL flags, which the other files' records keep)."""
    keys = probe.column_names
    found = records.join(probe, keys=keys, join_type="left semi")
    return found.sort_by([(k, "ascending") for k in keys]).cast(records.schema)
