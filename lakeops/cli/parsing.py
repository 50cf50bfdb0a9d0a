"""Parsing of the CLI's textual arguments: JSON options, ``k=v[,k2=v2]`` assignments and points
in time."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from typing import Any

from lakeops.cli.errors import CliError
from lakeops.store.time_travel import AsOf

__all__ = ["parse_assignments", "parse_json_object", "parse_partitions", "parse_point_in_time"]


def parse_point_in_time(option: str, text: str) -> AsOf:
    """A time option (``--as-of``, ``--older-than``) as the library takes it: an integer is
    epoch milliseconds; anything else must be an ISO 8601 date or date-time (local time unless
    it names its offset, as Paimon's ``scan.timestamp``)."""
    value = text.strip()
    if re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise CliError(
            f"{option} {text!r} is neither epoch milliseconds nor an ISO 8601 date-time "
            "(e.g. '2024-05-01 18:00', local time, or '2024-05-01T18:00:00+00:00')"
        ) from None


def parse_json_object(text: str | None, what: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object (None when ``text`` is None or blank).

    The error names ``what`` (e.g. ``--storage-options``) and the position, never the text
    itself, which may hold credentials."""
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            'expected an object such as {"key": "value"}'
        ) from None
    if not isinstance(value, dict):
        raise CliError(f'{what} must be a JSON object such as {{"key": "value"}}')
    return value


def parse_assignments(text: str, what: str) -> dict[str, str]:
    """``'k=v,k2=v2'`` → ``{"k": "v", "k2": "v2"}``.

    Values are kept as strings and may be empty (``k=``); a value cannot contain ``,``. Every
    item needs a ``=`` and a non-empty name, and names may not repeat."""
    result: dict[str, str] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CliError(f"{what} {text!r} is not k=v[,k2=v2]: {item!r} has no 'name='")
        if name in result:
            raise CliError(f"{what} {text!r} names {name!r} twice")
        result[name] = value
    return result


def parse_partitions(values: Sequence[str] | None) -> list[dict[str, str]] | None:
    """Repeated ``--partition k=v[,k2=v2]`` options → partition specs (None: every partition)."""
    if not values:
        return None
    return [parse_assignments(v, "--partition") for v in values]
