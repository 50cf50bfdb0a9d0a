"""Table schema files (``schema/schema-N``): fields with ids, keys, partitioning, options."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lakeops.errors import ConfigurationError, CorruptTableError
from lakeops.format.types import DataType

__all__ = ["PAIMON_TYPE", "DataField", "TableSchema"]

#: Arrow field metadata key naming the Paimon type a field is to get at creation, as its schema
#: JSON (``"TIME(0)"``, ``{"type": "MULTISET", …}``): for types whose Arrow type several Paimon
#: types share (TIME(p), CHAR/VARCHAR(n), MULTISET). It must map to the field's Arrow type.
PAIMON_TYPE = b"paimon.type"


def _field_type(f: pa.Field, next_id: list[int]) -> DataType:
    """The Paimon type of a new table's field: its ``PAIMON_TYPE`` metadata when given (no ROW
    inside: ROW field ids are handed out here), else :meth:`DataType.from_arrow`."""
    text = (f.metadata or {}).get(PAIMON_TYPE)
    if text is None:
        return DataType.from_arrow(f.type, f.nullable, next_id)
    try:
        declared = DataType.parse(json.loads(text)).with_nullable(f.nullable)
    except json.JSONDecodeError:
        raise ConfigurationError(
            f"column {f.name!r}: metadata {PAIMON_TYPE.decode()!r} is not JSON ({text!r})"
        ) from None
    if declared.holds("ROW") or declared.to_arrow() != f.type:
        raise ConfigurationError(
            f"column {f.name!r} declares Paimon type {declared}, which is not one of the types "
            f"Arrow {f.type} can hold (or holds a ROW); drop the {PAIMON_TYPE.decode()!r} "
            "metadata or fix the type"
        )
    return declared


@dataclass(frozen=True)
class DataField:
    """One column of a table: stable id, name and type."""

    id: int
    name: str
    type: DataType
    description: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DataField:
        return cls(int(d["id"]), str(d["name"]), DataType.parse(d["type"]), d.get("description"))


@dataclass(frozen=True)
class TableSchema:
    """The content of one ``schema-N`` file (Paimon schema version 3).

    ``primary_keys`` may include partition fields; the *trimmed* primary key (what data files
    store as ``_KEY_*`` columns and what min/max keys encode) leaves them out.
    """

    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    highest_field_id: int = -1

    # ----------------------------------------------------------------- creation
    @classmethod
    def from_arrow(
        cls,
        schema: pa.Schema,
        primary_keys: list[str] | tuple[str, ...],
        partition_keys: list[str] | tuple[str, ...] = (),
        options: dict[str, str] | None = None,
        comment: str | None = None,
    ) -> TableSchema:
        """Build schema 0 from an Arrow schema; primary-key fields become NOT NULL. No primary
        key makes an append table (see :mod:`lakeops.table.append`)."""
        names = list(schema.names)
        if len(set(names)) != len(names):
            raise ConfigurationError(f"duplicate column names in schema: {names}")
        for label, cols in (("primary key", primary_keys), ("partition key", partition_keys)):
            missing = [c for c in cols if c not in names]
            if missing:
                raise ConfigurationError(
                    f"{label} column(s) {missing} are not in the schema (columns: {names})"
                )
            if len(set(cols)) != len(cols):
                raise ConfigurationError(f"{label} columns repeat a name: {list(cols)}")
        trimmed = [k for k in primary_keys if k not in partition_keys]
        if primary_keys and not trimmed:
            raise ConfigurationError(
                "the primary key must contain at least one column that is not a partition key "
                f"(primary keys {list(primary_keys)}, partition keys {list(partition_keys)})"
            )
        for name in list(primary_keys) + list(partition_keys):
            key_type = _field_type(schema.field(name), [0])
            if not key_type.keyable:
                raise ConfigurationError(
                    f"key column {name!r} has type {key_type.root} "
                    f"({schema.field(name).type}); Paimon accepts only primitive types as "
                    "primary-key and partition columns"
                )
        fields = []
        next_id = [len(schema)]  # nested ROW fields get ids after the top-level ones
        for i, f in enumerate(schema):
            t = _field_type(f, next_id)
            if f.name in primary_keys:
                t = t.with_nullable(False)
            fields.append(DataField(i, f.name, t))
        return cls(
            id=0,
            fields=tuple(fields),
            partition_keys=tuple(partition_keys),
            primary_keys=tuple(primary_keys),
            options=dict(options or {}),
            comment=comment,
            time_millis=int(time.time() * 1000),
            highest_field_id=next_id[0] - 1,
        )

    # ------------------------------------------------------------- derivations
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        """The field called ``name`` (ConfigurationError if absent)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise ConfigurationError(f"no column {name!r} in table (columns: {self.field_names})")

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary-key fields that are not partition fields: the LSM key."""
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def cross_partition_update(self) -> bool:
        """Whether a key can move between partitions: the table is partitioned and its primary
        key does not contain every partition field."""
        return bool(self.primary_keys and self.partition_keys) and not set(
            self.partition_keys
        ) <= set(self.primary_keys)

    @property
    def bucket_keys(self) -> list[str]:
        """``bucket-key`` if set, else the trimmed primary key."""
        opt = self.options.get("bucket-key")
        if opt:
            return [c.strip() for c in opt.split(",") if c.strip()]
        return self.trimmed_primary_keys

    def types_of(self, names: list[str] | tuple[str, ...]) -> list[DataType]:
        return [self.field(n).type for n in names]

    def arrow_schema(self) -> pa.Schema:
        """The logical Arrow schema of the table (what reads return)."""
        return pa.schema(
            [pa.field(f.name, f.type.to_arrow(), f.type.nullable) for f in self.fields]
        )

    # ---------------------------------------------------------------- json i/o
    def to_json(self) -> str:
        doc = {
            "version": 3,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }
        return json.dumps(doc, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> TableSchema:
        try:
            d = json.loads(text)
            return cls(
                id=int(d["id"]),
                fields=tuple(DataField.from_json(f) for f in d["fields"]),
                partition_keys=tuple(d.get("partitionKeys") or ()),
                primary_keys=tuple(d.get("primaryKeys") or ()),
                options={str(k): str(v) for k, v in (d.get("options") or {}).items()},
                comment=d.get("comment"),
                time_millis=int(d.get("timeMillis") or 0),
                highest_field_id=int(d.get("highestFieldId", len(d["fields"]) - 1)),
            )
        except RecursionError:
            raise CorruptTableError("malformed schema file: nested too deeply") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, ConfigurationError):
                raise
            raise CorruptTableError(f"malformed schema file: {exc}") from exc
