"""The postpone-bucket move: what Paimon's postpone compaction does to a ``bucket = -2`` table.

A postpone table's writers put every row in its partition's ``bucket-postpone`` directory
(bucket -2); batch reads do not see those rows (unless ``postpone.merge-on-read``, below).
Compaction moves them into real buckets, as Paimon's ``PostponeBucketCompactSplitSource`` /
``PostponeBucketCompactOperator`` do:

* **Bucket count of a partition** (``PostponeUtils.loadPostponeBucketNumResolver``): the count
  its real-bucket files already record (their manifest entries' ``total_buckets``; Paimon
  refuses a partition whose files disagree); else ``postpone.default-bucket-num``; else an
  estimate from the partition's postponed files: ``ceil(rows / postpone.target-row-num-per-
  bucket)`` when that is set, otherwise ``ceil(bytes / postpone.target-size-per-bucket)``
  (1 GiB by default), at least 1.
* **Order** (``PostponeBucketCompactSplitSource``: "we must replay the written records in exact
  order"): a partition's postponed files by creation time (equal times keep manifest order),
  each file's records by sequence number — the order their writer received them. Each writer's
  files carry its prefix (the name up to ``-w-``, :func:`writer_prefix`), and a writer's files
  are created in its order, so every writer's records keep their order.
* **Bucket of a row**: Paimon's default bucket function over the bucket key with the
  partition's count (:mod:`lakeops.format.bucket_hash`), as ``PostponeBucketRouter``.

The records, in that order, go to the real buckets' writers (sequence numbers continue from the
bucket's largest), and one ``COMPACT`` commit deletes every postponed file read and adds the new
level-0 files, each entry recording its partition's bucket count, with the changelog those
writers produce (``changelog-producer = input``: the moved records) as the compaction's
changelog (``RemovePostponeBucketFilesOperator`` and ``BucketFiles.makeMessage`` of Paimon).
The table's usual compaction runs afterwards.

This module plans the move and reads the postponed records; the write and the commit are
:meth:`lakeops.table.primary_key.Table.compact`'s (through the one writer and committer).

**Merge-on-read** (``postpone.merge-on-read = true``; Paimon's ``PostponeMergeRead`` and
``MergeFileSplitRead.createPostponeMergeReader``): a batch read routes the postponed records of
each partition it reads to their real bucket and merges them there after the bucket's files
(sequence numbers above every one of its files read; a sequence field still decides first), a
bucket holding only postponed records included. :func:`routed` gives those records with the
move's bucket count, routing and order, so such a read returns what the table reads once its
next compaction has moved them. One difference from Paimon, where it is not defined: records
of the same key from two writers. Paimon's read orders them by each record's position within
its writer (records of different writers at the same position in no set order) while its
compaction replays whole files by creation time; lakeops' read takes the compaction's order,
so a read never disagrees with what compaction will keep.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptMetadataError
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import KIND, SEQ
from lakeops.format.manifest import ManifestEntry
from lakeops.format.paths import POSTPONE_BUCKET
from lakeops.kv.reader import KeyValueReader
from lakeops.options.rows_layout import (
    POSTPONE_DEFAULT_BUCKET_NUM,
    POSTPONE_MERGE_ON_READ,
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET,
    POSTPONE_TARGET_SIZE_PER_BUCKET,
)
from lakeops.store.context import TableContext

__all__ = [
    "MovePlan",
    "PartitionMove",
    "bucket_counts",
    "moved_buckets",
    "merges_on_read",
    "moved_records",
    "plan_move",
    "read_moved",
    "routed",
    "sequenced_after",
    "writer_prefix",
]


def writer_prefix(file_name: str) -> str:
    """The prefix shared by the files of one postpone writer: the name up to and including its
    last ``-w-`` (``PostponeBucketFileStoreWrite.getWriterPrefix``)."""
    at = file_name.rfind("-w-")
    if at < 0:
        raise CorruptMetadataError(
            f"postponed data file {file_name!r} does not carry a postpone writer prefix "
            "('<prefix>-u-<user>-s-<n>-w-…'); Paimon's postpone compaction refuses it too — "
            "it was not written by a postpone writer"
        )
    return file_name[: at + 3]


@dataclass(frozen=True)
class PartitionMove:
    """The postponed files of one partition, in the order their records are moved, and the
    bucket count they are moved into."""

    partition: bytes
    total_buckets: int
    files: tuple[DataFileMeta, ...]


@dataclass(frozen=True)
class MovePlan:
    """Every partition with postponed files (by serialized partition)."""

    partitions: tuple[PartitionMove, ...]

    @property
    def counts(self) -> dict[bytes, int]:
        """The bucket count of each moved partition."""
        return {p.partition: p.total_buckets for p in self.partitions}


def bucket_counts(
    live: Iterable[ManifestEntry], options: Mapping[str, str]
) -> Callable[[bytes, list[DataFileMeta]], int]:
    """The bucket count of a partition and its postponed files (see the module docstring),
    from the ``live`` entries of the snapshot the move plans on and the table's options."""
    known: dict[bytes, int] = {}
    for e in live:
        if e.bucket == POSTPONE_BUCKET or e.total_buckets < 0:
            continue
        seen = known.setdefault(e.partition, e.total_buckets)
        if seen != e.total_buckets:
            raise CorruptMetadataError(
                f"partition {e.partition!r} has files recording {seen} and "
                f"{e.total_buckets} buckets; Paimon refuses to move postponed rows into it "
                "too — rescale the partition (overwrite it) first"
            )
    default = POSTPONE_DEFAULT_BUCKET_NUM.find(options)
    per_rows = POSTPONE_TARGET_ROW_NUM_PER_BUCKET.find(options)
    per_size = POSTPONE_TARGET_SIZE_PER_BUCKET.get(options)

    def count(partition: bytes, files: list[DataFileMeta]) -> int:
        if partition in known:
            return known[partition]
        if default is not None:
            return int(default)
        if per_rows is not None:
            total, target = sum(f.row_count for f in files), int(per_rows)
        else:
            total, target = sum(f.file_size for f in files), int(per_size)
        return max(math.ceil(total / target), 1)

    return count


