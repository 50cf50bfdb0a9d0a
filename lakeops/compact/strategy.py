"""Compaction strategies: pure functions of a bucket's sorted runs (plus small state).

A bucket's LSM tree is seen as a list of :class:`LevelSortedRun` — level-0 runs (one per file,
newest first), then one run per non-empty level 1, 2, … A strategy's ``pick(num_levels, runs)``
returns a :class:`CompactUnit` (the picked leading runs and the level they are written to) or
``None``. Each rule is Paimon's (``UniversalCompaction``, ``EarlyFullCompaction``,
``ForceUpLevel0Compaction``, ``CompactStrategy.pickFullCompaction``), so the objects can be
tested with plain lists::

    runs = [LevelSortedRun(0, 1), LevelSortedRun(0, 1), LevelSortedRun(3, 5)]
    unit = UniversalCompaction(200, 1, 5).pick(num_levels=6, runs=runs)
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CompactUnit",
    "EarlyFullCompaction",
    "ForceUpLevel0Compaction",
    "LevelSortedRun",
    "OffPeakHours",
    "UniversalCompaction",
    "pick_full_compaction",
]


@dataclass(frozen=True)
class LevelSortedRun:
    """A sorted run at a level: its total size and, when known, its files."""

    level: int
    size: int
    files: tuple[Any, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class CompactUnit:
    """What to compact: the picked runs (or files) and the output level."""

    output_level: int
    runs: tuple[LevelSortedRun, ...]
    #: a subset of files when only some files of the runs must be rewritten (full compaction of a
    #: single max-level run with expired records); None means every file of ``runs``
    only_files: tuple[Any, ...] | None = None

    @property
    def files(self) -> list[Any]:
        """Every input file."""
        if self.only_files is not None:
            return list(self.only_files)
        return [f for r in self.runs for f in r.files]


class OffPeakHours:
    """``compaction.offpeak.start.hour`` / ``end.hour``: extra size ratio inside the window.

    The start hour is inclusive, the end exclusive; the window may wrap past midnight. -1 for
    either hour, or start == end, disables it.
    """

    def __init__(
        self, start: int, end: int, ratio: int, clock: Callable[[], int] | None = None
    ) -> None:
        self.start, self.end, self.ratio = start, end, ratio
        self.clock = clock or (lambda: dt.datetime.now().hour)

    @property
    def enabled(self) -> bool:
        return self.start != -1 and self.end != -1 and self.start != self.end

    def current_ratio(self) -> int:
        if not self.enabled:
            return 0
        hour = self.clock()
        inside = (
            (self.start <= hour < self.end)
            if self.start < self.end
            else (hour >= self.start or hour < self.end)
        )
        return self.ratio if inside else 0


class EarlyFullCompaction:
    """Full compaction before Universal's rules: by interval, total size or incremental size.

    All comparisons are strict. With an interval, the first call is due unless a last full
    compaction time was given (``last_full_compaction``, epoch millis).
    """

    def __init__(
        self,
        interval_ms: int | None = None,
        total_size_threshold: int | None = None,
        incremental_size_threshold: int | None = None,
        last_full_compaction: int | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.interval_ms = interval_ms
        self.total_size_threshold = total_size_threshold
        self.incremental_size_threshold = incremental_size_threshold
        self.last_full_compaction = last_full_compaction
        self.clock = clock or (lambda: int(time.time() * 1000))

    def try_full_compact(
        self,
        num_levels: int,
        runs: Sequence[LevelSortedRun],
    ) -> CompactUnit | None:
        if len(runs) == 1:
            return None
        max_level = num_levels - 1
        if self.interval_ms is not None and (
            self.last_full_compaction is None
            or self.clock() - self.last_full_compaction > self.interval_ms
        ):
            return self._full(max_level, runs)
        if (
            self.total_size_threshold is not None
            and sum(r.size for r in runs) < self.total_size_threshold
        ):
            return self._full(max_level, runs)
        if (
            self.incremental_size_threshold is not None
            and sum(r.size for r in runs if r.level != max_level) > self.incremental_size_threshold
        ):
            return self._full(max_level, runs)
        return None

    def _full(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        self.update_last_full_compaction()
        return CompactUnit(max_level, tuple(runs))

    def update_last_full_compaction(self) -> None:
        self.last_full_compaction = self.clock()


class UniversalCompaction:
    """Paimon's universal compaction (RocksDB-style): early full, size amplification, size ratio,
    run count — the first rule that fires wins."""

    def __init__(
        self,
        max_size_amp: int = 200,
        size_ratio: int = 1,
        num_run_compaction_trigger: int = 5,
        *,
        optimization_interval: int | None = None,
        total_size_threshold: int | None = None,
        incremental_size_threshold: int | None = None,
        off_peak: OffPeakHours | None = None,
        early_full: EarlyFullCompaction | None = None,
    ) -> None:
        self.max_size_amp = max_size_amp
        self.size_ratio = size_ratio
        self.trigger = num_run_compaction_trigger
        if early_full is None and (
            optimization_interval is not None
            or total_size_threshold is not None
            or incremental_size_threshold is not None
        ):
            early_full = EarlyFullCompaction(
                optimization_interval, total_size_threshold, incremental_size_threshold
            )
        self.early_full = early_full
        self.off_peak = off_peak

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """The unit to compact, or None."""
        runs = list(runs)
        max_level = num_levels - 1
        if self.early_full is not None:
            unit = self.early_full.try_full_compact(num_levels, runs)
            if unit is not None:
                return unit
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) >= self.trigger:
            unit = self.pick_for_size_ratio(max_level, runs, 1)
            if unit is not None:
                return unit
        if len(runs) > self.trigger:
            return self.pick_for_size_ratio(max_level, runs, len(runs) - self.trigger + 1)
        return None

    def pick_for_size_amp(
        self,
        max_level: int,
        runs: list[LevelSortedRun],
    ) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        candidate = sum(r.size for r in runs[:-1])
        if candidate * 100 > self.max_size_amp * runs[-1].size:
            if self.early_full is not None:
                self.early_full.update_last_full_compaction()
            return CompactUnit(max_level, tuple(runs))
        return None

    def pick_for_size_ratio(
        self,
        max_level: int,
        runs: list[LevelSortedRun],
        candidate_count: int,
        force_pick: bool = False,
    ) -> CompactUnit | None:
        """Absorb following runs while ``size * (100 + ratio) / 100 >= next``; once triggered,
        a following run at level 0 or 1 is absorbed regardless of size."""
        candidate = sum(r.size for r in runs[:candidate_count])
        triggered = force_pick or candidate_count > 1
        ratio = self.size_ratio + (self.off_peak.current_ratio() if self.off_peak else 0)
        for nxt in runs[candidate_count:]:
            if candidate * (100.0 + ratio) / 100.0 < nxt.size and (not triggered or nxt.level > 1):
                break
            candidate += nxt.size
            candidate_count += 1
            triggered = True
        return self.create_unit(runs, max_level, candidate_count) if triggered else None

    def create_unit(
        self,
        runs: list[LevelSortedRun],
        max_level: int,
        run_count: int,
    ) -> CompactUnit:
        """Output level: the max level for everything; else the next run's level - 1, never
        level 0 (keep absorbing level-0 runs until a leveled run is absorbed)."""
        output = max_level if run_count == len(runs) else max(0, runs[run_count].level - 1)
        if output == 0:
            for nxt in runs[run_count:]:
                run_count += 1
                if nxt.level != 0:
                    output = nxt.level
                    break
        if run_count == len(runs):
            if self.early_full is not None:
                self.early_full.update_last_full_compaction()
            output = max_level
        return CompactUnit(output, tuple(runs[:run_count]))

    def force_pick_level0(
        self,
        num_levels: int,
        runs: Sequence[LevelSortedRun],
    ) -> CompactUnit | None:
        """All leading level-0 runs (even one), extended by size ratio."""
        runs = list(runs)
        count = 0
        for r in runs:
            if r.level > 0:
                break
            count += 1
        if count == 0:
            return None
        return self.pick_for_size_ratio(num_levels - 1, runs, count, force_pick=True)


class ForceUpLevel0Compaction:
    """Universal first; if it picks nothing, push every level-0 run up.

    ``max_compact_interval=None`` is ``lookup-compact=radical`` (force on every call);
    an interval N is ``gentle``: force only on every N-th call in which Universal picked nothing.
    """

    def __init__(
        self, universal: UniversalCompaction, max_compact_interval: int | None = None
    ) -> None:
        self.universal = universal
        self.max_compact_interval = max_compact_interval
        self._count = 0

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        if self.max_compact_interval is not None:
            self._count += 1
            if self._count < self.max_compact_interval:
                return None
            self._count = 0
        return self.universal.force_pick_level0(num_levels, runs)


def pick_full_compaction(
    num_levels: int,
    runs: Sequence[LevelSortedRun],
    needs_rewrite: Callable[[Any], bool] | None = None,
    force_rewrite_all: bool = False,
) -> CompactUnit | None:
    """Everything to the max level; nothing for no runs or one run already at the max level —
    unless some of its files must be rewritten (``needs_rewrite``: e.g. expired records)."""
    max_level = num_levels - 1
    runs = list(runs)
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        files = [
            f
            for f in runs[0].files
            if force_rewrite_all or (needs_rewrite is not None and needs_rewrite(f))
        ]
        return CompactUnit(max_level, tuple(runs), tuple(files)) if files else None
    return CompactUnit(max_level, tuple(runs))
