"""One table at one schema, with everything derived from it parsed once.

A :class:`TableContext` is what reading, writing, compaction and the changelog need of a table:
its metadata store, its schema, every option family, the merge engine and where its files live.
It replaces loose ``(store, schema, options, engine)`` parameters. Each derived value is parsed
on first use and then kept, so a table whose options lakeops cannot honour still opens (to list,
describe or refuse clearly) and fails only where the option matters, as Paimon does.

A context is immutable: after a schema change, build a new one with :meth:`with_schema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from lakeops.format.schema import TableSchema
from lakeops.io.file_io import FileIO
from lakeops.merge import MergeEngine, create_merge_engine
from lakeops.merge.lookup_view import needs_lookup_view
from lakeops.options import TableOptions
from lakeops.options.append import AppendOptions
from lakeops.options.buckets import DynamicBucketOptions
from lakeops.options.changelog import ChangelogOptions
from lakeops.options.commit import CommitRetryOptions
from lakeops.options.compaction import CompactOptions
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations

__all__ = ["TableContext"]


@dataclass(frozen=True, eq=False)
class TableContext:
    """A table's store and schema, and what is parsed from them (each once, when first used)."""

    store: TableStore
    schema: TableSchema

    @classmethod
    def latest(cls, store: TableStore) -> TableContext:
        """The context of the table's latest schema."""
        return cls(store, store.latest_schema())

    def with_schema(self, schema: TableSchema) -> TableContext:
        """The same table at another schema (options and engine parsed afresh)."""
        return TableContext(self.store, schema)

    @property
    def file_io(self) -> FileIO:
        return self.store.file_io

    @property
    def root(self) -> str:
        """The table's directory."""
        return self.store.root

    @cached_property
    def options(self) -> TableOptions:
        """The table-wide options (merge engine, buckets, sequence fields, sizes)."""
        return TableOptions.from_schema(self.schema)

    @cached_property
    def append(self) -> AppendOptions:
        """An append table's file size and small-file compaction options."""
        return AppendOptions.from_options(self.schema.options)

    @cached_property
    def compaction(self) -> CompactOptions:
        """``num-sorted-run.*``, ``compaction.*``, levels and record-level expiry."""
        return CompactOptions.from_schema(self.schema, self.options)

    @cached_property
    def lookup_view(self) -> bool:
        """Whether merges of this table leave out, of each key, its records deeper than its
        lowest-numbered level above 0, as Paimon's ``LookupMergeFunction`` does
        (:mod:`lakeops.merge.lookup_view`); compactions then also merge the record a lookup
        finds below their output level into what they write."""
        return needs_lookup_view(
            self.compaction.needs_lookup,
            self.options.merge_engine,
            self.options.deletion_vectors,
            bool(self.options.sequence_fields),
        )

    @cached_property
    def changelog(self) -> ChangelogOptions:
        """``changelog-producer`` and the options that shape it."""
        return ChangelogOptions.from_schema(self.schema)

    @cached_property
    def buckets(self) -> DynamicBucketOptions:
        """``dynamic-bucket.*`` and ``cross-partition-upsert.*``."""
        return DynamicBucketOptions.from_schema(self.schema)

    @cached_property
    def commit_retry(self) -> CommitRetryOptions:
        """``commit.timeout``, ``commit.max-retries`` and the pauses between commit attempts."""
        return CommitRetryOptions.from_options(self.schema.options)

    @cached_property
    def engine(self) -> MergeEngine:
        """The merge engine ``merge-engine`` names, its options validated."""
        engine = create_merge_engine(self.options, self.schema)
        engine.table = self.root
        return engine

    @cached_property
    def locations(self) -> FileLocations:
        """The one resolver of the table's bucket directories and file locations."""
        return FileLocations.of(self.file_io, self.root, self.schema, self.options)

    def bucket_path(self, partition: bytes, bucket: int) -> str:
        """The storage directory of bucket ``bucket`` of a serialized partition."""
        return self.locations.bucket_path(partition, bucket)
