"""The rows of writing, primary-key compaction and changelog production."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeops.options.option import (
    BOOL,
    DURATION,
    FLOAT,
    INT,
    INT_MAX,
    LIST,
    LONG_MAX,
    MEMORY,
    STRING,
    Derived,
    Option,
    PerKind,
    enum,
    honoured,
    rng,
)
from lakeops.options.rules import norm

__all__ = [
    "CHANGELOG_PRODUCER",
    "CHANGELOG_ROW_DEDUPLICATE",
    "CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS",
    "COMMIT_FORCE_COMPACT",
    "COMPACTION_FORCE_REWRITE_ALL_FILES",
    "COMPACTION_FORCE_UP_LEVEL_0",
    "COMPACTION_INCREMENTAL_SIZE_THRESHOLD",
    "COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT",
    "COMPACTION_OFFPEAK_END_HOUR",
    "COMPACTION_OFFPEAK_RATIO",
    "COMPACTION_OFFPEAK_START_HOUR",
    "COMPACTION_OPTIMIZATION_INTERVAL",
    "COMPACTION_SIZE_RATIO",
    "COMPACTION_SMALL_FILE_RATIO",
    "COMPACTION_TOTAL_SIZE_THRESHOLD",
    "FORCE_LOOKUP",
    "FULL_COMPACTION_DELTA_COMMITS",
    "LOOKUP_CACHE_FILE_RETENTION",
    "LOOKUP_CACHE_MAX_DISK_SIZE",
    "LOOKUP_CACHE_MAX_MEMORY_SIZE",
    "LOOKUP_LOCAL_DIR",
    "LOOKUP_COMPACT",
    "LOOKUP_COMPACT_MAX_INTERVAL",
    "MB",
    "NUM_LEVELS",
    "NUM_SORTED_RUN_COMPACTION_TRIGGER",
    "NUM_SORTED_RUN_STOP_TRIGGER",
    "PRODUCERS",
    "RECORD_LEVEL_EXPIRE_TIME",
    "RECORD_LEVEL_TIME_FIELD",
    "RECORD_LEVEL_TIME_FIELD_TYPE",
    "ROWS",
    "TARGET_FILE_SIZE",
    "WRITE_BUFFER_SIZE",
    "WRITE_ONLY",
]

MB = 1 << 20
_COUNT = "a count"
_PERCENT = "a percentage"

_WRITER = honoured("writer and primary-key compaction")
#: Paimon's ``CoreOptions.targetFileSize(hasPrimaryKey)``: 128 MB with a primary key, 256 MB
#: without one
TARGET_FILE_SIZE = _WRITER.row(
    "target-file-size",
    MEMORY,
    PerKind(primary_key=128 * MB, append=256 * MB),
    rng(1, meaning="the size of a data file"),
)
WRITE_BUFFER_SIZE = _WRITER.row(
    "write-buffer-size", MEMORY, 256 * MB, rng(1, meaning="the in-memory buffer of a writer")
)
#: 'write.compaction-skip' is Paimon's older name of 'write-only'
WRITE_ONLY = _WRITER.row("write-only", BOOL, False, rng(), fallbacks=("write.compaction-skip",))
_COMPACTION_SKIP = _WRITER.row("write.compaction-skip", BOOL, False, rng())
NUM_SORTED_RUN_COMPACTION_TRIGGER = _WRITER.row(
    "num-sorted-run.compaction-trigger", INT, 5, rng(1, INT_MAX, meaning=_COUNT)
)


def _trigger_plus(n: int) -> Derived[int]:
    return Derived(
        lambda o: NUM_SORTED_RUN_COMPACTION_TRIGGER.get(o) + n,
        f"num-sorted-run.compaction-trigger + {n}",
    )


NUM_SORTED_RUN_STOP_TRIGGER = _WRITER.row(
    "num-sorted-run.stop-trigger", INT, _trigger_plus(3), rng(1, INT_MAX, meaning=_COUNT)
)
NUM_LEVELS = _WRITER.row(
    "num-levels",
    INT,
    _trigger_plus(1),
    rng(2, INT_MAX, meaning="the number of LSM levels; Paimon's Levels needs 2"),
)
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = _WRITER.row(
    "compaction.max-size-amplification-percent", INT, 200, rng(0, INT_MAX, meaning=_PERCENT)
)
COMPACTION_SIZE_RATIO = _WRITER.row(
    "compaction.size-ratio", INT, 1, rng(0, INT_MAX, meaning=_PERCENT)
)
COMPACTION_SMALL_FILE_RATIO = _WRITER.row(
    "compaction.small-file-ratio", FLOAT, 0.7, rng(0, 1, meaning="a fraction of the file size")
)
COMPACTION_OPTIMIZATION_INTERVAL = _WRITER.row(
    "compaction.optimization-interval", DURATION, None, rng(1)
)
COMPACTION_TOTAL_SIZE_THRESHOLD = _WRITER.row(
    "compaction.total-size-threshold", MEMORY, None, rng(0)
)
COMPACTION_INCREMENTAL_SIZE_THRESHOLD = _WRITER.row(
    "compaction.incremental-size-threshold", MEMORY, None, rng(0)
)
_HOUR = "an hour of the day"
COMPACTION_OFFPEAK_START_HOUR = _WRITER.row(
    "compaction.offpeak.start.hour", INT, -1, rng(0, 23, -1, meaning=_HOUR)
)
COMPACTION_OFFPEAK_END_HOUR = _WRITER.row(
    "compaction.offpeak.end.hour", INT, -1, rng(0, 23, -1, meaning=_HOUR)
)
COMPACTION_OFFPEAK_RATIO = _WRITER.row(
    "compaction.offpeak-ratio", INT, 0, rng(0, INT_MAX, meaning=_PERCENT)
)
COMPACTION_FORCE_UP_LEVEL_0 = _WRITER.row("compaction.force-up-level-0", BOOL, False, rng())
COMPACTION_FORCE_REWRITE_ALL_FILES = _WRITER.row(
    "compaction.force-rewrite-all-files", BOOL, False, rng()
)
COMMIT_FORCE_COMPACT = _WRITER.row("commit.force-compact", BOOL, False, rng())
LOOKUP_COMPACT = _WRITER.row("lookup-compact", enum("radical", "gentle"), "radical")
LOOKUP_COMPACT_MAX_INTERVAL = _WRITER.row(
    "lookup-compact.max-interval",
    INT,
    Derived(
        lambda o: 2 * NUM_SORTED_RUN_COMPACTION_TRIGGER.get(o),
        "2 * num-sorted-run.compaction-trigger",
    ),
    rng(1, INT_MAX, meaning=_COUNT),
)
FORCE_LOOKUP = _WRITER.row("force-lookup", BOOL, False, rng())
RECORD_LEVEL_EXPIRE_TIME = _WRITER.row("record-level.expire-time", DURATION, None, rng(1))
RECORD_LEVEL_TIME_FIELD = _WRITER.row("record-level.time-field", STRING)
#: Paimon's TimeFieldType
RECORD_LEVEL_TIME_FIELD_TYPE = _WRITER.row(
    "record-level.time-field-type", enum("seconds-int", "millis-long"), "seconds-int"
)

PRODUCERS = ("none", "input", "lookup", "full-compaction")


def _first_row_producers(value: str, options: Mapping[str, str]) -> bool:
    """Paimon's ``SchemaValidation``: merge-engine first-row takes only the none and lookup
    changelog producers."""
    from lakeops.options.rows_merge import MERGE_ENGINE

    engine = norm(MERGE_ENGINE.text(options) or "")
    return engine == "first-row" and norm(value) in ("input", "full-compaction")


CHANGELOG_PRODUCER = honoured(
    "none, input, lookup, full-compaction; with merge-engine first-row only none and lookup, "
    "as in Paimon",
    refuse_value=_first_row_producers,
    fix="use changelog-producer 'lookup' (or 'none') with merge-engine first-row",
).row("changelog-producer", enum(*PRODUCERS), "none")
_CHANGELOG = honoured("changelog production")
CHANGELOG_ROW_DEDUPLICATE = _CHANGELOG.row("changelog-producer.row-deduplicate", BOOL, False, rng())
CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS = _CHANGELOG.row(
    "changelog-producer.row-deduplicate-ignore-fields", LIST, ()
)
FULL_COMPACTION_DELTA_COMMITS = _CHANGELOG.row(
    "full-compaction.delta-commits", INT, 1, rng(1, INT_MAX, meaning=_COUNT)
)
LOOKUP_CACHE_MAX_MEMORY_SIZE = _CHANGELOG.row(
    "lookup.cache-max-memory-size", MEMORY, 256 * MB, rng(1)
)
_LOCAL_FILES = honoured(
    "point lookups' local lookup files (lakeops.read.lookup_local): deleted when unused for "
    "the retention, least recently used first beyond the disk size (0: no local files)"
)
LOOKUP_CACHE_FILE_RETENTION = _LOCAL_FILES.row(
    "lookup.cache-file-retention", DURATION, 3_600_000, rng(0)
)
LOOKUP_CACHE_MAX_DISK_SIZE = _LOCAL_FILES.row(
    "lookup.cache-max-disk-size", MEMORY, LONG_MAX, rng(0, LONG_MAX, meaning="a size")
)
#: lakeops' own (Paimon keeps its lookup files in its engine's temporary directories): where
#: point lookups keep their local lookup files (lakeops.read.lookup_local); blank: the user's
#: cache directory, $XDG_CACHE_HOME/lakeops/lookup
LOOKUP_LOCAL_DIR = honoured(
    "lakeops only: the local directory of point lookups' local lookup files (blank: "
    "$XDG_CACHE_HOME/lakeops/lookup); Paimon's engines ignore it"
).row("lakeops.lookup.local-dir", STRING, "")


ROWS: tuple[Option[Any], ...] = (
    TARGET_FILE_SIZE,
    WRITE_BUFFER_SIZE,
    WRITE_ONLY,
    _COMPACTION_SKIP,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    NUM_SORTED_RUN_STOP_TRIGGER,
    NUM_LEVELS,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_SIZE_RATIO,
    COMPACTION_SMALL_FILE_RATIO,
    COMPACTION_OPTIMIZATION_INTERVAL,
    COMPACTION_TOTAL_SIZE_THRESHOLD,
    COMPACTION_INCREMENTAL_SIZE_THRESHOLD,
    COMPACTION_OFFPEAK_START_HOUR,
    COMPACTION_OFFPEAK_END_HOUR,
    COMPACTION_OFFPEAK_RATIO,
    COMPACTION_FORCE_UP_LEVEL_0,
    COMPACTION_FORCE_REWRITE_ALL_FILES,
    COMMIT_FORCE_COMPACT,
    LOOKUP_COMPACT,
    LOOKUP_COMPACT_MAX_INTERVAL,
    FORCE_LOOKUP,
    RECORD_LEVEL_EXPIRE_TIME,
    RECORD_LEVEL_TIME_FIELD,
    RECORD_LEVEL_TIME_FIELD_TYPE,
    CHANGELOG_PRODUCER,
    CHANGELOG_ROW_DEDUPLICATE,
    CHANGELOG_ROW_DEDUPLICATE_IGNORE_FIELDS,
    FULL_COMPACTION_DELTA_COMMITS,
    LOOKUP_CACHE_MAX_MEMORY_SIZE,
    LOOKUP_CACHE_FILE_RETENTION,
    LOOKUP_CACHE_MAX_DISK_SIZE,
    LOOKUP_LOCAL_DIR,
)
