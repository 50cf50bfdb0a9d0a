"""Partition expiry as Paimon 0.9 defines it: which partitions are expired.

Two strategies (``partition.expiration-strategy``):

* ``values-time`` (default): the partition's time is extracted from its values as Paimon's
  ``PartitionTimeExtractor`` does — ``partition.timestamp-pattern`` (``$dt $hour:00:00``;
  every ``$<key>`` replaced by that key's value; without a pattern the first partition value)
  parsed by ``partition.timestamp-formatter`` (a Java ``DateTimeFormatter`` pattern such as
  ``yyyyMMdd``; without one Paimon's lenient ``yyyy-MM-dd[ HH:mm:ss[.S…]]``). A text that only
  holds a date means its midnight. A value that cannot be parsed is skipped (never expired), as
  Paimon logs and skips it.
* ``update-time``: the newest creation time of the partition's files.

A partition is expired when ``now - partition.expiration-time`` is after its time (strictly).

How many go per run, as Paimon 1.x's ``NormalPartitionExpire`` decides (Paimon 0.9 drops every
expired partition in one commit and knows neither option): the expired partitions are sorted by
their values joined with ``,`` (Java string order), at most ``partition.expiration-max-num``
(default 100) of the first are dropped, in ``OVERWRITE`` commits of
``partition.expiration-batch-size`` partitions each when that is set and smaller than their
number (else one commit) — :func:`plan_drops`.

DATE partition values: Paimon renders a partition value with ``toString`` of its internal form,
and a DATE's internal form is its day number since 1970-01-01 (an ``Integer``): the time
extractor then sees ``19800``, not ``2024-03-18``, which neither the default formatter nor a
date pattern parses, so Paimon (0.9 and 1.x alike) never expires a DATE partition by
``values-time`` (it logs and skips it). lakeops renders it the same way and skips it too;
``update-time`` expires such partitions normally.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakeops.commit.committer import BATCH_COMMIT_IDENTIFIER, Committer
from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.manifest import FileKind
from lakeops.format.snapshot import Snapshot
from lakeops.options.rows_retention import (
    PARTITION_EXPIRATION_BATCH_SIZE,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
)
from lakeops.store import TableStore
from lakeops.store.context import TableContext

log = logging.getLogger(__name__)

VALUES_TIME = "values-time"
UPDATE_TIME = "update-time"

_DEFAULT = re.compile(
    r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?"
)

# Java DateTimeFormatter letters lakeops understands: letter -> (field, regex by count)
_FIELDS = {"y": "year", "u": "year", "M": "month", "d": "day", "H": "hour", "m": "minute"}
_FIELDS |= {"s": "second", "S": "fraction"}


def _lenient(
    year: int, month: int, day: int, hour: int, minute: int, second: int, nanos: int
) -> dt.datetime:
    """Java's ResolverStyle.LENIENT: out-of-range fields roll over."""
    years, month0 = divmod(month - 1, 12)
    base = dt.datetime(year + years, month0 + 1, 1)
    return base + dt.timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second, microseconds=nanos // 1000
    )


def parse_default(text: str) -> dt.datetime:
    """Paimon's ``toLocalDateTimeDefault``: lenient ``y-M-d[ H:m:s[.fraction]]``."""
    match = _DEFAULT.fullmatch(text)
    if match is None:
        raise ValueError(f"cannot parse {text!r} as a timestamp")
    y, mo, d, h, mi, s, frac = match.groups()
    nanos = int((frac or "0").ljust(9, "0"))
    try:
        return _lenient(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), nanos)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"cannot parse {text!r} as a timestamp") from exc


def _compile(formatter: str) -> tuple[re.Pattern[str], list[str]]:
    """A Java DateTimeFormatter pattern as a regex and the fields of its groups."""
    parts: list[str] = []
    fields: list[str] = []
    i = 0
    while i < len(formatter):
        char = formatter[i]
        if char == "'":
            end = formatter.find("'", i + 1)
            if end < 0:
                raise ValueError(f"unclosed quote in partition.timestamp-formatter {formatter!r}")
            parts.append(re.escape(formatter[i + 1 : end] or "'"))
            i = end + 1
            continue
        if char.isalpha():
            run = len(formatter) - i - len(formatter[i:].lstrip(char))
            if char not in _FIELDS:
                raise ValueError(
                    f"partition.timestamp-formatter {formatter!r}: letter {char!r} is not "
                    "supported (y, u, M, d, H, m, s, S are)"
                )
            field = _FIELDS[char]
            if field == "fraction":
                parts.append(rf"(\d{{{run}}})")
            elif field == "year" and run == 2:
                parts.append(r"(\d{2})")
                field = "year2"
            elif field == "year":
                parts.append(rf"(\d{{{max(run, 4)},19}})" if run >= 4 else r"(\d{1,19})")
            elif run == 1:
                parts.append(r"(\d{1,2})")
            else:
                parts.append(rf"(\d{{{run}}})")
            fields.append(field)
            i += run
            continue
        parts.append(re.escape(char))
        i += 1
    return re.compile("".join(parts)), fields


