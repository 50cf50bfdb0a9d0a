"""Paimon's partition value strings: the text between ``key=`` and the next ``/`` (before escaping).

Java Paimon (``InternalRowPartitionComputer.generatePartValues``) turns each partition field of
the partition's BinaryRow into a string and replaces NULL and whitespace-only strings (Java's
``Character.isWhitespace``) by ``partition.default-name``. How a value becomes a string depends
on ``partition.legacy-name`` (Paimon 1.0+, default ``true``; Paimon 0.9 has no such option and
always behaves as ``true``):

* **legacy** (``true``): Java ``toString`` of Paimon's *internal* value — DATE is its epoch day
  (``19725``), TIME its millisecond of the day (``3723004``), TIMESTAMP / TIMESTAMP_LTZ are
  ``LocalDateTime.toString`` of the UTC-based internal value (``2024-01-01T12:30``,
  ``…T12:30:05.123``), DECIMAL is ``BigDecimal.toPlainString``, FLOAT/DOUBLE are Java's
  ``Float``/``Double.toString`` (``1.5``, ``1.0E7``), BINARY/VARBINARY would be a JVM
  identity hash (``[B@1b6d3586``) that no engine can reproduce, so lakeops refuses them.
* **cast** (``false``): ``CAST(value AS STRING)`` (Paimon's ``CastExecutors``) — DATE
  ``2024-01-01``, TIME(p) ``01:02:03.004`` (see :func:`cast_time`), TIMESTAMP(p)
  ``2024-01-01 12:30:00.000`` (fraction padded to ``p`` digits,
  longer only if the value has more), TIMESTAMP_LTZ the same in the process's local time zone
  (Java uses the JVM's default zone), BINARY its UTF-8 text; other types as in legacy mode.

Values here are *internal* values as :func:`lakeops.format.binary_row.decode_internal` returns
them: DATE an ``int`` epoch day, TIMESTAMP/TIMESTAMP_LTZ ``(epoch millis, nano-of-milli)``.

Known difference: Java 8-18 ``Float``/``Double.toString`` sometimes print more digits than the
shortest round-trip form this module (and Java 19+) produce; FLOAT/DOUBLE partition keys are
rare and the difference only shows for a handful of values.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import Decimal
from typing import Any

import numpy as np

from lakeops.errors import DataValidationError, UnsupportedFeatureError
from lakeops.format.types import DataType

__all__ = [
    "cast_date",
    "cast_time",
    "cast_timestamp",
    "check_partition_type",
    "is_java_whitespace_only",
    "java_float_string",
    "legacy_timestamp",
    "value_name",
    "value_string",
]

_MILLIS_PER_DAY = 86_400_000

#: Java ``Character.isWhitespace``: Unicode space/line/paragraph separators except the
#: non-breaking ones (U+00A0, U+2007, U+202F), plus TAB, LF, VT, FF, CR and U+001C..U+001F.
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
)

_SUPPORTED_ROOTS = frozenset(
    [
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DECIMAL",
        "CHAR",
        "VARCHAR",
        "BINARY",
        "VARBINARY",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
    ]
)


def is_java_whitespace_only(text: str) -> bool:
    """Paimon's ``StringUtils.isNullOrWhitespaceOnly`` for a non-null string ('' included)."""
    return all(c in _JAVA_WHITESPACE for c in text)


def check_partition_type(name: str, t: DataType, legacy: bool) -> None:
    """Refuse a partition column whose directory name lakeops cannot produce exactly."""
    if t.root not in _SUPPORTED_ROOTS:
        raise UnsupportedFeatureError(
            f"partition column {name!r} has type {t}, which cannot name a partition directory "
            "(Paimon allows only primitive partition types)"
        )
    if legacy and t.is_binary:
        raise UnsupportedFeatureError(
            f"partition column {name!r} has type {t} while 'partition.legacy-name' is true: "
            "Paimon then names the directory by a JVM object hash ('[B@…') that changes between "
            "runs, so no engine can find the files again; set 'partition.legacy-name' = 'false' "
            "(directories named by the UTF-8 text) or partition by a string column"
        )


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of an epoch day (any integer)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def _java_year(year: int) -> str:
    """``LocalDate.toString``'s year: 4 digits (zero padded, '-' if negative), '+' above 9999."""
    if abs(year) < 1000:
        return f"-{-year:04d}" if year < 0 else f"{year:04d}"
    return f"+{year}" if year > 9999 else str(year)


def _int4_year(year: int) -> str:
    """Paimon ``DateTimeUtils.int4``: the last four digits of a non-negative year."""
    if year < 0:
        raise UnsupportedFeatureError(
            f"year {year} cannot be formatted as Paimon's CAST to STRING does; "
            "use 'partition.legacy-name' = 'true'"
        )
    return f"{year % 10_000:04d}"


def _split_millis(millis: int, nanos: int) -> tuple[int, int, int, int, int]:
    """(epoch day, hour, minute, second, nano-of-second) of a Paimon timestamp."""
    day, ms = divmod(millis, _MILLIS_PER_DAY)
    hour, ms = divmod(ms, 3_600_000)
    minute, ms = divmod(ms, 60_000)
    second, ms = divmod(ms, 1000)
    return day, hour, minute, second, ms * 1_000_000 + nanos


