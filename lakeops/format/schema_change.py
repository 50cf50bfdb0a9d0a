"""Paimon's schema changes and the next ``schema-N`` they produce (pure: no I/O).

:func:`apply_changes` computes the schema that Paimon 0.9's ``SchemaManager.commitChanges`` writes
for a list of changes, applied in order to a copy of the latest schema:

* the result has ``id + 1``, a fresh ``timeMillis``, the same keys and partitioning;
* ``AddColumn`` takes ``++highestFieldId`` as its id; the ROW fields nested in its type then get
  the following ids, in Paimon's ``ReassignFieldId`` order (a field's nested fields before the
  field itself); ``highestFieldId`` ends at the last id handed out and never goes down (dropping
  a column keeps it, so a re-added column is a new field);
* renames, type, nullability and comment updates keep the field id; positions move fields the
  way ``SchemaManager.applyMove`` does.

It refuses, before returning anything, what Paimon refuses: renaming or dropping a primary-key or
partition column, changing a partition column's type, making a primary-key column nullable,
adding a NOT NULL column, a name that already exists, dropping every field, moving a column onto
itself, options that may not change once the table has snapshots (``@Immutable`` in Paimon 0.9's
``CoreOptions``, ``bucket`` to or from -1, resetting ``bucket``), and ``fields.*`` /
``sequence.field`` / ``bucket-key`` options naming columns the new schema lacks. lakeops refuses
more where it could not serve the result exactly: type changes other than the widening implicit
casts of :func:`is_implicit_cast`, type changes of primary-key and bucket-key columns, and making
a column NOT NULL once data may exist. A new fixed ``bucket`` number is allowed on a table with
snapshots, as in Paimon: its partitions are then rescaled (overwritten) one by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.schema import DataField, TableSchema
from lakeops.format.types import DataType

__all__ = [
    "IMMUTABLE_OPTIONS",
    "AddColumn",
    "ColumnPath",
    "DropColumn",
    "Position",
    "RemoveOption",
    "RenameColumn",
    "SchemaChange",
    "SetOption",
    "UpdateColumnComment",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
    "apply_changes",
    "column_path",
    "is_implicit_cast",
]

#: Options marked ``@Immutable`` in Paimon 0.9's CoreOptions: they cannot change (or be reset)
#: once the table has a snapshot. The ``ignore-delete`` aliases are added by lakeops: setting
#: one of them changes the same option.
IMMUTABLE_OPTIONS: frozenset[str] = frozenset(
    {
        "bucket-key",
        "merge-engine",
        "ignore-delete",
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
        "sequence.field",
        "partial-update.remove-record-on-delete",
        "rowkind.field",
        "primary-key",
        "partition",
        "force-lookup",
        "path",
    }
)


# ------------------------------------------------------------------ positions
@dataclass(frozen=True)
class Position:
    """Where a column goes: ``Position.FIRST``, ``Position.LAST``, ``Position.after("c")`` or
    ``Position.before("c")`` (Paimon's ``SchemaChange.Move``)."""

    kind: str  # "first" | "last" | "after" | "before"
    reference: str | None = None

    FIRST: ClassVar[Position]
    LAST: ClassVar[Position]

    @classmethod
    def after(cls, column: str) -> Position:
        return cls("after", column)

    @classmethod
    def before(cls, column: str) -> Position:
        return cls("before", column)

    def __post_init__(self) -> None:
        if self.kind not in ("first", "last", "after", "before"):
            raise ConfigurationError(
                f"unknown column position {self.kind!r}: use first, last, after or before"
            )
        if (self.kind in ("after", "before")) != (self.reference is not None):
            raise ConfigurationError(
                f"column position {self.kind!r} needs a reference column exactly when it is "
                "'after' or 'before'"
            )


Position.FIRST = Position("first")
Position.LAST = Position("last")


# -------------------------------------------------------------------- changes
#: what a column change names: a top-level column (``"v"``), or a path to a field nested in
#: ROW columns (``("address", "zip")``), as Paimon's ``fieldNames``; a path goes through an
#: ARRAY's elements as ``"element"`` and a MAP's values as ``"value"``
#: (``("items", "element", "sku")``)
ColumnPath = str | tuple[str, ...]


def column_path(name: ColumnPath) -> tuple[str, ...]:
    """``name`` as a path of one or more names (checked: none empty)."""
    path = (name,) if isinstance(name, str) else tuple(name)
    if not path or not all(isinstance(n, str) and n for n in path):
        raise ConfigurationError(
            f"a column is named by a non-empty name or a path of names, got {name!r}"
        )
    return path


@dataclass(frozen=True)
class SetOption:
    """Set table option ``key`` to ``value``."""

    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    """Remove table option ``key`` (back to its default)."""

    key: str


@dataclass(frozen=True)
class UpdateComment:
    """Set (or clear, with None) the table comment."""

    comment: str | None


@dataclass(frozen=True)
class AddColumn:
    """Add a nullable column (``position``: first, after a column, or last), or, with a path,
    a field of a ROW column (placed among its fields the same way)."""

    name: ColumnPath
    type: DataType
    comment: str | None = None
    position: Position = Position.LAST


@dataclass(frozen=True)
class RenameColumn:
    """Rename a column, or with a path a field of a ROW column, to ``new_name``; it keeps its
    field id."""

    name: ColumnPath
    new_name: str


@dataclass(frozen=True)
class DropColumn:
    """Drop a column, or with a path a field of a ROW column."""

    name: ColumnPath


@dataclass(frozen=True)
class UpdateColumnType:
    """Change a column's (or, with a path, a nested field's) type; ``keep_nullability`` keeps
    its nullability instead of the new type's."""

    name: ColumnPath
    type: DataType
    keep_nullability: bool = False


@dataclass(frozen=True)
class UpdateColumnNullability:
    """Make a column (or, with a path, a nested field) nullable or NOT NULL."""

    name: ColumnPath
    nullable: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    """Set (or clear, with None) a column's or a nested field's comment (its ``description``)."""

    name: ColumnPath
    comment: str | None


@dataclass(frozen=True)
class UpdateColumnPosition:
    """Move a column (first, last, after or before another column)."""

    name: str
    position: Position


SchemaChange = (
    SetOption
    | RemoveOption
    | UpdateComment
    | AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
    | UpdateColumnPosition
)


# ---------------------------------------------------------------------- casts
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_NUMERIC = (*_INTEGERS, "FLOAT", "DOUBLE", "DECIMAL")


def _same(a: DataType, b: DataType) -> bool:
    """Equal ignoring the top-level nullability and nested ROW field ids."""
    return _canonical(a.with_nullable(True)) == _canonical(b.with_nullable(True))


def _canonical(t: DataType) -> DataType:
    return replace(
        t,
        element=_canonical(t.element) if t.element else None,
        key=_canonical(t.key) if t.key else None,
        value=_canonical(t.value) if t.value else None,
        fields=tuple((0, n, _canonical(f)) for _, n, f in t.fields),
    )


def is_implicit_cast(src: DataType, dst: DataType) -> bool:
    """Whether values of ``src`` read as ``dst`` without loss, as a Paimon implicit cast.

    Paimon 0.9's ``DataTypeCasts`` implicit rules (which look at type roots only), restricted by
    lakeops to widenings: the same type (a NOT NULL source may become nullable, never the
    reverse); TINYINT → SMALLINT → INT → BIGINT; integers → FLOAT, integers and FLOAT → DOUBLE
    (rounded to the nearest float, as Java's casts do); integers → DECIMAL with enough integer
    digits;
    DECIMAL → DECIMAL with at least as many integer and fractional digits; CHAR/VARCHAR(n) →
    VARCHAR(m ≥ n); BINARY/VARBINARY(n) → VARBINARY(m ≥ n); TIMESTAMP(p) → TIMESTAMP(q ≥ p) and
    the same for TIMESTAMP_LTZ and TIME (whose values, milliseconds, do not change). Nested
    types only change nullability at the top.
    """
    if src.nullable and not dst.nullable:
        return False
    if _same(src, dst):
        return True
    s, d = src.root, dst.root
    if s in _INTEGERS and d in _INTEGERS:
        return _INTEGERS.index(d) > _INTEGERS.index(s)
    # DECIMAL → FLOAT/DOUBLE is left out: Java rounds BigDecimal correctly, and Arrow's decimal
    # to floating-point conversion is not guaranteed to give the same float for every value
    if d == "FLOAT":
        return s in _INTEGERS
    if d == "DOUBLE":
        return s in (*_INTEGERS, "FLOAT")
    if d == "DECIMAL":
        p, sc = dst.precision or 10, dst.scale or 0
        if s in _INTEGERS:
            return p - sc >= _DIGITS[s]
        if s == "DECIMAL":
            ps, ss = src.precision or 10, src.scale or 0
            return sc >= ss and p - sc >= ps - ss
        return False
    if d == "VARCHAR" and s in ("CHAR", "VARCHAR"):
        return (dst.length or 0) >= (src.length or 0)
    if d == "VARBINARY" and s in ("BINARY", "VARBINARY"):
        return (dst.length or 0) >= (src.length or 0)
    if d == s and d in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return (dst.precision or 0) >= (src.precision or 0)
    return False


# ---------------------------------------------------------------- field ids
def _reassign(t: DataType, counter: list[int]) -> DataType:
    """Fresh ids for the ROW fields inside ``t`` (Paimon's ReassignFieldId: a field's own
    nested fields first, then the field)."""
    if t.root == "ARRAY" and t.element is not None:
        return replace(t, element=_reassign(t.element, counter))
    if t.root == "MAP" and t.key is not None and t.value is not None:
        key = _reassign(t.key, counter)
        return replace(t, key=key, value=_reassign(t.value, counter))
    if t.root == "MULTISET" and t.element is not None:
        return DataType.multiset(_reassign(t.element, counter), t.nullable)
    if t.root == "ROW":
        fields = []
        for _, name, ftype in t.fields:
            inner = _reassign(ftype, counter)
            counter[0] += 1
            fields.append((counter[0], name, inner))
        return replace(t, fields=tuple(fields))
    return t


# ------------------------------------------------------------------- applying
def apply_changes(
    schema: TableSchema, changes: Iterable[SchemaChange], has_snapshots: bool
) -> TableSchema:
    """The next schema after ``changes`` (see the module docstring); raises
    :class:`~lakeops.errors.ConfigurationError` (or its subclass
    :class:`~lakeops.errors.UnsupportedFeatureError`) for any change Paimon or lakeops refuses.
    ``has_snapshots``: whether the table has a snapshot (option changes are then checked)."""
    options = dict(schema.options)
    fields = list(schema.fields)
    highest = [schema.highest_field_id]
    comment = schema.comment
    for change in changes:
        if isinstance(change, SetOption | RemoveOption):
            _apply_option_change(options, change, has_snapshots)
        elif isinstance(change, UpdateComment):
            comment = change.comment
        else:
            fields = _apply_column_change(schema, options, fields, change, highest, has_snapshots)
    result = replace(
        schema,
        id=schema.id + 1,
        fields=tuple(fields),
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
        highest_field_id=highest[0],
    )
    _validate(result)
    return result


def _apply_option_change(
    options: dict[str, str], change: SetOption | RemoveOption, has_snapshots: bool
) -> None:
    """Set or remove one option; with snapshots, immutable options and a reset bucket refuse;
    switching deletion vectors needs ``deletion-vectors.modifiable``."""
    if change.key == _DV_ENABLED:
        new = change.value if isinstance(change, SetOption) else "false"
        _check_deletion_vectors_switch(options, options.get(_DV_ENABLED), new)
    if isinstance(change, SetOption):
        if has_snapshots:
            _check_set_option(change.key, options.get(change.key), change.value)
        options[change.key] = change.value
        return
    if has_snapshots:
        _check_immutable(change.key)
        if change.key == "bucket":
            raise UnsupportedFeatureError(
                "Cannot reset bucket on a table with snapshots; set it explicitly "
                "(to the current number of buckets)"
            )
    options.pop(change.key, None)


def _apply_column_change(
    schema: TableSchema,
    options: dict[str, str],
    fields: list[DataField],
    change: SchemaChange,
    highest: list[int],
    has_snapshots: bool,
) -> list[DataField]:
    """The columns after one column change (``highest``: the highest field id, updated)."""
    if isinstance(change, UpdateColumnPosition):
        return _move(fields, change.name, change.position)
    if not isinstance(change, _NamedChange):
        raise UnsupportedFeatureError(f"Unsupported change: {change!r}")
    path = column_path(change.name)
    if len(path) > 1:
        return _apply_nested_change(fields, change, path, highest, has_snapshots)
    name = path[0]
    if isinstance(change, AddColumn):
        return _add_column(fields, replace(change, name=name), highest)
    if isinstance(change, RenameColumn):
        return _rename_column(schema, fields, name, change.new_name)
    if isinstance(change, DropColumn):
        _not_a_key(schema, name, "drop")
        i = _index(fields, name)
        fields = fields[:i] + fields[i + 1 :]
        if not fields:
            raise ConfigurationError("Cannot drop all fields in table")
        return fields
    i = _index(fields, name)
    if isinstance(change, UpdateColumnType):
        fields[i] = _update_type(schema, options, fields[i], change)
    elif isinstance(change, UpdateColumnNullability):
        fields[i] = _update_nullability(schema, fields[i], change.nullable, has_snapshots)
    else:
        fields[i] = replace(fields[i], description=change.comment)
    return fields


#: the column changes that name a column or a nested field's path
_NamedChange = (
    AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | UpdateColumnComment
)


def _apply_nested_change(
    fields: list[DataField],
    change: _NamedChange,
    path: tuple[str, ...],
    highest: list[int],
    has_snapshots: bool,
) -> list[DataField]:
    """The columns after a change of a field nested in a ROW column (Paimon's
    ``NestedColumnModifier``): the change applies among that ROW's fields as it would among
    the columns; keys are never nested, so only the key checks are left out."""
    dotted = ".".join(path)

    def apply(siblings: list[DataField], name: str) -> list[DataField]:
        if isinstance(change, AddColumn):
            return _add_column(siblings, replace(change, name=name), highest, dotted)
        i = _index(siblings, name, dotted)
        if isinstance(change, RenameColumn):
            if any(f.name == change.new_name for f in siblings):
                raise ConfigurationError(
                    f"cannot rename field {dotted!r} to {change.new_name!r}: a field with that "
                    "name already exists beside it"
                )
            siblings[i] = replace(siblings[i], name=change.new_name)
        elif isinstance(change, DropColumn):
            del siblings[i]
            if not siblings:
                raise ConfigurationError(
                    f"cannot drop field {dotted!r}: it is the last field of its ROW; drop the "
                    "ROW column instead"
                )
        elif isinstance(change, UpdateColumnType):
            siblings[i] = _cast_field(siblings[i], change, dotted)
        elif isinstance(change, UpdateColumnNullability):
            siblings[i] = _set_nullability(siblings[i], change.nullable, has_snapshots, dotted)
        else:
            siblings[i] = replace(siblings[i], description=change.comment)
        return siblings

    return _modify_nested(list(fields), path, apply, dotted)


def _modify_nested(
    fields: list[DataField],
    path: tuple[str, ...],
    apply: Callable[[list[DataField], str], list[DataField]],
    dotted: str,
) -> list[DataField]:
    """``fields`` with ``apply`` run on the fields that hold the last name of ``path``,
    walking down through ROW fields (an ARRAY's ``element``, a MAP's ``value``)."""
    if len(path) == 1:
        return apply(fields, path[0])
    i = _index(fields, path[0], dotted)
    fields[i] = replace(fields[i], type=_modify_type(fields[i].type, path[1:], apply, dotted))
    return fields


def _modify_type(
    t: DataType,
    path: tuple[str, ...],
    apply: Callable[[list[DataField], str], list[DataField]],
    dotted: str,
) -> DataType:
    if t.root == "ROW":
        described = dict(t.descriptions)
        inner = [DataField(i, n, ft, described.get(i)) for i, n, ft in t.fields]
        inner = _modify_nested(inner, path, apply, dotted)
        return replace(
            t,
            fields=tuple((f.id, f.name, f.type) for f in inner),
            descriptions=tuple((f.id, f.description) for f in inner if f.description is not None),
        )
    if t.root == "ARRAY" and t.element is not None and path[0] == "element" and len(path) > 1:
        return replace(t, element=_modify_type(t.element, path[1:], apply, dotted))
    if t.root == "MAP" and t.value is not None and path[0] == "value" and len(path) > 1:
        return replace(t, value=_modify_type(t.value, path[1:], apply, dotted))
    raise ConfigurationError(
        f"cannot change {dotted!r}: at {path[0]!r} the path reaches a {t.root}, not a ROW "
        "(a path names ROW fields, an ARRAY's 'element' and a MAP's 'value')"
    )


def _rename_column(
    schema: TableSchema, fields: list[DataField], name: str, new_name: str
) -> list[DataField]:
    _not_a_key(schema, name, "rename")
    _index(fields, name)
    if any(f.name == new_name for f in fields):
        raise ConfigurationError(
            f"cannot rename column {name!r} to {new_name!r}: a column with that name already exists"
        )
    return [replace(f, name=new_name) if f.name == name else f for f in fields]


def _update_nullability(
    schema: TableSchema, old: DataField, nullable: bool, has_snapshots: bool
) -> DataField:
    """A key column stays NOT NULL; a column of a table with data cannot become NOT NULL."""
    if nullable and old.name in schema.primary_keys:
        raise UnsupportedFeatureError(
            f"Cannot change nullability of primary key (column {old.name!r})"
        )
    return _set_nullability(old, nullable, has_snapshots, old.name)


def _set_nullability(old: DataField, nullable: bool, has_snapshots: bool, what: str) -> DataField:
    if not nullable and old.type.nullable and has_snapshots:
        raise UnsupportedFeatureError(
            f"cannot make column {what!r} NOT NULL: the table has data, which lakeops cannot "
            "check for nulls; add a new NOT NULL-free column instead"
        )
    return replace(old, type=old.type.with_nullable(nullable))


def _index(fields: list[DataField], name: str, dotted: str | None = None) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    if dotted is not None:
        raise ConfigurationError(
            f"field {dotted!r} does not exist: no {name!r} among {[f.name for f in fields]}"
        )
    raise ConfigurationError(
        f"column {name!r} does not exist (columns: {[f.name for f in fields]})"
    )


def _not_a_key(schema: TableSchema, name: str, what: str) -> None:
    if name in schema.partition_keys:
        raise UnsupportedFeatureError(f"Cannot {what} partition key [{name}]")
    if name in schema.primary_keys:
        raise UnsupportedFeatureError(f"Cannot {what} primary key [{name}]")


_DV_ENABLED = "deletion-vectors.enabled"


def _check_deletion_vectors_switch(options: dict[str, str], old: str | None, new: str) -> None:
    """Paimon's ``SchemaManager``: deletion-vector mode may only change with
    ``deletion-vectors.modifiable = true`` (without a full compaction rows could show twice)."""
    modifiable = options.get("deletion-vectors.modifiable", "false").strip().lower() == "true"
    was = (old or "false").strip().lower() == "true"
    now = new.strip().lower() == "true"
    if not modifiable and was != now:
        raise UnsupportedFeatureError(
            f"Cannot change deletion vectors mode from {str(was).lower()} to "
            f"{str(now).lower()}: without a full compaction rows may show twice; set table "
            "option 'deletion-vectors.modifiable' = 'true' to allow it"
        )


def _check_immutable(key: str) -> None:
    if key in IMMUTABLE_OPTIONS:
        raise UnsupportedFeatureError(
            f"Change '{key}' is not supported yet: the option cannot change once the table has "
            "snapshots; create a new table with the new value and copy the data"
        )


def _check_set_option(key: str, old: str | None, new: str) -> None:
    _check_immutable(key)
    if key != "bucket":
        return
    try:
        old_bucket = -1 if old is None else int(old)  # lakeops tables always store 'bucket'
        new_bucket = int(new)
    except ValueError:
        raise ConfigurationError(f"option 'bucket' must be an integer, got {new!r}") from None
    if old_bucket == -1:
        raise UnsupportedFeatureError("Cannot change bucket when it is -1.")
    if new_bucket == -1:
        raise UnsupportedFeatureError("Cannot change bucket to -1.")
    # another fixed count is allowed, as in Paimon: files keep the count they were written
    # with (each manifest entry's _TOTAL_BUCKETS), so reads stay exact, and writes to a
    # partition still holding the old count are refused until it is rescaled (overwritten)


def _add_column(
    fields: list[DataField], change: AddColumn, highest: list[int], dotted: str | None = None
) -> list[DataField]:
    """``fields`` with the new column (or nested field: ``dotted`` names its path)."""
    assert isinstance(change.name, str)
    what = dotted or change.name
    if any(f.name == change.name for f in fields):
        raise ConfigurationError(f"column {what!r} already exists")
    if not change.type.nullable:
        raise ConfigurationError(
            f"Column {what} cannot specify NOT NULL: existing rows have no value for it"
        )
    position = change.position
    if position.kind == "before":
        raise ConfigurationError(
            "a new column can be added first, last or after a column, not 'before'"
        )
    at = len(fields)
    if position.kind == "first":
        at = 0
    elif position.kind == "after":
        assert position.reference is not None
        at = _index(fields, position.reference, dotted and f"{dotted}: {position.reference}") + 1
    highest[0] += 1
    new = DataField(highest[0], change.name, _reassign(change.type, highest), change.comment)
    return [*fields[:at], new, *fields[at:]]


def _update_type(
    schema: TableSchema, options: dict[str, str], field: DataField, change: UpdateColumnType
) -> DataField:
    name = field.name
    if name in schema.partition_keys:
        raise UnsupportedFeatureError(f"Cannot update partition column [{name}] type")
    if name in schema.primary_keys:
        raise UnsupportedFeatureError(
            f"cannot change the type of primary-key column {name!r}: keys in existing files "
            "are encoded with the old type"
        )
    bucket_keys = [c.strip() for c in options.get("bucket-key", "").split(",") if c.strip()]
    if name in bucket_keys:
        raise UnsupportedFeatureError(
            f"cannot change the type of bucket-key column {name!r}: rows would hash to other "
            "buckets"
        )
    return _cast_field(field, change, name)


def _cast_field(field: DataField, change: UpdateColumnType, what: str) -> DataField:
    """``field`` with the type ``change`` asks for, which must be a widening."""
    target = change.type
    if change.keep_nullability:
        target = target.with_nullable(field.type.nullable)
    if not is_implicit_cast(field.type, target):
        raise UnsupportedFeatureError(
            f"Column type {what}[{field.type}] cannot be converted to {target} without loosing "
            "information; lakeops allows only widening casts (e.g. INT to BIGINT, "
            "DECIMAL(10, 2) to DECIMAL(12, 2), VARCHAR(10) to STRING)"
        )
    if _same(field.type, target):  # nested types: keep the field ids
        target = field.type.with_nullable(target.nullable)
    return replace(field, type=target)


def _move(fields: list[DataField], name: str, position: Position) -> list[DataField]:
    """Paimon's ``SchemaManager.applyMove``."""
    index = {f.name: i for i, f in enumerate(fields)}
    if name not in index:
        raise ConfigurationError(f"Field name not found: {name}")
    i = index[name]
    if position.kind in ("first", "last"):
        target = 0 if position.kind == "first" else len(fields) - 1
        if target == i:
            raise ConfigurationError(f"Cannot move itself for column {name}")
    else:
        ref = position.reference
        if ref not in index:
            raise ConfigurationError(f"Reference field name not found: {ref}")
        target = index[ref]
        if target == i:
            raise ConfigurationError(f"Cannot move itself for column {name}")
        if position.kind == "after" and i > target:
            target += 1
        if position.kind == "before" and i < target:
            target -= 1
        target = min(target, len(fields) - 1)
    out = fields[:i] + fields[i + 1 :]
    out.insert(target, fields[i])
    return out


def _validate(schema: TableSchema) -> None:
    """The option checks of Paimon's ``SchemaValidation`` that columns changes can break."""
    names = set(schema.field_names)
    if len(names) != len(schema.fields):
        raise ConfigurationError(f"Table column {schema.field_names} must not contain duplicates")
    for key in schema.options:
        if key.startswith("fields.") and key.count(".") >= 2:
            for f in key.split(".")[1].split(","):
                if f != "default-aggregate-function" and f not in names:
                    raise ConfigurationError(
                        f"Field {f} can not be found in table schema (option {key!r}); "
                        "remove or rename the option in the same change"
                    )
    for option in ("sequence.field", "bucket-key", "rowkind.field"):
        for f in schema.options.get(option, "").split(","):
            if f.strip() and f.strip() not in names:
                raise ConfigurationError(
                    f"option {option!r} names column {f.strip()!r}, which the new schema "
                    "does not have"
                )