def parse_formatted(text: str, formatter: str) -> dt.datetime:
    """``LocalDateTime.parse`` by a Java pattern, falling back to ``LocalDate`` at midnight
    (strict field ranges, as Java's default SMART resolver for these fields)."""
    pattern, fields = _compile(formatter)
    match = pattern.fullmatch(text)
    if match is None:
        raise ValueError(f"cannot parse {text!r} with {formatter!r}")
    values = dict(zip(fields, match.groups(), strict=True))
    if ("year" not in values and "year2" not in values) or not {"month", "day"} <= set(values):
        raise ValueError(f"{formatter!r} does not name a full date")
    year = int(values["year"]) if "year" in values else 2000 + int(values["year2"])
    has_time = "hour" in values
    frac = values.get("fraction", "0")
    try:
        return dt.datetime(
            year,
            int(values["month"]),
            int(values["day"]),
            int(values.get("hour", 0)) if has_time else 0,
            int(values.get("minute", 0)) if has_time else 0,
            int(values.get("second", 0)) if has_time else 0,
            int(frac.ljust(9, "0")[:6]) if has_time else 0,
        )
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"cannot parse {text!r} with {formatter!r}") from exc


@dataclass(frozen=True)
class PartitionTimeExtractor:
    """Paimon's ``PartitionTimeExtractor``."""

    pattern: str | None = None
    formatter: str | None = None

    def extract(self, keys: Sequence[str], values: Sequence[object]) -> dt.datetime:
        if self.pattern is None:
            text = str(values[0])
        else:
            text = self.pattern
            for key, value in zip(keys, values, strict=True):
                text = text.replace("$" + key, str(value))
        if self.formatter is None:
            return parse_default(text)
        return parse_formatted(text, self.formatter)


@dataclass(frozen=True)
class PartitionInfo:
    """One live partition: its values by key (Paimon's string rendering) and its newest file's
    creation time (epoch milliseconds, local time as Paimon stores it)."""

    spec: Mapping[str, str]
    last_file_creation_ms: int


def select_expired(
    partitions: Sequence[PartitionInfo],
    *,
    keys: Sequence[str],
    expiration: dt.timedelta,
    now: dt.datetime,
    strategy: str = VALUES_TIME,
    extractor: PartitionTimeExtractor | None = None,
) -> list[PartitionInfo]:
    """The expired partitions, in the given order (``now`` is naive local time, as Java's
    ``LocalDateTime.now()``)."""
    expire_before = now - expiration
    if strategy == UPDATE_TIME:
        limit_ms = int(expire_before.astimezone().timestamp() * 1000)
        return [p for p in partitions if limit_ms > p.last_file_creation_ms]
    if strategy != VALUES_TIME:
        raise ValueError(f"unknown partition.expiration-strategy {strategy!r}")
    extractor = extractor or PartitionTimeExtractor()
    expired = []
    for part in partitions:
        try:
            when = extractor.extract(keys, [part.spec[k] for k in keys])
        except ValueError:
            continue  # Paimon logs and skips a value it cannot parse
        if expire_before > when:
            expired.append(part)
    return expired


def _java_text(value: object) -> str:
    """Paimon's ``toString`` of an internal partition value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def live_partitions(store: TableStore, snapshot: Snapshot | None) -> dict[bytes, PartitionInfo]:
    """The partitions with live files in ``snapshot`` (by serialized partition), with the
    newest creation time of any file an entry names, as Paimon's ``PartitionEntry`` merge."""
    if snapshot is None:
        return {}
    schema = store.latest_schema()
    keys = list(schema.partition_keys)
    types = schema.types_of(keys)
    files: dict[bytes, int] = {}
    latest: dict[bytes, int] = {}
    names = [m.file_name for m in store.data_manifests(snapshot)]
    for manifest in store.manifests(names, parallelism=None):
        for e in manifest:
            files[e.partition] = files.get(e.partition, 0) + (1 if e.kind == FileKind.ADD else -1)
            created = e.file.creation_time_millis
            if created is not None:
                latest[e.partition] = max(latest.get(e.partition, created), created)
    live: dict[bytes, PartitionInfo] = {}
    for partition, count in files.items():
        if count > 0:
            values = binary_row.deserialize_internal(partition, types)
            spec = {k: _java_text(v) for k, v in zip(keys, values, strict=True)}
            live[partition] = PartitionInfo(spec, latest.get(partition, 0))
    return live


