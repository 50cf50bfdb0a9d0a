"""Paimon's primitive data types: parsing the schema-file type strings and mapping them to Arrow.

Paimon writes a field type as a SQL string (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``,
``"TIMESTAMP(6)"``). :class:`DataType` is the parsed, immutable form; it knows its Arrow type,
its canonical Paimon string and how it is laid out in a BinaryRow.

Nested types (ARRAY, MAP, MULTISET, ROW) are stored by Paimon as JSON objects, not strings.

``TIME(p)`` (precision 0..9, default 0) is Paimon's time of day. Whatever its precision, Paimon
holds it as an int of milliseconds of the day (``TimeType``: Parquet INT32 ``TIME(MILLIS)``, ORC
``int``, Avro ``time-millis``, a 4-byte BinaryRow slot), so its Arrow type is ``time32('ms')``
for every precision.

``VARIANT`` (Paimon 1.1+) is semi-structured data in the Parquet variant encoding; Arrow has no
variant type, so it reads (and is written) as pypaimon carries it: ``struct<value: binary NOT
NULL, metadata: binary NOT NULL>``, the two binaries Paimon's Parquet writer stores.

``MULTISET<T>`` is stored by Paimon as a map from ``T`` to its INT NOT NULL count; lakeops
carries it as exactly that Arrow map.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from lakeops.errors import ConfigurationError, UnsupportedFeatureError

__all__ = ["DataType", "NOT_KEYABLE", "TYPE_ROOTS", "VARIANT_ARROW"]

MAX_VARCHAR = 2147483647

#: canonical root name -> aliases accepted in type strings
TYPE_ROOTS: dict[str, tuple[str, ...]] = {
    "BOOLEAN": ("BOOLEAN",),
    "TINYINT": ("TINYINT",),
    "SMALLINT": ("SMALLINT",),
    "INT": ("INT", "INTEGER"),
    "BIGINT": ("BIGINT",),
    "FLOAT": ("FLOAT",),
    "DOUBLE": ("DOUBLE", "DOUBLE PRECISION"),
    "DECIMAL": ("DECIMAL", "NUMERIC", "DEC"),
    "CHAR": ("CHAR",),
    "VARCHAR": ("VARCHAR", "STRING"),
    "BINARY": ("BINARY",),
    "VARBINARY": ("VARBINARY", "BYTES"),
    "DATE": ("DATE",),
    "TIMESTAMP": ("TIMESTAMP",),
    "TIMESTAMP_LTZ": ("TIMESTAMP_LTZ",),
    "TIME": ("TIME",),
    "VARIANT": ("VARIANT",),
    # Paimon 1.x: large binary values stored in .blob files (lakeops.format.blob_file)
    "BLOB": ("BLOB",),
}
_ALIAS = {alias: root for root, aliases in TYPE_ROOTS.items() for alias in aliases}
_TYPE_RE = re.compile(
    r"^\s*(?P<name>[A-Z_]+(?: PRECISION)?)\s*(?:\((?P<args>[^)]*)\))?"
    r"(?P<ltz>\s+WITH LOCAL TIME ZONE)?(?:\s+WITHOUT TIME ZONE)?(?P<notnull>\s+NOT NULL)?\s*$",
    re.IGNORECASE,
)

#: Width in bytes of fixed-width values inside a BinaryRow slot.
_FIXED_WIDTH = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "SMALLINT": 2,
    "INT": 4,
    "BIGINT": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
    "DATE": 4,
    "TIME": 4,
}

#: The Arrow type of VARIANT: Paimon's Parquet group of two required binaries (value first).
VARIANT_ARROW = pa.struct(
    [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
)
#: Types Paimon refuses as primary-key or partition columns (``SchemaValidation``).
NOT_KEYABLE = frozenset({"ARRAY", "MAP", "MULTISET", "ROW", "VARIANT"})


@dataclass(frozen=True)
class DataType:
    """One Paimon primitive type.

    Attributes:
        root: canonical name (``BIGINT``, ``VARCHAR``, ``DECIMAL``, ``TIMESTAMP``, …).
        nullable: whether the field admits nulls (``NOT NULL`` absent).
        precision: DECIMAL precision or TIMESTAMP / TIME precision (fractional digits).
        scale: DECIMAL scale.
        length: CHAR/VARCHAR/BINARY/VARBINARY length.
    """

    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    length: int | None = None
    #: ARRAY element type / MAP key and value types
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    #: ROW fields as (field id, name, type)
    fields: tuple[tuple[int, str, DataType], ...] = ()
    #: ROW fields' comments (Paimon's ``description``) as (field id, text), kept by field id so
    #: a type rebuilt with other fields keeps its fields' comments; not part of the type's
    #: identity (two types that differ only in comments are equal), but written back to every
    #: schema file, so an ALTER by lakeops keeps the comments Paimon or Spark gave nested fields
    descriptions: tuple[tuple[int, str], ...] = field(default=(), compare=False, repr=False)

    # ------------------------------------------------------------------ parsing
    @classmethod
    def parse(cls, text: Any) -> DataType:
        """Parse a Paimon schema type: a string such as ``"DECIMAL(10, 2) NOT NULL"``, or the
        JSON object Paimon writes for ARRAY / MAP / ROW types."""
        if isinstance(text, dict):
            return cls._parse_nested(text)
        if not isinstance(text, str):
            raise ConfigurationError(f"cannot parse Paimon type {text!r}")
        m = _TYPE_RE.match(text)
        if not m:
            raise ConfigurationError(f"cannot parse Paimon type {text!r}")
        name = re.sub(r"\s+", " ", m.group("name").upper())
        root = _ALIAS.get(name)
        if root is None:
            raise UnsupportedFeatureError(f"Paimon type {text!r} is not supported")
        args = [int(a) for a in (m.group("args") or "").replace(" ", "").split(",") if a]
        nullable = m.group("notnull") is None
        if root == "TIMESTAMP" and m.group("ltz"):
            root = "TIMESTAMP_LTZ"
        if name == "STRING":
            return cls("VARCHAR", nullable, length=MAX_VARCHAR)
        if name == "BYTES":
            return cls("VARBINARY", nullable, length=MAX_VARCHAR)
        if root == "DECIMAL":
            precision = args[0] if args else 10
            scale = args[1] if len(args) > 1 else 0
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise ConfigurationError(f"invalid DECIMAL precision/scale in {text!r}")
            return cls(root, nullable, precision=precision, scale=scale)
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
            # Paimon's defaults: TIMESTAMP(6), TIME(0)
            precision = args[0] if args else (0 if root == "TIME" else 6)
            if not 0 <= precision <= 9:
                raise ConfigurationError(f"{name} precision must be 0..9 in {text!r}")
            return cls(root, nullable, precision=precision)
        if root in ("CHAR", "BINARY"):
            return cls(root, nullable, length=args[0] if args else 1)
        if root in ("VARCHAR", "VARBINARY"):
            return cls(root, nullable, length=args[0] if args else MAX_VARCHAR)
        return cls(root, nullable)

    @classmethod
    def _parse_nested(cls, d: dict[str, Any]) -> DataType:
        head = str(d.get("type", "")).strip().upper()
        nullable = not head.endswith("NOT NULL")
        root = head.replace("NOT NULL", "").strip()
        if root == "ARRAY":
            return cls("ARRAY", nullable, element=cls.parse(d["element"]))
        if root == "MAP":
            return cls("MAP", nullable, key=cls.parse(d["key"]), value=cls.parse(d["value"]))
        if root == "MULTISET":
            return cls.multiset(cls.parse(d["element"]), nullable)
        if root == "ROW":
            raw = d.get("fields", [])
            fields = tuple((int(f["id"]), str(f["name"]), cls.parse(f["type"])) for f in raw)
            described = tuple(
                (int(f["id"]), str(f["description"]))
                for f in raw
                if f.get("description") is not None
            )
            return cls("ROW", nullable, fields=fields, descriptions=described)
        raise UnsupportedFeatureError(f"Paimon type {d!r} is not supported")

    @classmethod
    def multiset(cls, element: DataType, nullable: bool = True) -> DataType:
        """``MULTISET<element>``: stored as a map from the (non-null) element to an INT NOT NULL
        count, as Paimon's writers store it."""
        return cls(
            "MULTISET",
            nullable,
            element=element,
            key=element.with_nullable(False),
            value=cls("INT", False),
        )

    @classmethod
    def from_arrow(
        cls, arrow_type: pa.DataType, nullable: bool = True, next_id: list[int] | None = None
    ) -> DataType:
        """The Paimon type an Arrow column maps to (the inverse of :meth:`to_arrow`).

        ``next_id`` is a one-element counter that hands out ids to ROW fields.
        """
        t = arrow_type
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return cls(
                "ARRAY",
                nullable,
                element=cls.from_arrow(t.value_type, t.value_field.nullable, next_id),
            )
        if pa.types.is_map(t):
            return cls(
                "MAP",
                nullable,
                key=cls.from_arrow(t.key_type, False, next_id),
                value=cls.from_arrow(t.item_type, t.item_field.nullable, next_id),
            )
        if t == VARIANT_ARROW:  # pypaimon's reading of the same struct
            return cls("VARIANT", nullable)
        if pa.types.is_struct(t):
            counter = next_id if next_id is not None else [0]
            fields = []
            for f in t:
                fid = counter[0]
                counter[0] += 1
                fields.append((fid, f.name, cls.from_arrow(f.type, f.nullable, counter)))
            return cls("ROW", nullable, fields=tuple(fields))
        simple = {
            pa.bool_(): "BOOLEAN",
            pa.int8(): "TINYINT",
            pa.int16(): "SMALLINT",
            pa.int32(): "INT",
            pa.int64(): "BIGINT",
            pa.float32(): "FLOAT",
            pa.float64(): "DOUBLE",
            pa.date32(): "DATE",
        }
        if t in simple:
            return cls(simple[t], nullable)
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return cls("VARCHAR", nullable, length=MAX_VARCHAR)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            return cls("VARBINARY", nullable, length=MAX_VARCHAR)
        if pa.types.is_decimal(t):
            return cls("DECIMAL", nullable, precision=t.precision, scale=t.scale)
        if pa.types.is_timestamp(t):
            precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
            root = "TIMESTAMP" if t.tz is None else "TIMESTAMP_LTZ"
            return cls(root, nullable, precision=precision)
        if pa.types.is_time32(t):
            return cls("TIME", nullable, precision=0 if t.unit == "s" else 3)
        if pa.types.is_time64(t):
            raise UnsupportedFeatureError(
                f"Arrow type {t} has no Paimon equivalent: Paimon stores TIME as milliseconds of "
                "the day; cast the column to time32('ms')"
            )
        raise UnsupportedFeatureError(
            f"Arrow type {t} has no supported Paimon equivalent; cast the column to a primitive "
            "type (integers, floating point, decimal, string, binary, bool, date32, time32, "
            "timestamp)"
        )

    # ---------------------------------------------------------------- rendering
    def with_nullable(self, nullable: bool) -> DataType:
        """A copy of this type with another nullability."""
        return replace(self, nullable=nullable)

    @property
    def is_nested(self) -> bool:
        """True for ARRAY, MAP, MULTISET and ROW."""
        return self.root in ("ARRAY", "MAP", "MULTISET", "ROW")

    def holds(self, *roots: str) -> bool:
        """Whether this type is, or holds anywhere inside, a type of one of ``roots``."""
        if self.root in roots:
            return True
        inner = [self.element, self.key, self.value] + [t for _, _, t in self.fields]
        return any(t is not None and t.holds(*roots) for t in inner)

    @property
    def keyable(self) -> bool:
        """Whether Paimon accepts this type as a primary-key or partition column."""
        return self.root not in NOT_KEYABLE

    def to_json(self) -> Any:
        """The schema-file form: a string, or a JSON object for nested types."""
        if not self.is_nested:
            return self.to_paimon()
        head = self.root if self.nullable else f"{self.root} NOT NULL"
        if self.root == "ARRAY":
            assert self.element is not None
            return {"type": head, "element": self.element.to_json()}
        if self.root == "MAP":
            assert self.key is not None and self.value is not None
            return {"type": head, "key": self.key.to_json(), "value": self.value.to_json()}
        if self.root == "MULTISET":
            assert self.element is not None
            return {"type": head, "element": self.element.to_json()}
        described = dict(self.descriptions)
        return {
            "type": head,
            "fields": [
                {"id": i, "name": n, "type": t.to_json()}
                | ({"description": described[i]} if i in described else {})
                for i, n, t in self.fields
            ],
        }

    def to_paimon(self) -> str:
        """The canonical Paimon type string, as written to ``schema-N``."""
        r = self.root
        if self.is_nested:
            inner = {
                "ARRAY": lambda: f"ARRAY<{self.element}>",
                "MAP": lambda: f"MAP<{self.key}, {self.value}>",
                "MULTISET": lambda: f"MULTISET<{self.element}>",
                "ROW": lambda: "ROW<" + ", ".join(f"`{n}` {t}" for _, n, t in self.fields) + ">",
            }[r]()
            return inner if self.nullable else f"{inner} NOT NULL"
        if r == "VARCHAR":
            text = "STRING" if self.length == MAX_VARCHAR else f"VARCHAR({self.length})"
        elif r == "VARBINARY":
            text = "BYTES" if self.length == MAX_VARCHAR else f"VARBINARY({self.length})"
        elif r in ("CHAR", "BINARY"):
            text = f"{r}({self.length})"
        elif r == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif r == "TIMESTAMP":
            text = f"TIMESTAMP({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            text = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r == "TIME":
            text = f"TIME({self.precision})"
        else:
            text = r
        return text if self.nullable else f"{text} NOT NULL"

    def to_arrow(self) -> pa.DataType:
        """The Arrow type of this field in data files and in read results."""
        return _arrow_type(self)

    def _to_arrow(self) -> pa.DataType:
        r = self.root
        fixed = {
            "BOOLEAN": pa.bool_(),
            "TINYINT": pa.int8(),
            "SMALLINT": pa.int16(),
            "INT": pa.int32(),
            "BIGINT": pa.int64(),
            "FLOAT": pa.float32(),
            "DOUBLE": pa.float64(),
            "DATE": pa.date32(),
            "TIME": pa.time32("ms"),
            "VARIANT": VARIANT_ARROW,
        }
        if r in fixed:
            return fixed[r]
        if r in ("CHAR", "VARCHAR"):
            return pa.string()
        if r in ("BINARY", "VARBINARY"):
            return pa.binary()
        if r == "BLOB":
            return pa.large_binary()
        if r == "DECIMAL":
            return pa.decimal128(self.precision or 10, self.scale or 0)
        if r == "ARRAY":
            assert self.element is not None
            return pa.list_(pa.field("element", self.element.to_arrow(), self.element.nullable))
        if r in ("MAP", "MULTISET"):
            assert self.key is not None and self.value is not None
            return pa.map_(
                self.key.to_arrow(), pa.field("value", self.value.to_arrow(), self.value.nullable)
            )
        if r == "ROW":
            return pa.struct([pa.field(n, t.to_arrow(), t.nullable) for _, n, t in self.fields])
        assert self.precision is not None
        unit = (
            "s"
            if self.precision == 0
            else "ms"
            if self.precision <= 3
            else ("us" if self.precision <= 6 else "ns")
        )
        return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)

    # ------------------------------------------------------------ binary layout
    @property
    def fixed_width(self) -> int | None:
        """Bytes a value takes inside its 8-byte BinaryRow slot, or None if variable-length."""
        if self.root in _FIXED_WIDTH:
            return _FIXED_WIDTH[self.root]
        if self.root == "DECIMAL" and (self.precision or 0) <= 18:
            return 8
        if self.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (self.precision or 0) <= 3:
            return 8
        return None

    @property
    def is_string(self) -> bool:
        """True for CHAR/VARCHAR."""
        return self.root in ("CHAR", "VARCHAR")

    @property
    def is_binary(self) -> bool:
        """True for BINARY/VARBINARY."""
        return self.root in ("BINARY", "VARBINARY")

    def __str__(self) -> str:
        return self.to_paimon()


@functools.lru_cache(maxsize=4096)
def _arrow_type(t: DataType) -> pa.DataType:
    """:meth:`DataType.to_arrow`, memoised (types are immutable and asked for per chunk)."""
    return t._to_arrow()
