"""Compaction options of a table (Paimon's names and defaults), parsed once."""

from __future__ import annotations

from dataclasses import dataclass

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options import TableOptions
from lakeops.options.parsing import option_bool, parse_duration, parse_memory_size

__all__ = ["CompactOptions"]


def _int(options: dict[str, str], key: str, default: int) -> int:
    try:
        return int(options.get(key, default))
    except ValueError:
        raise ConfigurationError(
            f"option {key!r} must be an integer, got {options[key]!r}"
        ) from None


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
        trigger = _int(o, "num-sorted-run.compaction-trigger", 5)
        stop = max(_int(o, "num-sorted-run.stop-trigger", trigger + 3), trigger)
        if trigger < 1:
            raise ConfigurationError("option 'num-sorted-run.compaction-trigger' must be >= 1")
        needs_lookup = (
            o.get("changelog-producer", "none").lower() == "lookup"
            or table.merge_engine == "first-row"
            or table.deletion_vectors
            or option_bool(o, "force-lookup", False)
        )
        mode = o.get("lookup-compact", "radical").strip().lower()
        if mode not in ("radical", "gentle"):
            raise ConfigurationError(
                f"option 'lookup-compact' must be 'radical' or 'gentle', got {mode!r}"
            )
        gentle = (
            max(_int(o, "lookup-compact.max-interval", 2 * trigger), trigger)
            if mode == "gentle"
            else None
        )
        interval = o.get("compaction.optimization-interval")
        total = o.get("compaction.total-size-threshold")
        incremental = o.get("compaction.incremental-size-threshold")
        expire = o.get("record-level.expire-time")
        expire_field = o.get("record-level.time-field")
        if expire and not expire_field:
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
        expire_type = o.get("record-level.time-field-type", "seconds-int").strip().lower()
        if expire_type not in ("seconds-int", "millis-long"):
            raise ConfigurationError(
                "option 'record-level.time-field-type' must be 'seconds-int' or 'millis-long' "
                f"(Paimon's TimeFieldType), got {o['record-level.time-field-type']!r}"
            )
        ratio = o.get("compaction.small-file-ratio", "0.7")
        try:
            small_ratio = float(ratio)
        except ValueError:
            raise ConfigurationError(
                f"option 'compaction.small-file-ratio' must be a number, got {ratio!r}"
            ) from None
        return cls(
            trigger=trigger,
            stop_trigger=stop,
            num_levels=_int(o, "num-levels", trigger + 1),
            max_size_amp=_int(o, "compaction.max-size-amplification-percent", 200),
            size_ratio=_int(o, "compaction.size-ratio", 1),
            small_file_ratio=small_ratio,
            optimization_interval_ms=parse_duration(interval, "compaction.optimization-interval")
            if interval
            else None,
            total_size_threshold=parse_memory_size(total, "compaction.total-size-threshold")
            if total
            else None,
            incremental_size_threshold=parse_memory_size(
                incremental, "compaction.incremental-size-threshold"
            )
            if incremental
            else None,
            offpeak_start=_int(o, "compaction.offpeak.start.hour", -1),
            offpeak_end=_int(o, "compaction.offpeak.end.hour", -1),
            offpeak_ratio=_int(o, "compaction.offpeak-ratio", 0),
            force_up_level0=option_bool(o, "compaction.force-up-level-0", False),
            needs_lookup=needs_lookup,
            lookup_gentle_interval=gentle,
            write_only=option_bool(o, "write-only", False, "write.compaction-skip"),
            force_rewrite_all=option_bool(o, "compaction.force-rewrite-all-files", False),
            force_compact_on_commit=option_bool(o, "commit.force-compact", False),
            expire_ms=parse_duration(expire, "record-level.expire-time") if expire else None,
            expire_field=expire_field,
            expire_field_type=expire_type,
        )
