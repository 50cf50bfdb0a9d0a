"""Executing a compaction unit of one bucket (Paimon's MergeTreeCompactTask).

The unit's files are split by IntervalPartition into key-disjoint sections of sorted runs.
Sections with several runs are rewritten: their runs are merged by the streaming k-way merge
with the table's merge engine, and written as new files at the output level, rolling at
``target-file-size``. A section with one run keeps its large files and only *upgrades* them —
their level changes in the manifest, their bytes stay — while files smaller than
``target-file-size * compaction.small-file-ratio`` are rewritten together with their
neighbours. A file with deletes is rewritten rather than upgraded into the max level; so are
files with expired records, and every file when ``compaction.force-rewrite-all-files`` is set.
``-U``/``-D`` results are dropped only when the output level is the highest non-empty level.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.compact.expire import RecordExpiry
from lakeops.compact.interval_partition import partition_runs
from lakeops.compact.merge_stream import merge_runs
from lakeops.compact.options import CompactOptions
from lakeops.compact.strategy import CompactUnit
from lakeops.io.file_io import FileIO
from lakeops.merge import MergeEngine
from lakeops.merge.engine import is_retraction
from lakeops.options import TableOptions
from lakeops.read.kv_reader import KeyValueReader
from lakeops.spec import binary_row
from lakeops.spec.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from lakeops.spec.kv import KIND
from lakeops.spec.schema import TableSchema
from lakeops.write.file_writer import RollingKeyValueWriter

__all__ = ["BucketContext", "CompactResult", "CompactTask"]

#: rows held in memory per merged section, shared by its runs: bounds compaction memory
MERGE_BUDGET_ROWS = 524_288
MIN_BATCH_ROWS = 8_192


@dataclass
class BucketContext:
    """Everything compaction of one (partition, bucket) needs."""

    file_io: FileIO
    directory: str
    schema: TableSchema
    options: TableOptions
    compact_options: CompactOptions
    engine: MergeEngine
    expiry: RecordExpiry | None = None

    def __post_init__(self) -> None:
        self.reader = KeyValueReader(self.file_io, self.schema)
        self.key_types = self.schema.types_of(self.schema.trimmed_primary_keys)

    def key_range(self, f: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        return (
            binary_row.deserialize(f.min_key, self.key_types),
            binary_row.deserialize(f.max_key, self.key_types),
        )

    def has_expired(self, f: DataFileMeta) -> bool:
        return self.expiry is not None and self.expiry.file_has_expired(
            self.file_io, self.reader.path(self.directory, f)
        )


@dataclass
class CompactResult:
    """Files a compaction removed and produced (upgrades appear in both, at two levels)."""

    before: list[DataFileMeta] = field(default_factory=list)
    after: list[DataFileMeta] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.before and not self.after


class CompactTask:
    """Runs one :class:`CompactUnit` (see the module docstring)."""

    def __init__(
        self, ctx: BucketContext, unit: CompactUnit, drop_delete: bool, max_level: int
    ) -> None:
        self.ctx = ctx
        self.unit = unit
        self.output_level = unit.output_level
        self.drop_delete = drop_delete
        self.max_level = max_level
        copts = ctx.compact_options
        self.min_file_size = int(ctx.options.target_file_size * copts.small_file_ratio)
        self.force_all = copts.force_rewrite_all
        self.result = CompactResult()

    def run(self) -> CompactResult:
        candidate: list[list[list[DataFileMeta]]] = []
        for section in partition_runs(self.unit.files, self.ctx.key_range):
            if len(section) > 1:
                candidate.append(section)
                continue
            for f in section[0]:
                if f.file_size < self.min_file_size:
                    candidate.append([[f]])  # small: rewritten along with its neighbours
                else:
                    self._rewrite(candidate)
                    self._upgrade(f)
        self._rewrite(candidate)
        return self.result

    # -------------------------------------------------------------- decisions
    def _upgrade(self, f: DataFileMeta) -> None:
        if f.level == self.output_level:
            if self.force_all or self.ctx.has_expired(f):
                self._rewrite_impl([[[f]]])
            return
        if self.output_level != self.max_level or f.delete_row_count == 0:
            if self.force_all or self.ctx.has_expired(f):
                self._rewrite_impl([[[f]]])
            else:
                self.result.before.append(f)
                self.result.after.append(f.upgrade(self.output_level))
        else:  # deletes must not be upgraded into the max level: rewrite to drop them
            self._rewrite_impl([[[f]]])

    def _rewrite(self, candidate: list[list[list[DataFileMeta]]]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0]:
                self._upgrade(f)
        else:
            self._rewrite_impl(candidate)
        candidate.clear()

    # ---------------------------------------------------------------- rewrite
    def _rewrite_impl(self, sections: list[list[list[DataFileMeta]]]) -> None:
        ctx = self.ctx
        writer = RollingKeyValueWriter(
            ctx.file_io,
            ctx.directory,
            ctx.schema,
            ctx.options.target_file_size,
            self.output_level,
            FILE_SOURCE_COMPACT,
        )
        try:
            for section in sections:
                for chunk in self._merge_section(section):
                    writer.write(chunk)
            after = writer.close()
        except BaseException:
            writer.abort()
            raise
        self.result.written.extend(writer.written)
        self.result.before.extend(f for section in sections for run in section for f in run)
        self.result.after.extend(after)

    def _run_batches(self, files: list[DataFileMeta], batch_rows: int) -> Iterator[pa.Table]:
        fields = self.ctx.schema.field_names
        for batch in self.ctx.reader.iter_batches(self.ctx.directory, files, fields, batch_rows):
            yield self.ctx.expiry.keep(batch) if self.ctx.expiry is not None else batch

    def _merge_section(self, runs: list[list[DataFileMeta]]) -> Iterator[pa.Table]:
        ctx = self.ctx
        batch_rows = max(MIN_BATCH_ROWS, MERGE_BUDGET_ROWS // len(runs))
        merged = merge_runs(
            [self._run_batches(run, batch_rows) for run in runs],
            ctx.reader.merge_keys,
            ctx.engine,
            ctx.options.sequence_fields,
            ctx.options.sequence_descending,
        )
        for chunk in merged:
            if self.drop_delete:
                chunk = chunk.filter(pc.invert(is_retraction(chunk.column(KIND))))
            if chunk.num_rows:
                yield chunk
