"""The LSM levels of one (partition, bucket), restored from its live files."""

from __future__ import annotations

from collections.abc import Sequence

from lakeops.compact.strategy import LevelSortedRun
from lakeops.format.data_file import DataFileMeta

__all__ = ["level_runs", "non_empty_highest_level"]


def level_runs(files: Sequence[DataFileMeta]) -> list[LevelSortedRun]:
    """Level-0 files as one run each, newest (largest sequence numbers) first; then one run per
    non-empty level ≥ 1, its files in key order."""
    level0 = sorted(
        (f for f in files if f.level == 0),
        key=lambda f: (-f.max_sequence_number, -f.min_sequence_number, f.file_name),
    )
    runs = [LevelSortedRun(0, f.file_size, (f,)) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        members = sorted((f for f in files if f.level == level), key=lambda f: f.min_key)
        runs.append(LevelSortedRun(level, sum(f.file_size for f in members), tuple(members)))
    return runs


def non_empty_highest_level(files: Sequence[DataFileMeta]) -> int:
    """The highest level holding a file (-1 for none)."""
    return max((f.level for f in files), default=-1)
