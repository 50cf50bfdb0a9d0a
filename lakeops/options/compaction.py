"""Compaction options of a table (Paimon's names and defaults), parsed once."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options import TableOptions
from lakeops.options import rows_write as W

__all__ = ["CompactOptions"]


@dataclass(frozen=True)
class CompactOptions:
    """What compaction needs to know about a table."""

    trigger: int
    stop_trigger: int
    num_levels: int
    max_size_amp: int
    size_ratio: int
    small_file_ratio: float
    optimization_interval_ms: int | None
    total_size_threshold: int | None
    incremental_size_threshold: int | None
    offpeak_start: int
    offpeak_end: int
    offpeak_ratio: int
    force_up_level0: bool
    needs_lookup: bool
    lookup_gentle_interval: int | None
    write_only: bool
    force_rewrite_all: bool
    force_compact_on_commit: bool
    expire_ms: int | None
    expire_field: str | None
    expire_field_type: str

    @classmethod
    def from_schema(cls, schema: TableSchema, table: TableOptions) -> CompactOptions:
        o = schema.options
        trigger = W.NUM_SORTED_RUN_COMPACTION_TRIGGER.get(o)
        stop = max(W.NUM_SORTED_RUN_STOP_TRIGGER.get(o), trigger)
        needs_lookup = (
            W.CHANGELOG_PRODUCER.get(o) == "lookup"
            or table.merge_engine == "first-row"
            or table.deletion_vectors
            or W.FORCE_LOOKUP.get(o)
        )
        mode = W.LOOKUP_COMPACT.get(o)
        gentle = max(W.LOOKUP_COMPACT_MAX_INTERVAL.get(o), trigger) if mode == "gentle" else None
        expire_field = W.RECORD_LEVEL_TIME_FIELD.find(o, blank_is_unset=True)
        expire = W.RECORD_LEVEL_EXPIRE_TIME.find(o, blank_is_unset=True)
        if expire is not None and not expire_field:
            raise ConfigurationError(
                "option 'record-level.expire-time' needs "
                "'record-level.time-field' (the column holding the time)"
            )
        if expire_field:
            t = schema.field(expire_field).type
            if t.root not in ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
                raise ConfigurationError(
                    f"option 'record-level.time-field' column {expire_field!r} must be INT, "
                    f"BIGINT or TIMESTAMP, not {t.to_paimon()}"
                )
        expire_type = W.RECORD_LEVEL_TIME_FIELD_TYPE.get(o)
        return cls(
            trigger=trigger,
            stop_trigger=stop,
            num_levels=W.NUM_LEVELS.get(o),
            max_size_amp=W.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT.get(o),
            size_ratio=W.COMPACTION_SIZE_RATIO.get(o),
            small_file_ratio=W.COMPACTION_SMALL_FILE_RATIO.get(o),
            optimization_interval_ms=W.COMPACTION_OPTIMIZATION_INTERVAL.find(
                o, blank_is_unset=True
            ),
            total_size_threshold=W.COMPACTION_TOTAL_SIZE_THRESHOLD.find(o, blank_is_unset=True),
            incremental_size_threshold=W.COMPACTION_INCREMENTAL_SIZE_THRESHOLD.find(
                o, blank_is_unset=True
            ),
            offpeak_start=W.COMPACTION_OFFPEAK_START_HOUR.get(o),
            offpeak_end=W.COMPACTION_OFFPEAK_END_HOUR.get(o),
            offpeak_ratio=W.COMPACTION_OFFPEAK_RATIO.get(o),
            force_up_level0=W.COMPACTION_FORCE_UP_LEVEL_0.get(o),
            needs_lookup=needs_lookup,
            lookup_gentle_interval=gentle,
            write_only=W.WRITE_ONLY.get(o),
            force_rewrite_all=W.COMPACTION_FORCE_REWRITE_ALL_FILES.get(o),
            force_compact_on_commit=W.COMMIT_FORCE_COMPACT.get(o),
            expire_ms=expire,
            expire_field=expire_field,
            expire_field_type=expire_type,
        )
