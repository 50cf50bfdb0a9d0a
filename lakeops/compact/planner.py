"""Table-wide compaction jobs: per-bucket compaction of a snapshot, committed as one COMPACT
snapshot (``Table.compact`` and ``Table.flush_level0``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeops.changelog.lookup_cache import RowGroupCache
from lakeops.changelog.options import ChangelogOptions
from lakeops.compact.expire import RecordExpiry
from lakeops.compact.manager import BucketCompactor
from lakeops.compact.options import CompactOptions
from lakeops.compact.task import BucketContext
from lakeops.errors import ConfigurationError
from lakeops.io.file_io import join
from lakeops.merge import MergeEngine
from lakeops.options import TableOptions
from lakeops.spec import binary_row, paths
from lakeops.spec.data_file import DataFileMeta
from lakeops.spec.schema import TableSchema
from lakeops.store import TableStore
from lakeops.write.commit_message import CommitMessage

__all__ = ["CompactionPlan", "PartitionSpec", "plan_compaction"]

PartitionSpec = Mapping[str, Any]


@dataclass
class CompactionPlan:
    """The compaction results of every bucket, ready to commit."""

    messages: list[CommitMessage] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    @property
    def files_rewritten(self) -> int:
        return sum(len(m.compact_before) for m in self.messages)

    @property
    def bytes_written(self) -> int:
        return sum(
            f.file_size
            for m in self.messages
            for f in m.compact_after
            if f.file_name not in {b.file_name for b in m.compact_before}
        )


def _matches(
    names: Sequence[str], values: tuple[Any, ...], specs: Sequence[PartitionSpec] | None
) -> bool:
    if specs is None:
        return True
    rendered = {n: paths.partition_value_string(v) for n, v in zip(names, values, strict=True)}
    return any(
        all(rendered.get(k) == paths.partition_value_string(v) for k, v in spec.items())
        for spec in specs
    )


def plan_compaction(
    store: TableStore,
    schema: TableSchema,
    options: TableOptions,
    engine: MergeEngine,
    *,
    full: bool = False,
    force_level0: bool = False,
    partitions: Sequence[PartitionSpec] | None = None,
) -> CompactionPlan:
    """Compact every bucket of the latest snapshot (or only the given partitions)."""
    if partitions is not None:
        unknown = {k for spec in partitions for k in spec} - set(schema.partition_keys)
        if unknown:
            raise ConfigurationError(
                f"partition spec names {sorted(unknown)}, which are not "
                f"partition columns ({list(schema.partition_keys)})"
            )
    copts = CompactOptions.from_schema(schema, options)
    changelog = ChangelogOptions.from_schema(schema, options)
    cache = RowGroupCache(changelog.lookup_cache_bytes)
    expiry = RecordExpiry(copts) if copts.expire_ms is not None else None
    part_types = schema.types_of(schema.partition_keys)
    buckets: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    totals: dict[tuple[bytes, int], int] = {}
    for e in store.live_entries(store.latest_snapshot()):
        buckets.setdefault((e.partition, e.bucket), []).append(e.file)
        totals[(e.partition, e.bucket)] = e.total_buckets
    plan = CompactionPlan()
    try:
        for (pbytes, bucket), files in sorted(buckets.items()):
            values = binary_row.deserialize(pbytes, part_types)
            if not _matches(schema.partition_keys, values, partitions):
                continue
            pdir = paths.partition_dir(
                schema.partition_keys, values, options.partition_default_name
            )
            ctx = BucketContext(
                store.file_io,
                join(store.root, paths.bucket_dir(pdir, bucket)),
                schema,
                options,
                copts,
                engine,
                expiry,
                changelog,
                cache,
            )
            result = BucketCompactor(ctx, files).compact(
                files, full=full, force_level0=force_level0
            )
            if result is None:
                continue
            plan.written.extend(result.written)
            plan.messages.append(
                CommitMessage(
                    pbytes,
                    bucket,
                    totals[(pbytes, bucket)],
                    (),
                    tuple(result.before),
                    tuple(result.after),
                    compact_changelog_files=tuple(result.changelog),
                )
            )
    except BaseException:
        for path in plan.written:
            store.file_io.delete(path)
        raise
    return plan
