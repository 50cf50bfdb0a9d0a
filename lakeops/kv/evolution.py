"""Schema evolution on read: every data file seen through the table's current schema.

A data file records the id of the schema it was written with (``DataFileMeta.schema_id``); its
Parquet columns carry the field *names* of that schema (``_KEY_<name>`` for keys). Paimon maps a
file to the current schema by **field id**, never by name, and so does lakeops, here and only
here:

* a field whose id is in both schemas is read from the file's column of that id, whatever its
  name is now (a renamed field takes its new name);
* a field of the current schema whose id the file's schema lacks (added later, or dropped and
  re-added under the same name — a new id) reads as NULL;
* a file column whose id the current schema lacks (dropped) is not read;
* a field whose type changed is converted from the file's type by the casts below, which are
  exact; any other conversion is refused with :class:`~lakeops.errors.UnsupportedFeatureError`
  rather than guessed.

Key bounds (``minKey``/``maxKey``, key statistics) are BinaryRows encoded with the file's key
types, so they are decoded through the file's schema too.

When a file was written with the current schema, or with one whose fields are the same, the
mapping is the identity and reading costs nothing extra.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import CorruptTableError, UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.floats import order_value
from lakeops.format.schema import TableSchema
from lakeops.format.schema_change import is_implicit_cast
from lakeops.format.types import DataType

__all__ = ["FileMapping", "SchemaEvolution", "can_read_as", "read_cast"]

#: schema id -> schema (``TableStore.schema``: schema files are immutable)
SchemaLookup = Callable[[int], TableSchema]

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def can_read_as(src: DataType, dst: DataType) -> bool:
    """Whether values stored as ``src`` convert to ``dst`` exactly as Paimon's cast does: the
    widenings lakeops' own ALTER allows (:func:`~lakeops.format.schema_change.is_implicit_cast`,
    nullability aside), plus integers to VARCHAR (decimal digits), which other engines' ALTERs
    make. Nested types must not change."""
    if is_implicit_cast(src.with_nullable(True), dst.with_nullable(True)):
        return True
    return dst.root == "VARCHAR" and src.root in _INTEGERS


def read_cast(values: pa.ChunkedArray | pa.Array, src: DataType, dst: DataType) -> Any:
    """``values`` of type ``src`` converted to ``dst`` (only for :func:`can_read_as` pairs)."""
    target = dst.to_arrow()
    if values.type == target:
        return values
    if src.root in _INTEGERS and dst.root in ("FLOAT", "DOUBLE"):
        return pc.cast(values, target, safe=False)  # round to nearest, as Java's (float) cast
    return pc.cast(values, target)


@dataclass(frozen=True)
class FileMapping:
    """How the columns of files written with one schema map onto the current schema.

    ``sources`` maps a current field name to the name and type it had in the file's schema, or
    to None when the file's schema lacks that field id (it reads as NULL).
    """

    file_schema: TableSchema
    sources: dict[str, tuple[str, DataType] | None]
    identity: bool

    def source_name(self, name: str) -> str | None:
        """The column name that holds current field ``name`` in such a file (None: absent)."""
        src = self.sources.get(name)
        return None if src is None else src[0]


class SchemaEvolution:
    """Maps the data files of one table, written under any of its schemas, to ``current``."""

    def __init__(self, current: TableSchema, schemas: SchemaLookup) -> None:
        self.current = current
        self._schemas = schemas
        self._mappings: dict[int, FileMapping] = {}
        self.key_names = current.trimmed_primary_keys
        self.key_types = current.types_of(self.key_names)

    def mapping(self, schema_id: int) -> FileMapping:
        """The mapping for files written with schema ``schema_id`` (cached)."""
        found = self._mappings.get(schema_id)
        if found is None:
            found = self._build(schema_id)
            self._mappings[schema_id] = found
        return found

    def _build(self, schema_id: int) -> FileMapping:
        current = schema_id == self.current.id
        file_schema = self.current if current else self._schemas(schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        sources: dict[str, tuple[str, DataType] | None] = {}
        identity = True
        for f in self.current.fields:
            old = by_id.get(f.id)
            if old is None:
                sources[f.name] = None
                identity = False
                continue
            sources[f.name] = (old.name, old.type)
            if old.name != f.name or old.type.to_arrow() != f.type.to_arrow():
                identity = False
                if not can_read_as(old.type, f.type):
                    raise UnsupportedFeatureError(
                        f"column {f.name!r} was {old.type} in schema {schema_id} and is "
                        f"{f.type} now: lakeops reads only exact (widening) type changes, and "
                        "this conversion is not one; read the table with Paimon, or rewrite "
                        "its data under the current schema with Paimon first"
                    )
        if file_schema.trimmed_primary_keys != [
            sources[k][0] if sources[k] else k  # type: ignore[index]
            for k in self.key_names
        ]:
            raise CorruptTableError(
                f"schema {schema_id} has primary key {file_schema.trimmed_primary_keys}, "
                f"the current schema {self.key_names}: primary keys cannot change"
            )
        if len(by_id) != len(self.current.fields):
            identity = False
        return FileMapping(file_schema, sources, identity)

    def file_key_types(self, f: DataFileMeta) -> list[DataType]:
        """The key types ``f``'s key bounds and key columns are encoded with."""
        if f.schema_id == self.current.id:
            return self.key_types
        m = self.mapping(f.schema_id)
        return [m.sources[k][1] for k in self.key_names]  # type: ignore[index]

    def key_range(self, f: DataFileMeta) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(min key, max key) of ``f`` as Python tuples of the trimmed primary key, made for
        comparing: float fields as :func:`~lakeops.format.floats.order_value` maps them (Java's
        total order, NaN greatest)."""
        types = self.file_key_types(f)
        lo = binary_row.deserialize(f.min_key, types)
        hi = binary_row.deserialize(f.max_key, types)
        return tuple(map(order_value, lo)), tuple(map(order_value, hi))

    def key_stats_range(self, f: DataFileMeta) -> dict[str, tuple[Any, Any]]:
        """Per key field (min, max) from ``f``'s key statistics ({} if they are unusable)."""
        types = self.file_key_types(f)
        try:
            lo = binary_row.deserialize(f.key_stats.min_values, types)
            hi = binary_row.deserialize(f.key_stats.max_values, types)
        except CorruptTableError:
            return {}
        return {n: (a, b) for n, a, b in zip(self.key_names, lo, hi, strict=True)}
