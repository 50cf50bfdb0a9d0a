"""The schema file of ``lakeops create``: a JSON table definition with Paimon type strings.

::

    {
      "fields": [
        {"name": "dt", "type": "STRING"},
        {"name": "id", "type": "BIGINT NOT NULL"},
        {"name": "v", "type": "DECIMAL(10, 2)"}
      ],
      "primary_keys": ["dt", "id"],
      "partition_keys": ["dt"],
      "options": {"bucket": "4"},
      "comment": "orders by day"
    }

``type`` is a Paimon type string (``"TIMESTAMP(3)"``, ``"VARCHAR(20) NOT NULL"``…) or the JSON
object Paimon writes for ARRAY / MAP / ROW. Types go through Arrow, so CHAR / VARCHAR / BINARY
lengths are not kept (the column becomes STRING / BYTES). Option values may be JSON strings,
numbers or booleans; they are stored as strings, as in Paimon.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from lakeops.cli.errors import CliError
from lakeops.errors import LakeopsError
from lakeops.format.schema import PAIMON_TYPE
from lakeops.format.types import DataType

__all__ = ["SchemaSpec", "load_schema_file", "parse_schema"]

_TOP_KEYS = {"fields", "primary_keys", "partition_keys", "options", "comment"}
_FIELD_KEYS = {"name", "type"}


@dataclass(frozen=True)
class SchemaSpec:
    """The arguments of :meth:`lakeops.Catalog.create_table` a schema file describes."""

    schema: pa.Schema
    primary_keys: list[str]
    partition_keys: list[str]
    options: dict[str, str]
    comment: str | None


def _string_list(doc: dict[str, Any], key: str, where: str) -> list[str]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CliError(f"{where}: {key!r} must be a list of column names")
    return value


def _option_value(key: str, value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise CliError(f"{where}: option {key!r} must be a string, number or boolean")


def _field(item: Any, index: int, where: str) -> pa.Field:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "type" not in item:
        raise CliError(f'{where}: fields[{index}] must be {{"name": "...", "type": "..."}}')
    unknown = sorted(set(item) - _FIELD_KEYS)
    if unknown:
        raise CliError(f"{where}: fields[{index}] has unknown key(s) {unknown}")
    try:
        data_type = DataType.parse(item["type"])
    except LakeopsError as exc:
        raise CliError(f"{where}: field {item['name']!r}: {exc}") from exc
    # the declared type rides along: Arrow alone cannot tell TIME(0) from TIME(3), VARCHAR(10)
    # from STRING or a MULTISET from a MAP
    meta = None
    if not data_type.holds("ROW"):
        meta = {PAIMON_TYPE: json.dumps(data_type.with_nullable(True).to_json())}
    return pa.field(item["name"], data_type.to_arrow(), data_type.nullable, metadata=meta)


def parse_schema(doc: Any, where: str = "schema") -> SchemaSpec:
    """Validate a decoded schema document; errors name ``where`` and the offending entry."""
    if not isinstance(doc, dict):
        raise CliError(f"{where}: expected a JSON object with 'fields' and 'primary_keys'")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise CliError(f"{where}: unknown key(s) {unknown}; expected {sorted(_TOP_KEYS)}")
    fields = doc.get("fields")
    if not isinstance(fields, list) or not fields:
        raise CliError(f"{where}: 'fields' must be a non-empty list")
    options = doc.get("options", {})
    if not isinstance(options, dict):
        raise CliError(f"{where}: 'options' must be an object of option → value")
    comment = doc.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise CliError(f"{where}: 'comment' must be a string")
    return SchemaSpec(
        schema=pa.schema([_field(f, i, where) for i, f in enumerate(fields)]),
        primary_keys=_string_list(doc, "primary_keys", where),
        partition_keys=_string_list(doc, "partition_keys", where),
        options={str(k): _option_value(k, v, where) for k, v in options.items()},
        comment=comment,
    )


def load_schema_file(path: Path) -> SchemaSpec:
    """Read and validate a schema file (missing file: :class:`FileNotFoundError`)."""
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"schema file {path} is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None
    return parse_schema(doc, f"schema file {path}")
