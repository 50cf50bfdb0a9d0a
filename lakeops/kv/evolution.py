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
  rather than guessed;
* the fields of a ROW (also inside an ARRAY's elements or a MAP's values) map by id the same
  way, at any depth: a nested field renamed, added, dropped or re-added, or widened, reads as
  its current self (Paimon 1.x's nested schema evolution).

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

__all__ = ["FileMapping", "SchemaEvolution", "can_read_as", "needs_cast", "read_cast"]

#: schema id -> schema (``TableStore.schema``: schema files are immutable)
SchemaLookup = Callable[[int], TableSchema]

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def can_read_as(src: DataType, dst: DataType) -> bool:
    """Whether values stored as ``src`` convert to ``dst`` exactly as Paimon's cast does: the
    widenings lakeops' own ALTER allows (:func:`~lakeops.format.schema_change.is_implicit_cast`,
    nullability aside), plus integers to VARCHAR (decimal digits), which other engines' ALTERs
    make. A ROW's fields (an ARRAY's elements, a MAP's values) follow the same rule field by
    field id; a MAP's keys and a MULTISET's elements must not change."""
    if src.root == dst.root == "ROW":
        old = {i: t for i, _, t in src.fields}
        return all(can_read_as(old[i], t) for i, _, t in dst.fields if i in old)
    if src.root == dst.root == "ARRAY" and src.element and dst.element:
        return can_read_as(src.element, dst.element)
    if src.root == dst.root == "MAP" and src.key and dst.key and src.value and dst.value:
        same_key = not needs_cast(src.key.with_nullable(True), dst.key.with_nullable(True))
        return same_key and can_read_as(src.value, dst.value)
    if is_implicit_cast(src.with_nullable(True), dst.with_nullable(True)):
        return _nested_ids(src) == _nested_ids(dst)
    return dst.root == "VARCHAR" and src.root in _INTEGERS


def needs_cast(src: DataType, dst: DataType) -> bool:
    """Whether values stored as ``src`` must be converted to read as ``dst``: their Arrow types
    differ, or the ids of nested ROW fields do (one dropped and re-added under its old name)."""
    return src.to_arrow() != dst.to_arrow() or _nested_ids(src) != _nested_ids(dst)


def _nested_ids(t: DataType) -> list[int]:
    ids: list[int] = []
    for i, _, inner in t.fields:
        ids.append(i)
        ids.extend(_nested_ids(inner))
    for contained in (t.element, t.key, t.value):
        if contained is not None:
            ids.extend(_nested_ids(contained))
    return ids


def read_cast(values: pa.ChunkedArray | pa.Array, src: DataType, dst: DataType) -> Any:
    """``values`` of type ``src`` converted to ``dst`` (only for :func:`can_read_as` pairs)."""
    target = dst.to_arrow()
    if not needs_cast(src, dst):
        return values
    if src.root in ("ROW", "ARRAY", "MAP"):
        if isinstance(values, pa.ChunkedArray):
            return pa.chunked_array([_evolve(c, src, dst) for c in values.chunks], type=target)
        return _evolve(values, src, dst)
    if src.root in _INTEGERS and dst.root in ("FLOAT", "DOUBLE"):
        return pc.cast(values, target, safe=False)  # round to nearest, as Java's (float) cast
    return pc.cast(values, target)


def _evolve(values: pa.Array, src: DataType, dst: DataType) -> pa.Array:
    """One array of nested type ``src`` as ``dst``: a ROW's fields taken by field id (nulls for
    an id ``src`` lacks), an ARRAY's elements and a MAP's values converted, nulls kept."""
    if not needs_cast(src, dst):
        return values
    target = dst.to_arrow()
    mask = values.is_null() if values.null_count else None
    if dst.root == "ROW":
        at = {i: k for k, (i, _, _) in enumerate(src.fields)}
        children = []
        for i, _, t in dst.fields:
            k = at.get(i)
            if k is None:
                children.append(pa.nulls(len(values), t.to_arrow()))
            else:
                children.append(_evolve(values.field(k), src.fields[k][2], t))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if dst.root not in ("ARRAY", "MAP"):
        return read_cast(values, src, dst)
    # the offsets rebased to 0 over the slice of the children they cover
    first, last = values.offsets[0].as_py(), values.offsets[-1].as_py()
    offsets = pc.subtract(values.offsets, pa.scalar(first, values.offsets.type))
    if dst.root == "ARRAY":
        assert src.element is not None and dst.element is not None
        elements = _evolve(values.values.slice(first, last - first), src.element, dst.element)
        return pa.ListArray.from_arrays(offsets, elements, type=target, mask=mask)
    assert src.value is not None and dst.value is not None
    keys = values.keys.slice(first, last - first)
    items = _evolve(values.items.slice(first, last - first), src.value, dst.value)
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)


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
            if old.name != f.name or needs_cast(old.type, f.type):
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
