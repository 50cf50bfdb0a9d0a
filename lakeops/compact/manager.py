"""Compaction of one (partition, bucket): choosing the strategy from the options, picking a
unit from the bucket's live files, and running it."""

from __future__ import annotations

from collections.abc import Sequence

from lakeops.compact.levels import level_runs, non_empty_highest_level
from lakeops.compact.strategy import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    OffPeakHours,
    UniversalCompaction,
    pick_full_compaction,
)
from lakeops.compact.task import BucketContext, CompactResult, CompactTask
from lakeops.format.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from lakeops.options.compaction import CompactOptions

__all__ = ["BucketCompactor", "make_universal"]


def make_universal(
    copts: CompactOptions, files: Sequence[DataFileMeta] = ()
) -> UniversalCompaction:
    """Universal compaction configured from the table's options.

    With ``compaction.optimization-interval``, the last full compaction is estimated from the
    newest compaction output at the max level, so a restarted writer does not full-compact at
    once if one happened recently.
    """
    early = None
    if (
        copts.optimization_interval_ms is not None
        or copts.total_size_threshold is not None
        or copts.incremental_size_threshold is not None
    ):
        max_level = max(copts.num_levels, non_empty_highest_level(files) + 1) - 1
        last = [
            f.creation_time_millis
            for f in files
            if f.level == max_level
            and f.file_source == FILE_SOURCE_COMPACT
            and f.creation_time_millis is not None
        ]
        early = EarlyFullCompaction(
            copts.optimization_interval_ms,
            copts.total_size_threshold,
            copts.incremental_size_threshold,
            last_full_compaction=max(last) if last else None,
        )
    return UniversalCompaction(
        copts.max_size_amp,
        copts.size_ratio,
        copts.trigger,
        early_full=early,
        off_peak=OffPeakHours(copts.offpeak_start, copts.offpeak_end, copts.offpeak_ratio),
    )


class BucketCompactor:
    """Picks and runs compactions of one bucket; keeps strategy state between calls."""

    def __init__(self, ctx: BucketContext, files: Sequence[DataFileMeta] = ()) -> None:
        self.ctx = ctx
        copts = ctx.compact_options
        self.universal = make_universal(copts, files)
        if copts.needs_lookup:
            self.strategy: UniversalCompaction | ForceUpLevel0Compaction = ForceUpLevel0Compaction(
                self.universal, copts.lookup_gentle_interval
            )
        elif copts.force_up_level0:
            self.strategy = ForceUpLevel0Compaction(self.universal)
        else:
            self.strategy = self.universal

    def num_levels(self, files: Sequence[DataFileMeta]) -> int:
        return max(self.ctx.compact_options.num_levels, non_empty_highest_level(files) + 1)

    def pick(
        self, files: Sequence[DataFileMeta], *, full: bool = False, force_level0: bool = False
    ) -> CompactUnit | None:
        """The unit to run now: the strategy's pick, a full compaction, or an L0 flush."""
        runs = level_runs(files)
        num_levels = self.num_levels(files)
        if full:
            copts = self.ctx.compact_options
            return pick_full_compaction(
                num_levels, runs, self.ctx.has_expired, copts.force_rewrite_all
            )
        if force_level0:
            return ForceUpLevel0Compaction(self.universal).pick(num_levels, runs)
        return self.strategy.pick(num_levels, runs)

    def run(self, files: Sequence[DataFileMeta], unit: CompactUnit) -> CompactResult:
        """Execute ``unit`` against the bucket whose live files are ``files``."""
        max_level = self.num_levels(files) - 1
        drop_delete = unit.output_level != 0 and (
            unit.output_level >= non_empty_highest_level(files) or self.ctx.options.deletion_vectors
        )
        return CompactTask(self.ctx, unit, drop_delete, max_level, files).run()

    def compact(
        self, files: Sequence[DataFileMeta], *, full: bool = False, force_level0: bool = False
    ) -> CompactResult | None:
        """Pick and run; None when there is nothing to do."""
        unit = self.pick(files, full=full, force_level0=force_level0)
        if unit is None:
            return None
        result = self.run(files, unit)
        return None if result.is_empty else result