def plan_move(
    ctx: TableContext,
    live: Iterable[ManifestEntry],
    keep: Callable[[bytes], bool] | None = None,
) -> MovePlan:
    """The move of the postponed files among ``live`` (those of partitions ``keep`` accepts;
    None: all), ordered as the module docstring says."""
    live = list(live)
    count = bucket_counts(live, ctx.schema.options)
    by_partition: dict[bytes, list[DataFileMeta]] = {}
    for e in live:
        if e.bucket == POSTPONE_BUCKET and (keep is None or keep(e.partition)):
            by_partition.setdefault(e.partition, []).append(e.file)
    moves = []
    for partition in sorted(by_partition):
        files = by_partition[partition]
        # stable: files created in the same millisecond keep their manifest order
        ordered = sorted(files, key=lambda f: f.creation_time_millis or 0)
        moves.append(PartitionMove(partition, count(partition, files), tuple(ordered)))
    return MovePlan(tuple(moves))


def moved_records(ctx: TableContext, move: PartitionMove) -> pa.Table:
    """The postponed key-value records of one partition in move order (every field, the key
    columns, ``_SEQUENCE_NUMBER`` as written and ``_VALUE_KIND``:
    :meth:`~lakeops.kv.reader.KeyValueReader.record_schema` of all fields)."""
    schema = ctx.schema
    reader = KeyValueReader(ctx.file_io, schema, ctx.store.schema, ctx.store.root)
    directory = ctx.locations.bucket_path(move.partition, POSTPONE_BUCKET)
    names = list(schema.field_names)
    parts = []
    for f in move.files:
        records = reader.read(directory, f, names)
        order = np.argsort(records.column(SEQ).to_numpy(), kind="stable")
        parts.append(records.take(pa.array(order)))
    return pa.concat_tables(parts) if parts else reader.record_schema(names).empty_table()


def read_moved(ctx: TableContext, move: PartitionMove) -> pa.Table:
    """The postponed records of one partition in move order, as the writer takes them (the
    table's fields and ``_VALUE_KIND``)."""
    schema = ctx.schema
    target = pa.schema(
        [pa.field(fd.name, fd.type.to_arrow(), fd.type.nullable) for fd in schema.fields]
        + [pa.field(KIND, pa.int8(), False)]
    )
    return moved_records(ctx, move).select(target.names).cast(target)


def moved_buckets(ctx: TableContext, records: pa.Table, total_buckets: int) -> np.ndarray:
    """The real bucket of each of a partition's ``records`` among ``total_buckets``."""
    schema = ctx.schema
    buckets = assign_buckets(
        [records.column(k) for k in schema.bucket_keys],
        schema.types_of(schema.bucket_keys),
        total_buckets,
    )
    return np.asarray(buckets, dtype=np.int32)


def merges_on_read(ctx: TableContext) -> bool:
    """Whether the table's batch reads and lookups merge its postponed records (a postpone
    table with ``postpone.merge-on-read``)."""
    return ctx.options.bucket == POSTPONE_BUCKET and bool(
        POSTPONE_MERGE_ON_READ.get(ctx.schema.options)
    )


def routed(
    ctx: TableContext, live: Iterable[ManifestEntry], keep: Callable[[bytes], bool] | None = None
) -> dict[tuple[bytes, int], pa.Table]:
    """The postponed records among ``live`` (of the partitions ``keep`` accepts; None: all)
    routed as the move routes them: per (partition, real bucket), in move order, as
    :func:`moved_records` (sequence numbers as written: see :func:`sequenced_after`)."""
    out: dict[tuple[bytes, int], pa.Table] = {}
    for move in plan_move(ctx, live, keep).partitions:
        records = moved_records(ctx, move)
        buckets = moved_buckets(ctx, records, move.total_buckets)
        order = np.argsort(buckets, kind="stable")  # by bucket, move order within each
        ordered = records.take(pa.array(order))
        found, starts = np.unique(buckets[order], return_index=True)
        ends = [*starts[1:], len(order)]
        for bucket, start, end in zip(found, starts, ends, strict=True):
            out[(move.partition, int(bucket))] = ordered.slice(int(start), int(end - start))
    return out


def sequenced_after(records: pa.Table, sequence: int) -> pa.Table:
    """``records`` numbered ``sequence + 1``, ``sequence + 2``, … in their order, so that they
    merge after every record numbered up to ``sequence`` and in their order among themselves."""
    numbers = pa.array(np.arange(sequence + 1, sequence + 1 + records.num_rows, dtype=np.int64))
    column = records.schema.get_field_index(SEQ)
    return records.set_column(column, pa.field(SEQ, pa.int64(), False), numbers)