def _java_order(spec: Mapping[str, str]) -> bytes:
    """Paimon's sort key of an expired partition: its values joined with ``,``, compared as
    Java compares strings (UTF-16 code units, which big-endian UTF-16 bytes order alike)."""
    return ",".join(spec.values()).encode("utf-16-be", "surrogatepass")


def plan_drops(
    expired: Sequence[PartitionInfo], max_num: int, batch_size: int | None
) -> list[list[PartitionInfo]]:
    """The commits one run makes, as Paimon 1.x's ``NormalPartitionExpire``: the expired
    partitions sorted by :func:`_java_order`, the first ``max_num`` kept, split into batches
    of ``batch_size`` when it is positive and smaller than their number (else one batch)."""
    ordered = sorted(expired, key=lambda p: _java_order(p.spec))[: max(max_num, 0)]
    if not ordered:
        return []
    if batch_size is not None and 0 < batch_size < len(ordered):
        return [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    return [ordered]


@dataclass(frozen=True)
class PartitionExpireResult:
    """What a run expired (or, in a dry run, would expire): the partitions' values by key, in
    the order they were dropped, and the last ``OVERWRITE`` snapshot that dropped them (None in
    a dry run or when none expired); ``snapshot_ids``: every one of them, one per batch of
    ``partition.expiration-batch-size``."""

    partitions: list[dict[str, str]]
    snapshot_id: int | None
    dry_run: bool
    snapshot_ids: tuple[int, ...] = ()


def expire_partitions(
    context: TableContext,
    committer: Committer,
    *,
    now: dt.datetime | None = None,
    dry_run: bool = False,
) -> PartitionExpireResult:
    """Drop the partitions ``partition.expiration-time`` expires as one ``OVERWRITE`` commit
    without new files (Paimon's ``dropPartitions``). No file is deleted: snapshot expiry and
    orphan cleanup remove them later, so readers of older snapshots keep working. A run always
    checks (``partition.expiration-check-interval`` paces Paimon's streaming sink, which
    checks at most that often; an explicit maintenance run is always due)."""
    options = context.schema.options
    expiration_ms = PARTITION_EXPIRATION_TIME.find(options)
    if expiration_ms is None:
        raise ConfigurationError(
            f"{context.root}: 'partition.expiration-time' is not set; set it to expire partitions"
        )
    keys = list(context.schema.partition_keys)
    if not keys:
        raise ConfigurationError(f"{context.root}: the table has no partition keys")
    extractor = PartitionTimeExtractor(
        PARTITION_TIMESTAMP_PATTERN.find(options), PARTITION_TIMESTAMP_FORMATTER.find(options)
    )
    strategy = PARTITION_EXPIRATION_STRATEGY.get(options)
    live = live_partitions(context.store, context.store.latest_snapshot())
    by_info = {id(info): partition for partition, info in live.items()}
    expired = select_expired(
        list(live.values()),
        keys=keys,
        expiration=dt.timedelta(milliseconds=expiration_ms),
        now=now if now is not None else dt.datetime.now(),
        strategy=strategy,
        extractor=extractor,
    )
    batches = plan_drops(
        expired,
        PARTITION_EXPIRATION_MAX_NUM.get(options),
        PARTITION_EXPIRATION_BATCH_SIZE.find(options),
    )
    specs = [dict(p.spec) for batch in batches for p in batch]
    for spec in specs:
        log.info("%s: expire partition %s", context.root, spec)
    if dry_run or not batches:
        return PartitionExpireResult(specs, None, dry_run)
    ids: list[int] = []
    for batch in batches:  # one OVERWRITE commit per batch, as Paimon's doBatchExpire
        dropped = frozenset(by_info[id(p)] for p in batch)
        snapshot = committer.commit([], BATCH_COMMIT_IDENTIFIER, overwrite=dropped.__contains__)
        if snapshot is not None:
            ids.append(snapshot.id)
    return PartitionExpireResult(specs, ids[-1] if ids else None, False, tuple(ids))
