"""LSM compaction: levels, strategies (pure objects), unit execution, per-bucket compactors."""

from lakeops.compact.strategy import (
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    LevelSortedRun,
    OffPeakHours,
    UniversalCompaction,
    pick_full_compaction,
)

__all__ = [
    "CompactUnit",
    "EarlyFullCompaction",
    "ForceUpLevel0Compaction",
    "LevelSortedRun",
    "OffPeakHours",
    "UniversalCompaction",
    "pick_full_compaction",
]
