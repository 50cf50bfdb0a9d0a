"""User-facing partition specs (``{"pd": "2024-01-01"}``) matched against a table's partitions.

A spec names partition columns and values the way users write them — the same text whatever
``partition.legacy-name`` makes of the directory: ``2024-01-01`` for a DATE,
``2024-01-01 12:30:00`` (or ISO ``T``, fraction up to nanoseconds, an offset for
TIMESTAMP_LTZ) for a TIMESTAMP, ``true``, ``12.50``, or the matching Python objects
(``datetime.date``, ``Decimal``, …). The value written in a partition *directory* is accepted
too (a legacy DATE directory ``pd=19725``: ``"19725"``), and ``partition.default-name`` (or
``None``) means NULL. Each value is converted to Paimon's internal value of the column's type
(as Paimon's ``TypeUtils.castFromString``: a TIMESTAMP_LTZ without an offset is read in the
local time zone) and compared with the partition's BinaryRow, so matching is exact and typed.
A value that is not valid for its column is a :class:`ConfigurationError` — raised before
anything is read or written.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.types import DataType

__all__ = ["internal_value", "spec_predicate"]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH_DT = dt.datetime(1970, 1, 1)
_TIMESTAMP_RE = re.compile(
    r"^\s*(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?:[T ]+(?P<h>\d{1,2}):(?P<m>\d{1,2})"
    r"(?::(?P<s>\d{1,2})(?:\.(?P<f>\d{1,9}))?)?)?\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?\s*$"
)


def _bad(name: str, t: DataType, value: Any, example: str) -> ConfigurationError:
    return ConfigurationError(
        f"partition spec value {value!r} for column {name!r} is not a valid {t} value; "
        f"write it as e.g. {example}"
    )


def _timestamp_internal(value: dt.datetime, nanos_extra: int = 0) -> tuple[int, int]:
    delta = value - _EPOCH_DT
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, micro_rest = divmod(micros, 1000)
    return millis, micro_rest * 1000 + nanos_extra


def _parse_offset(text: str) -> dt.timezone:
    if text == "Z":
        return dt.UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return dt.timezone(sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _timestamp_value(name: str, t: DataType, value: Any, zone: dt.tzinfo | None) -> tuple[int, int]:
    ltz = t.root == "TIMESTAMP_LTZ"
    example = "'2024-01-01 12:30:00'" + (" or '2024-01-01T12:30:00+02:00'" if ltz else "")
    nanos_extra = 0
    if isinstance(value, dt.datetime):
        moment = value
        nanos_extra = int(getattr(value, "nanosecond", 0) or 0)
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        m = _TIMESTAMP_RE.match(value)
        if not m or (m.group("tz") and not ltz):
            raise _bad(name, t, value, example)
        try:
            fraction = (m.group("f") or "").ljust(9, "0")
            moment = dt.datetime(
                int(m.group("y")),
                int(m.group("mo")),
                int(m.group("d")),
                int(m.group("h") or 0),
                int(m.group("m") or 0),
                int(m.group("s") or 0),
                int(fraction[:6]),
            )
        except ValueError:
            raise _bad(name, t, value, example) from None
        nanos_extra = int(fraction[6:])
        if m.group("tz"):
            moment = moment.replace(tzinfo=_parse_offset(m.group("tz")))
    else:
        raise _bad(name, t, value, example)
    if ltz:
        if moment.tzinfo is None:
            moment = moment.astimezone() if zone is None else moment.replace(tzinfo=zone)
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    elif moment.tzinfo is not None:
        raise _bad(name, t, value, example + " (no time zone: the column is a TIMESTAMP)")
    return _timestamp_internal(moment, nanos_extra)


def _date_value(name: str, t: DataType, value: Any) -> int:
    example = "'2024-01-01'"
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0) or value.tzinfo is not None:
            raise _bad(name, t, value, example)
        value = value.date()
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):  # the epoch day of a legacy directory name
            return int(text)
        try:
            return (dt.date.fromisoformat(text) - _EPOCH_DATE).days
        except ValueError:
            raise _bad(name, t, value, example) from None
    raise _bad(name, t, value, example)


def _time_value(name: str, t: DataType, value: Any) -> int:
    """A TIME spec value as its millisecond of the day: a ``datetime.time`` (whole
    milliseconds), the int of a legacy directory name, or ``HH:MM[:SS[.fff]]``."""
    example = "'12:30:00'"
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+", text):  # the millisecond of a legacy directory name
            value = int(text)
        else:
            try:
                value = dt.time.fromisoformat(text)
            except ValueError:
                raise _bad(name, t, value, example) from None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 86_400_000:
        return value
    if isinstance(value, dt.time) and value.tzinfo is None and value.microsecond % 1000 == 0:
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + (
            value.microsecond // 1000
        )
    raise _bad(name, t, value, example)


def _boolean_value(name: str, t: DataType, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise _bad(name, t, value, "'true' or 'false'")
    return text == "true"


def _integer_value(name: str, t: DataType, value: Any) -> int:
    if isinstance(value, bool):
        raise _bad(name, t, value, "'42'")
    try:
        return int(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise _bad(name, t, value, "'42'") from None


def _float_value(name: str, t: DataType, value: Any) -> float:
    """A FLOAT is rounded to the nearest 32-bit float, as it is stored."""
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise _bad(name, t, value, "'1.5'") from None
    return float(np.float32(number)) if t.root == "FLOAT" else number


def _decimal_value(name: str, t: DataType, value: Any) -> Decimal:
    try:
        return Decimal(value.strip() if isinstance(value, str) else str(value))
    except InvalidOperation:
        raise _bad(name, t, value, "'12.50'") from None


def internal_value(
    name: str,
    t: DataType,
    value: Any,
    default_name: str,
    zone: dt.tzinfo | None = None,
) -> Any:
    """The internal value (as :func:`lakeops.format.binary_row.decode_internal` returns it) a
    user's spec value denotes for column ``name`` of type ``t``; None for NULL."""
    if value is None or (isinstance(value, str) and value == default_name):
        return None
    r = t.root
    if r == "BOOLEAN":
        return _boolean_value(name, t, value)
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return _integer_value(name, t, value)
    if r in ("FLOAT", "DOUBLE"):
        return _float_value(name, t, value)
    if r == "DECIMAL":
        return _decimal_value(name, t, value)
    if t.is_string:
        return value if isinstance(value, str) else str(value)
    if t.is_binary:
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if r == "DATE":
        return _date_value(name, t, value)
    if r == "TIME":
        return _time_value(name, t, value)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_value(name, t, value, zone)
    raise ConfigurationError(f"partition column {name!r} has type {t}, which cannot be matched")


def spec_predicate(
    names: Sequence[str],
    types: Sequence[DataType],
    specs: Sequence[Mapping[str, Any]] | None,
    default_name: str,
    zone: dt.tzinfo | None = None,
) -> Callable[[bytes], bool]:
    """A test of serialized partition BinaryRows: does the partition match one of ``specs``
    (every column a spec names equal; None matches every partition)? Spec values are converted
    (and checked) here, once."""
    if specs is None:
        return lambda _partition: True
    index = {n: i for i, n in enumerate(names)}
    wanted: list[list[tuple[int, Any]]] = []
    for spec in specs:
        unknown = sorted(k for k in spec if k not in index)
        if unknown:
            raise ConfigurationError(
                f"partition spec names {unknown}, which are not partition columns ({list(names)})"
            )
        wanted.append(
            [
                (index[k], internal_value(k, types[index[k]], v, default_name, zone))
                for k, v in spec.items()
            ]
        )
    cache: dict[bytes, bool] = {}

    def matches(partition: bytes) -> bool:
        hit = cache.get(partition)
        if hit is None:
            values = binary_row.deserialize_internal(partition, types)
            hit = any(all(values[i] == v for i, v in spec) for spec in wanted)
            cache[partition] = hit
        return hit

    return matches
