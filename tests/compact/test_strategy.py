"""Compaction strategies as pure objects, on plain lists of runs."""

from __future__ import annotations

import json

import pytest

from lakeops.compact import (
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    LevelSortedRun,
    OffPeakHours,
    UniversalCompaction,
    pick_full_compaction,
)
from tests.conftest import SHARED

CASES = [
    c for c in json.loads((SHARED / "examples" / "sample-cases.json").read_text()) if "runs" in c
]


def runs_of(pairs: list[tuple[int, int]]) -> list[LevelSortedRun]:
    return [LevelSortedRun(level=lv, size=size) for lv, size in pairs]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_sample_cases(case: dict) -> None:
    p = case["params"]
    strategy = UniversalCompaction(
        max_size_amp=p["max_size_amp"],
        size_ratio=p["size_ratio"],
        num_run_compaction_trigger=p["num_run_compaction_trigger"],
    )
    if case["area"] == "force-up-level0-compaction":
        strategy = ForceUpLevel0Compaction(strategy, max_compact_interval=p["max_compact_interval"])
    unit = strategy.pick(num_levels=p["num_levels"], runs=runs_of(case["runs"]))
    expected = case["expected"]
    if expected is None:
        assert unit is None
        return
    assert unit is not None
    assert unit.output_level == expected["output_level"]
    assert len(unit.runs) == expected["picked_runs"]
    if "picked_sizes" in expected:
        assert [r.size for r in unit.runs] == expected["picked_sizes"]


def test_issue_example() -> None:
    runs = [
        LevelSortedRun(level=0, size=1),
        LevelSortedRun(level=0, size=1),
        LevelSortedRun(level=3, size=5),
    ]
    unit = UniversalCompaction(max_size_amp=200, size_ratio=1, num_run_compaction_trigger=5).pick(
        num_levels=6, runs=runs
    )
    assert unit is None  # 3 runs < trigger 5, nothing fires
    radical = ForceUpLevel0Compaction(UniversalCompaction(200, 1, 5))
    unit = radical.pick(num_levels=6, runs=runs)
    assert unit is not None and unit.output_level == 2 and len(unit.runs) == 2


def test_size_amplification_is_strict() -> None:
    u = UniversalCompaction(max_size_amp=100, size_ratio=0, num_run_compaction_trigger=2)
    # sum of newer runs == 100% of the oldest: not strictly greater, no size-amp pick
    assert u.pick_for_size_amp(5, runs_of([(0, 5), (1, 5)])) is None
    unit = u.pick_for_size_amp(5, runs_of([(0, 6), (1, 5)]))
    assert unit is not None and unit.output_level == 5


def test_run_count_trigger_then_output_level() -> None:
    u = UniversalCompaction(max_size_amp=1000, size_ratio=0, num_run_compaction_trigger=2)
    runs = runs_of([(0, 1), (0, 10), (0, 100), (4, 10_000)])
    unit = u.pick(6, runs)
    # 4 runs > 2: force the first 3, which are all level 0; output level = next level - 1 = 3
    assert unit is not None and len(unit.runs) == 3 and unit.output_level == 3


def test_level0_and_level1_absorbed_once_triggered() -> None:
    u = UniversalCompaction(max_size_amp=1000, size_ratio=0, num_run_compaction_trigger=2)
    unit = u.pick_for_size_ratio(5, runs_of([(0, 1), (0, 1), (1, 500), (3, 10_000)]), 2)
    assert unit is not None and len(unit.runs) == 3  # level-1 run absorbed despite its size


def test_early_full_by_interval_total_and_incremental() -> None:
    clock = [1_000_000]
    early = EarlyFullCompaction(interval_ms=60_000, clock=lambda: clock[0])
    u = UniversalCompaction(200, 1, 5, early_full=early)
    runs = runs_of([(0, 1), (5, 100)])
    assert u.pick(6, runs).output_level == 5  # first pick after start-up is due
    assert u.pick(6, runs) is None
    clock[0] += 60_001
    assert u.pick(6, runs) is not None
    assert EarlyFullCompaction(total_size_threshold=102).try_full_compact(6, runs) is not None
    assert EarlyFullCompaction(total_size_threshold=101).try_full_compact(6, runs) is None
    assert EarlyFullCompaction(incremental_size_threshold=0).try_full_compact(6, runs) is not None
    assert EarlyFullCompaction(incremental_size_threshold=1).try_full_compact(6, runs) is None
    assert (
        EarlyFullCompaction(total_size_threshold=10**9).try_full_compact(6, runs_of([(0, 1)]))
        is None
    )  # never with a single run


def test_gentle_mode_forces_level0_every_nth_empty_pick() -> None:
    gentle = ForceUpLevel0Compaction(UniversalCompaction(200, 1, 5), max_compact_interval=3)
    runs = runs_of([(0, 1), (5, 100)])
    assert [gentle.pick(6, runs) is not None for _ in range(6)] == [
        False,
        False,
        True,
        False,
        False,
        True,
    ]


def test_off_peak_ratio_widens_size_ratio() -> None:
    runs = runs_of([(0, 10), (0, 14), (5, 1000)])
    peak = UniversalCompaction(1000, 1, 3, off_peak=OffPeakHours(1, 5, 50, clock=lambda: 8))
    off = UniversalCompaction(1000, 1, 3, off_peak=OffPeakHours(22, 5, 50, clock=lambda: 23))
    assert peak.pick(6, runs) is None  # 10 * 1.01 < 14
    unit = off.pick(6, runs)  # 10 * 1.51 >= 14 inside the wrapping 22..5 window
    assert unit is not None and len(unit.runs) == 2 and unit.output_level == 4


def test_pick_full_compaction() -> None:
    assert pick_full_compaction(6, []) is None
    single = [LevelSortedRun(5, 10, ("a", "b"))]
    assert pick_full_compaction(6, single) is None
    unit = pick_full_compaction(6, single, needs_rewrite=lambda f: f == "b")
    assert unit is not None and unit.files == ["b"]
    assert pick_full_compaction(6, single, force_rewrite_all=True).files == ["a", "b"]
    unit = pick_full_compaction(6, runs_of([(0, 1), (3, 5)]))
    assert unit is not None and unit.output_level == 5 and len(unit.runs) == 2
