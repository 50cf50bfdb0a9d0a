"""Parsing of the CLI's textual arguments: JSON options and ``k=v[,k2=v2]`` assignments."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lakeops.cli.errors import CliError

__all__ = ["parse_assignments", "parse_json_object", "parse_partitions"]


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
