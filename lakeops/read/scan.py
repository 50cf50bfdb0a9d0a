"""Scan planning: the live files of a snapshot, grouped into splits per (partition, bucket),
with partition and key-range pruning from the filter."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakeops.context import TableContext
from lakeops.errors import UnsupportedFeatureError
from lakeops.kv.evolution import SchemaEvolution
from lakeops.options import TableOptions
from lakeops.read.predicate import Condition, may_match
from lakeops.spec import binary_row
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.partition_spec import spec_predicate
from lakeops.spec.schema import TableSchema
from lakeops.spec.snapshot import Snapshot
from lakeops.store import TableStore

__all__ = ["PartitionSpec", "Split", "partition_matches", "plan_splits"]

#: one partition as users write it: ``{"dt": "2024-01-01"}``
PartitionSpec = Mapping[str, Any]


@dataclass(frozen=True)
class Split:
    """The files of one (partition, bucket) that a read must merge."""

    partition: tuple[Any, ...]
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]


DELETION_VECTORS_INDEX = "DELETION_VECTORS"


def require_no_deletion_vectors(
    store: TableStore, options: TableOptions, snapshot: Snapshot | None
) -> None:
    """Refuse to read a snapshot that holds deletion vectors: lakeops does not apply them, and
    merging the files without them can resurrect deleted rows or aggregate a row twice."""
    if not options.deletion_vectors or snapshot is None:
        return
    if any(e.file.index_type == DELETION_VECTORS_INDEX for e in store.index_entries(snapshot)):
        raise UnsupportedFeatureError(
            f"snapshot {snapshot.id} of {store.root} holds deletion vectors (option "
            "'deletion-vectors.enabled' = 'true'), which lakeops does not apply; read this "
            "table with Paimon"
        )


def plan_splits(
    ctx: TableContext,
    snapshot: Snapshot | None,
    dnf: list[list[Condition]] | None = None,
) -> list[Split]:
    """Splits of ``snapshot`` that may hold rows matching ``dnf``.

    Level-0 files are left out for tables whose batch reads skip them (first-row,
    deletion vectors), as Paimon's readers do.
    """
    store, schema, options = ctx.store, ctx.schema, ctx.options
    require_no_deletion_vectors(store, options, snapshot)
    part_types = schema.types_of(schema.partition_keys)
    evolution = SchemaEvolution(schema, store.schema)
    partitions: dict[bytes, tuple[Any, ...] | None] = {}
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for entry in store.live_entries(snapshot):
        if entry.file.level == 0 and options.skips_level0_in_batch_reads:
            continue
        if entry.partition not in partitions:
            values = binary_row.deserialize(entry.partition, part_types)
            ranges = {k: (v, v) for k, v in zip(schema.partition_keys, values, strict=True)}
            partitions[entry.partition] = values if may_match(dnf, ranges) else None
        if partitions[entry.partition] is None:
            continue
        if dnf is not None and not may_match(dnf, evolution.key_stats_range(entry.file)):
            continue
        groups.setdefault((entry.partition, entry.bucket), []).append(entry.file)
    splits = []
    for (pbytes, bucket), files in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        part = partitions[pbytes]
        assert part is not None
        splits.append(Split(part, pbytes, bucket, tuple(files)))
    return splits


def partition_matches(
    schema: TableSchema,
    specs: Sequence[PartitionSpec] | None,
    options: TableOptions | None = None,
) -> Callable[[bytes], bool]:
    """A test of serialized partitions: does one of ``specs`` match it (None matches every
    partition)? Values are written as users write them (``{"pd": "2024-01-01"}``), see
    :mod:`lakeops.spec.partition_spec`; invalid values raise ConfigurationError here."""
    opts = options if options is not None else TableOptions.from_schema(schema)
    return spec_predicate(
        schema.partition_keys,
        schema.types_of(schema.partition_keys),
        specs,
        opts.partition_default_name,
    )
