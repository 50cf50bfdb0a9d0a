"""The strings Java Paimon's system tables make of values: ``Arrays.toString`` of a partition
or key, ``TreeMap.toString`` of per-column statistics, ``Duration.toString`` of a tag's
retention, ``LocalDateTime.toString`` of a timestamp — each value as the ``toString`` of its
internal Java object (``Integer``, ``Double``, ``BinaryString``, ``Decimal``, ``Timestamp`` …).

Times: Paimon's system tables show a ``TIMESTAMP(3)`` holding the *local* wall-clock time of
the JVM's zone (``LocalDateTime.ofInstant(…, ZoneId.systemDefault())``); :func:`local_millis`
makes the same of an epoch millisecond with this process's zone (the ``TZ`` variable).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from lakeops.format.partition_names import java_float_string
from lakeops.format.types import DataType

__all__ = [
    "java_array",
    "java_duration",
    "java_local_datetime",
    "java_map",
    "java_value",
    "local_millis",
]

_EPOCH = dt.datetime(1970, 1, 1)


def local_millis(epoch_millis: int) -> int:
    """``epoch_millis`` as the local wall-clock time of this process's zone, in milliseconds
    since 1970-01-01T00:00 (what Paimon stores in a ``TIMESTAMP(3)`` made of a
    ``LocalDateTime``)."""
    instant = dt.datetime.fromtimestamp(epoch_millis / 1000, dt.UTC).astimezone()
    offset = instant.utcoffset() or dt.timedelta(0)
    return epoch_millis + int(offset.total_seconds() * 1000)


def java_local_datetime(millis: int, nanos: int = 0) -> str:
    """Java's ``LocalDateTime.toString`` of a wall time (milliseconds since the epoch plus
    nanoseconds within the millisecond): ``2024-01-02T03:04``, seconds and a fraction of 3, 6
    or 9 digits only when not zero."""
    seconds, milli = divmod(millis, 1000)
    wall = _EPOCH + dt.timedelta(seconds=seconds)
    text = f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d}T{wall.hour:02d}:{wall.minute:02d}"
    fraction = milli * 1_000_000 + nanos
    if wall.second or fraction:
        text += f":{wall.second:02d}"
    if fraction:
        if fraction % 1_000_000 == 0:
            text += f".{fraction // 1_000_000:03d}"
        elif fraction % 1000 == 0:
            text += f".{fraction // 1000:06d}"
        else:
            text += f".{fraction:09d}"
    return text


def java_duration(value: dt.timedelta) -> str:
    """Java's ``Duration.toString``: ``PT72H``, ``PT1H30M``, ``PT0.5S``, ``PT0S``."""
    micros = round(value.total_seconds() * 1_000_000)
    if micros == 0:
        return "PT0S"
    sign = "-" if micros < 0 else ""
    hours, rest = divmod(abs(micros), 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    text = "PT"
    if hours:
        text += f"{sign}{hours}H"
    if minutes:
        text += f"{sign}{minutes}M"
    if seconds or fraction:
        text += f"{sign}{seconds}"
        if fraction:
            text += "." + f"{fraction:06d}".rstrip("0")
        text += "S"
    return text


def java_value(value: Any, t: DataType) -> str:
    """The ``toString`` of one Paimon internal value of type ``t`` (``"null"`` for None).

    DATE is the epoch day and TIME the millisecond of the day (``Integer``s), TIMESTAMP a
    ``LocalDateTime``; a BINARY value's Java string (``[B@<hash>``) is an identity, not
    content, so it is shown as ``0x`` and its bytes in hexadecimal instead."""
    if value is None:
        return "null"
    r = t.root
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME"):
        return str(int(value))
    if r in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), r == "FLOAT")
    if r == "DECIMAL":
        return format(Decimal(value), "f")
    if t.is_string:
        return str(value)
    if t.is_binary:
        return "0x" + bytes(value).hex()
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nanos = value
        return java_local_datetime(int(millis), int(nanos))
    return str(value)


def java_array(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """``Arrays.toString`` of internal values: ``[2024-01-01, 3]`` (``[]`` when empty)."""
    return "[" + ", ".join(java_value(v, t) for v, t in zip(values, types, strict=True)) + "]"


def java_map(items: Iterable[tuple[str, str]] | Mapping[str, str]) -> str:
    """``TreeMap.toString`` of already rendered values: ``{a=1, b=null}``, keys sorted as Java
    sorts strings (by UTF-16 code unit)."""
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    pairs.sort(key=lambda kv: kv[0].encode("utf-16-be"))
    return "{" + ", ".join(f"{k}={v}" for k, v in pairs) + "}"
