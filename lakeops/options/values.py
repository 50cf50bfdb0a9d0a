"""The value of every table option lakeops interprets: its type and its valid range.

Paimon parses an option when an engine first uses it, and a few values (``num-levels`` = 1, a
negative ``dynamic-bucket.target-row-num``) fail only deep inside a write. lakeops checks every
value once, when a table is created or altered
(:func:`lakeops.table.schema_commit.validate_schema`), so a bad value is refused before anything is
written, with the option's name, the bad value, the valid range and the fix. The ranges are those
Paimon's code relies on (``Levels`` needs two levels, off-peak hours are hours of the day or -1,
counts of snapshots are at least 1 …).

Value syntax, as Paimon's ``OptionsUtils``: integers are decimal digits with an optional sign
(surrounding blanks are ignored); booleans are ``true`` / ``false`` (any case); memory sizes
``256 mb``, ``64kb`` (:func:`lakeops.options.parse_memory_size`); durations ``30 min``, ``1 h``,
``500 ms`` (:func:`lakeops.options.compaction.parse_duration`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lakeops.errors import ConfigurationError
from lakeops.options.parsing import parse_duration, parse_memory_size

__all__ = ["VALUE_SPECS", "ValueSpec", "check_option_values", "parse_int", "spec_for"]

ValueKind = Literal["int", "float", "bool", "memory", "duration"]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ValueSpec:
    """Type and range of one option (a key, or a ``fields.<field>.…`` pattern).

    Attributes:
        kind: ``int`` (Java int or long), ``float``, ``bool``, ``memory`` (bytes), ``duration``.
        low: smallest valid value (bytes / milliseconds for memory and durations), or None.
        high: largest valid value, or None.
        special: values outside ``low``..``high`` that are valid too (``-1`` = "off").
        meaning: what the value means, for the error message.
    """

    kind: ValueKind
    low: float | None = None
    high: float | None = None
    special: tuple[int, ...] = ()
    meaning: str = ""

    def describe_range(self) -> str:
        if self.kind == "bool":
            return "'true' or 'false'"
        unit = {"memory": " bytes", "duration": " ms"}.get(self.kind, "")
        parts = []
        if self.low is not None and self.high is not None:
            parts.append(f"from {_num(self.low)} to {_num(self.high)}{unit}")
        elif self.low is not None:
            parts.append(f"at least {_num(self.low)}{unit}")
        elif self.high is not None:
            parts.append(f"at most {_num(self.high)}{unit}")
        parts += [str(s) for s in self.special]
        what = {
            "int": "an integer",
            "float": "a number",
            "memory": "a memory size such as '256 mb',",
            "duration": "a duration such as '30 min',",
        }[self.kind]
        return f"{what} " + " or ".join(parts) if parts else what


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _spec(kind: ValueKind, low: float | None = None, high: float | None = None,
          *special: int, meaning: str = "") -> ValueSpec:  # fmt: skip
    return ValueSpec(kind, low, high, tuple(special), meaning)


_COUNT = "a count"
#: every option lakeops interprets that has a typed value (enumerations and column lists are
#: checked where they are parsed: lakeops.options, lakeops.options.compaction …)
VALUE_SPECS: dict[str, ValueSpec] = {
    # layout and buckets
    "bucket": _spec("int", 1, INT_MAX, -1, -2, meaning="the number of buckets (-1: dynamic)"),
    "dynamic-bucket.target-row-num": _spec("int", 1, LONG_MAX, meaning="rows per bucket"),
    "dynamic-bucket.max-buckets": _spec(
        "int", 1, INT_MAX, -1, meaning="buckets per partition (-1: unlimited)"
    ),
    "dynamic-bucket.initial-buckets": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "dynamic-bucket.assigner-parallelism": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "cross-partition-upsert.bootstrap-parallelism": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "cross-partition-upsert.index-ttl": _spec("duration", 1, meaning="how long keys are kept"),
    "file.compression.zstd-level": _spec("int", 1, 22, meaning="the zstd level"),
    "partition.legacy-name": _spec("bool"),
    "primary-key.nullable": _spec("bool"),
    # merging
    "ignore-delete": _spec("bool"),
    "first-row.ignore-delete": _spec("bool"),
    "deduplicate.ignore-delete": _spec("bool"),
    "partial-update.ignore-delete": _spec("bool"),
    "ignore-update-before": _spec("bool"),
    "sequence.snapshot-ordering": _spec("bool"),
    "aggregation.remove-record-on-delete": _spec("bool"),
    "partial-update.remove-record-on-delete": _spec("bool"),
    "fields.<field>.ignore-retract": _spec("bool"),
    "fields.<field>.distinct": _spec("bool"),
    # writing and compaction
    "target-file-size": _spec("memory", 1, meaning="the size of a data file"),
    "write-buffer-size": _spec("memory", 1, meaning="the in-memory buffer of a writer"),
    "write-only": _spec("bool"),
    "write.compaction-skip": _spec("bool"),
    "num-sorted-run.compaction-trigger": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "num-sorted-run.stop-trigger": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "num-levels": _spec(
        "int", 2, INT_MAX, meaning="the number of LSM levels; Paimon's Levels needs 2"
    ),
    "compaction.max-size-amplification-percent": _spec("int", 0, INT_MAX, meaning="a percentage"),
    "compaction.size-ratio": _spec("int", 0, INT_MAX, meaning="a percentage"),
    "compaction.small-file-ratio": _spec("float", 0, 1, meaning="a fraction of the file size"),
    "compaction.optimization-interval": _spec("duration", 1),
    "compaction.total-size-threshold": _spec("memory", 0),
    "compaction.incremental-size-threshold": _spec("memory", 0),
    "compaction.offpeak.start.hour": _spec("int", 0, 23, -1, meaning="an hour of the day"),
    "compaction.offpeak.end.hour": _spec("int", 0, 23, -1, meaning="an hour of the day"),
    "compaction.offpeak-ratio": _spec("int", 0, INT_MAX, meaning="a percentage"),
    "compaction.force-up-level-0": _spec("bool"),
    "compaction.force-rewrite-all-files": _spec("bool"),
    "commit.force-compact": _spec("bool"),
    "lookup-compact.max-interval": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "force-lookup": _spec("bool"),
    "record-level.expire-time": _spec("duration", 1),
    # changelog
    "changelog-producer.row-deduplicate": _spec("bool"),
    "full-compaction.delta-commits": _spec("int", 1, INT_MAX, meaning=_COUNT),
    "lookup.cache-max-memory-size": _spec("memory", 1),
    # retention and commits
    "snapshot.num-retained.min": _spec("int", 1, INT_MAX, meaning="snapshots kept"),
    "snapshot.num-retained.max": _spec("int", 1, INT_MAX, meaning="snapshots kept"),
    "snapshot.time-retained": _spec("duration", 0),
    # automatic tags (lakeops.options.auto_tag)
    "tag.num-retained-max": _spec("int", 1, INT_MAX, meaning="automatic tags kept"),
    "tag.creation-delay": _spec("duration", 0),
    "tag.default-time-retained": _spec("duration", 1, meaning="how long a tag is kept"),
    "tag.automatic-completion": _spec("bool"),
    "snapshot.expire.limit": _spec("int", 1, INT_MAX, meaning="snapshots expired per call"),
    "changelog.num-retained.min": _spec("int", 1, INT_MAX, meaning="changelogs kept"),
    "changelog.num-retained.max": _spec("int", 1, INT_MAX, meaning="changelogs kept"),
    "changelog.time-retained": _spec("duration", 0),
    "consumer.expiration-time": _spec("duration", 1),
    "partition.expiration-time": _spec("duration", 1),
    "commit.max-retries": _spec("int", 0, INT_MAX, meaning="retries after a lost race"),
    "commit.timeout": _spec("duration", 0, LONG_MAX, meaning="how long a commit keeps retrying"),
    # Paimon keeps the pauses as Java ints of milliseconds; a zero pause would spin
    "commit.min-retry-wait": _spec("duration", 1, INT_MAX, meaning="the first pause"),
    "commit.max-retry-wait": _spec("duration", 1, INT_MAX, meaning="the longest pause"),
    "manifest.merge-min-count": _spec("int", 0, INT_MAX, meaning=_COUNT),
    # switches (lakeops refuses some values of these in lakeops.options.registry)
    "deletion-vectors.enabled": _spec("bool"),
    "deletion-vectors.bitmap64": _spec("bool"),
    "deletion-vectors.modifiable": _spec("bool"),
    "deletion-vectors.merge-on-read": _spec("bool"),
    "index-file-in-data-file-dir": _spec("bool"),
    "data-file.thin-mode": _spec("bool"),
    "pk-clustering-override": _spec("bool"),
    "row-tracking.enabled": _spec("bool"),
    "data-evolution.enabled": _spec("bool"),
    "chain-table.enabled": _spec("bool"),
    "query-auth.enabled": _spec("bool"),
    "metadata.iceberg-compatible": _spec("bool"),
    "metastore.partitioned-table": _spec("bool"),
}

_FIELD_PATTERN = re.compile(r"fields\.(.+)\.([^.]+)")
_INT = re.compile(r"\s*[+-]?\d+\s*")


def parse_int(text: str, option: str, low: int | None = None, high: int | None = None) -> int:
    """An integer option value (Paimon's syntax), checked against ``low``..``high``."""
    spec = ValueSpec("int", low, high)
    value = _parse(text, spec, option)
    return int(value)


def spec_for(key: str) -> ValueSpec | None:
    """The value spec of ``key`` (``fields.<name>.distinct`` matches its pattern)."""
    spec = VALUE_SPECS.get(key)
    if spec is None:
        m = _FIELD_PATTERN.fullmatch(key)
        if m:
            spec = VALUE_SPECS.get(f"fields.<field>.{m.group(2)}")
    return spec


def _bad(option: str, text: str, spec: ValueSpec) -> ConfigurationError:
    meaning = f" ({spec.meaning})" if spec.meaning else ""
    return ConfigurationError(
        f"option {option!r} = {text!r} is invalid: it must be {spec.describe_range()}{meaning}; "
        f"set a valid value or remove {option!r} to use Paimon's default"
    )


def _parse(text: str, spec: ValueSpec, option: str) -> float:
    value: float
    if spec.kind == "bool":
        if text.strip().lower() not in ("true", "false"):
            raise _bad(option, text, spec)
        return 1.0
    if spec.kind == "int":
        if not _INT.fullmatch(text):
            raise _bad(option, text, spec)
        value = int(text)
    elif spec.kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise _bad(option, text, spec) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise _bad(option, text, spec)
    else:
        try:
            value = (
                parse_memory_size(text, option)
                if spec.kind == "memory"
                else parse_duration(text, option)
            )
        except ConfigurationError:
            raise _bad(option, text, spec) from None
    if value in spec.special:
        return value
    if (spec.low is not None and value < spec.low) or (spec.high is not None and value > spec.high):
        raise _bad(option, text, spec)
    return value


def check_option_values(options: Mapping[str, str]) -> None:
    """Raise :class:`ConfigurationError` for the first option (in key order) whose value has
    the wrong type or lies outside its range; also the pairs that must be ordered (a minimum
    above its maximum)."""
    for key in sorted(options):
        spec = spec_for(key)
        if spec is not None:
            _parse(str(options[key]), spec, key)
    for low_key, high_key in (
        ("snapshot.num-retained.min", "snapshot.num-retained.max"),
        ("changelog.num-retained.min", "changelog.num-retained.max"),
    ):
        if low_key in options and high_key in options:
            low, high = int(options[low_key]), int(options[high_key])
            if low > high:
                raise ConfigurationError(
                    f"option {low_key!r} = {low} is larger than {high_key!r} = {high}; the "
                    f"minimum must not exceed the maximum (lower {low_key!r} or raise "
                    f"{high_key!r})"
                )
    low_wait, high_wait = "commit.min-retry-wait", "commit.max-retry-wait"
    if (
        low_wait in options
        and high_wait in options
        and parse_duration(options[low_wait], low_wait)
        > parse_duration(options[high_wait], high_wait)
    ):
        raise ConfigurationError(
            f"option {low_wait!r} = {options[low_wait]!r} is longer than {high_wait!r} = "
            f"{options[high_wait]!r}; the first pause must not exceed the longest (lower "
            f"{low_wait!r} or raise {high_wait!r})"
        )