def legacy_timestamp(millis: int, nanos: int) -> str:
    """Paimon ``Timestamp.toString`` = Java ``LocalDateTime.toString`` of the internal value."""
    day, hour, minute, second, nano = _split_millis(millis, nanos)
    y, m, d = _civil_from_days(day)
    text = f"{_java_year(y)}-{m:02d}-{d:02d}T{hour:02d}:{minute:02d}"
    if second or nano:
        text += f":{second:02d}"
        if nano:
            if nano % 1_000_000 == 0:
                text += f".{nano // 1_000_000:03d}"
            elif nano % 1000 == 0:
                text += f".{nano // 1000:06d}"
            else:
                text += f".{nano:09d}"
    return text


def cast_date(days: int) -> str:
    """Paimon ``CAST(DATE AS STRING)`` (``DateTimeUtils.formatDate``): ``yyyy-MM-dd``."""
    y, m, d = _civil_from_days(days)
    return f"{_int4_year(y)}-{m:02d}-{d:02d}"


def cast_time(millis: int, precision: int) -> str:
    """Paimon ``CAST(TIME(p) AS STRING)`` (``DateTimeUtils.formatTimestampMillis``):
    ``HH:mm:ss``, then for ``p > 0`` a '.' and the millisecond's digits, stopping after the
    first digit whose remainder is zero (``01:02:03.0``, ``01:02:03.5``, ``01:02:03.004``) and
    after at most ``p`` digits."""
    time = millis % 86_400_000  # Java adds days until the value is not negative
    text = f"{time // 3_600_000:02d}:{time // 60_000 % 60:02d}:{time // 1000 % 60:02d}"
    if precision <= 0:
        return text
    ms = time % 1000
    digits = ""
    while precision > 0:
        digits += str(ms // 100)
        ms = ms % 100 * 10
        if ms == 0:
            break
        precision -= 1
    return f"{text}.{digits}"


def cast_timestamp(millis: int, nanos: int, precision: int) -> str:
    """Paimon ``CAST(TIMESTAMP(p) AS STRING)`` (``DateTimeUtils.formatTimestamp``):
    ``yyyy-MM-dd HH:mm:ss`` then the nine-digit fraction with trailing zeros cut while it is
    longer than ``p`` (no '.' when nothing is left)."""
    day, hour, minute, second, nano = _split_millis(millis, nanos)
    y, m, d = _civil_from_days(day)
    fraction = f"{nano:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{_int4_year(y)}-{m:02d}-{d:02d} {hour:02d}:{minute:02d}:{second:02d}"
    return f"{text}.{fraction}" if fraction else text


def _local_offset_millis(millis: int, zone: dt.tzinfo | None) -> int:
    seconds = millis // 1000
    if zone is None:
        return time.localtime(seconds).tm_gmtoff * 1000
    offset = dt.datetime.fromtimestamp(seconds, dt.UTC).astimezone(zone).utcoffset()
    return 0 if offset is None else int(offset.total_seconds() * 1000)


def java_float_string(value: float, single: bool) -> str:
    """Java ``Float.toString`` (``single``) / ``Double.toString``, shortest round-trip digits:
    plain between 1e-3 and 1e7 (``100.0``, ``0.001``), otherwise ``1.0E7`` / ``1.25E-4``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    number = np.float32(value) if single else np.float64(value)
    mantissa, exponent = np.format_float_scientific(number, unique=True, trim="-").split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exponent)
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def value_string(
    value: Any, t: DataType, legacy: bool, zone: dt.tzinfo | None = None
) -> str | None:
    """The string Paimon makes of one internal partition value (None for NULL), before the
    default-name substitution and escaping. ``zone`` overrides the local time zone used for
    TIMESTAMP_LTZ when ``legacy`` is false (tests)."""
    if value is None:
        return None
    r = t.root
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return str(int(value))
    if r in ("FLOAT", "DOUBLE"):
        return java_float_string(float(value), r == "FLOAT")
    if r == "DECIMAL":
        return format(Decimal(value), "f")
    if t.is_string:
        return str(value)
    if t.is_binary:
        if legacy:
            check_partition_type("?", t, legacy)
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise DataValidationError(
                f"a {t} partition value is not valid UTF-8 ({bytes(value)!r}); Paimon's "
                "directory name for it cannot be reproduced exactly"
            ) from None
    if r == "DATE":
        return str(int(value)) if legacy else cast_date(int(value))
    if r == "TIME":
        return str(int(value)) if legacy else cast_time(int(value), t.precision or 0)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nanos = value
        if legacy:
            return legacy_timestamp(millis, nanos)
        if r == "TIMESTAMP_LTZ":
            millis += _local_offset_millis(millis, zone)
        return cast_timestamp(millis, nanos, t.precision if t.precision is not None else 6)
    raise UnsupportedFeatureError(f"type {t} cannot be a partition column")


def value_name(
    value: Any, t: DataType, legacy: bool, default_name: str, zone: dt.tzinfo | None = None
) -> str:
    """The unescaped directory value: :func:`value_string`, with NULL and whitespace-only
    strings replaced by ``default_name`` (``partition.default-name``)."""
    text = value_string(value, t, legacy, zone)
    return default_name if text is None or is_java_whitespace_only(text) else text
