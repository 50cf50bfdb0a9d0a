"""Parsing Paimon's option value forms: durations (``30 min``), memory sizes (``256 mb``) and
comma lists. The one owner of these forms, below the option rows (:mod:`lakeops.options.option`)
and the CLI's own duration arguments."""

from __future__ import annotations

import re

from lakeops.errors import ConfigurationError

__all__ = ["option_list", "parse_duration", "parse_memory_size"]

_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}

_DURATION_UNITS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_duration(text: str, option: str) -> int:
    """Parse a Paimon duration (``30 min``, ``1 h``, ``500ms``, ``2d``) into milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = (m.group(2).lower() if m else "") or "ms"
    if not m or unit not in _DURATION_UNITS:
        raise ConfigurationError(
            f"option {option!r} has invalid duration {text!r}; use e.g. '30 min', '1 h' or '500 ms'"
        )
    return int(m.group(1)) * _DURATION_UNITS[unit]


def parse_memory_size(text: str, option: str) -> int:
    """Parse a Paimon memory size such as ``256 mb`` or ``64kb`` into bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ConfigurationError(
            f"option {option!r} has invalid memory size {text!r}; use e.g. '256 mb' or '64kb'"
        )
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def option_list(value: str | None) -> tuple[str, ...]:
    """A comma-separated option value as a tuple of trimmed, non-empty names."""
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())
