"""Avro data files exactly as Paimon 0.9 writes them (``AvroSchemaConverter``,
``FieldWriterFactory``, ``AvroFileFormat``), through fastavro.

The writer schema is the key-value row type (``_KEY_<k>…``, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, the table's fields) as one record named
``org.apache.paimon.avro.generated.record`` (or its ``avro.row-name-mapping`` name); a nested
ROW ``f`` is the record ``<its row's name>_f``. That row type is nullable in Paimon
(``new RowType(fields)``), so the file's schema is the union ``["null", record]`` and every
row is written as its second branch. Per Paimon type:

* nullable types are the union ``["null", T]`` and their record fields default to null;
* BOOLEAN ``boolean``; TINYINT, SMALLINT, INT ``int``; BIGINT ``long``; FLOAT ``float``;
  DOUBLE ``double``; CHAR/VARCHAR ``string``; BINARY/VARBINARY ``bytes``; DATE ``int``/``date``;
  TIME ``int``/``time-millis`` (precision <= 3; Paimon refuses more, and so does lakeops);
* TIMESTAMP ``long``/``timestamp-millis`` (precision <= 3, epoch milliseconds) or
  ``timestamp-micros`` (<= 6); TIMESTAMP_LTZ the ``local-timestamp-*`` equivalents. Paimon
  refuses Avro for precision 7..9, and so does lakeops;
* DECIMAL(p, s) ``bytes``/``decimal(p, s)``, the unscaled value as minimal big-endian two's
  complement (Java's ``BigInteger.toByteArray``);
* ARRAY ``array``; ROW ``record``; MULTISET<T> as a MAP from T to ``int``; MAP with a
  CHAR/VARCHAR key ``map`` (the value's schema takes the map's record name), any other key
  an ``array`` of ``{key, value}`` records named like the map, marked with the logical type
  ``map``.

The codec (``AvroFileFormat.createCodecFactory``): the format option ``avro.codec`` when set
(Avro's ``CodecFactory.fromString`` names, at their default levels); else ``zstandard`` at
``file.compression.zstd-level`` when the file's compression is ``zstd``; else ``snappy`` (the
option's default) — every other ``file.compression`` value means snappy in Paimon's Avro files.
Blocks are flushed every 64,000 uncompressed bytes, Avro's default sync interval.

Values go to fastavro column by column: Arrow converts times to their epoch integers and
decimals to their bytes (whole arrays), and Python only zips the column lists into records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from lakeops.errors import DataValidationError, UnsupportedFeatureError
from lakeops.format.kv import KIND, SEQ, key_column
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.options.rows_layout import AVRO_CODEC, AVRO_ROW_NAME_MAPPING

__all__ = [
    "AvroDataWriter",
    "ROW_NAME",
    "avro_codec",
    "avro_schema",
    "check_writable",
    "decimal_to_bytes",
    "open_writer",
]

#: the record name Paimon gives a data file's rows
ROW_NAME = "org.apache.paimon.avro.generated.record"
#: Avro's ``DataFileConstants.DEFAULT_SYNC_INTERVAL``
SYNC_INTERVAL = 64_000
#: ``CodecFactory.fromString`` names -> fastavro codec (default levels as Avro's)
_NAMED_CODECS = {
    "null": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
    "zstandard": "zstandard",
}
#: Avro's ``CodecFactory.DEFAULT_ZSTANDARD_LEVEL`` (``avro.codec`` = zstandard)
_DEFAULT_ZSTANDARD_LEVEL = 3


# ------------------------------------------------------------------------------- schema
def _row_name_mapping(options: Mapping[str, str]) -> dict[str, str]:
    """``avro.row-name-mapping`` (Paimon's map option form ``'from:to,from2:to2'``)."""
    value = (AVRO_ROW_NAME_MAPPING.find(options) or "").strip()
    out: dict[str, str] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        old, sep, new = part.partition(":")
        if not sep or "'" in part or '"' in part:
            raise UnsupportedFeatureError(
                f"cannot parse 'avro.row-name-mapping' entry {part.strip()!r}: write it as "
                "'<record name>:<new name>'"
            )
        out[old.strip()] = new.strip()
    return out


def _valid_name(name: str) -> bool:
    """Avro Java's name rule: a letter or ``_``, then letters, digits or ``_``."""
    return (
        bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c == "_" for c in name[1:])
    )


def _nullable(schema: Any, t: DataType) -> Any:
    return ["null", schema] if t.nullable else schema


def _day_or_time_schema(t: DataType, where: str, what: str) -> dict[str, str]:
    """DATE ``int``/``date``; TIME(p <= 3) ``int``/``time-millis`` (Paimon refuses p > 3)."""
    if t.root == "DATE":
        return {"type": "int", "logicalType": "date"}
    if (t.precision or 0) > 3:
        raise UnsupportedFeatureError(
            f"cannot {what} as Avro: column {where} is {t}, and Paimon's Avro format holds "
            "TIME of precision 0..3 only (Java Paimon refuses it too); use "
            "file.format = 'parquet' or 'orc' (or 'file.format.per.level') for this table"
        )
    return {"type": "int", "logicalType": "time-millis"}


def _type_schema(
    t: DataType, row_name: str, mapping: Mapping[str, str], where: str, what: str
) -> Any:
    """The Avro schema Paimon's ``AvroSchemaConverter.convertToSchema`` gives ``t``."""
    row_name = mapping.get(row_name, row_name)
    r = t.root
    simple = {
        "BOOLEAN": "boolean",
        "TINYINT": "int",
        "SMALLINT": "int",
        "INT": "int",
        "BIGINT": "long",
        "FLOAT": "float",
        "DOUBLE": "double",
        "CHAR": "string",
        "VARCHAR": "string",
        "BINARY": "bytes",
        "VARBINARY": "bytes",
    }
    out: Any
    if r in simple:
        out = simple[r]
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precision = 6 if t.precision is None else t.precision
        if precision > 6:
            raise UnsupportedFeatureError(
                f"cannot {what} as Avro: column {where} is {t}, and Paimon's Avro format holds "
                "timestamps of precision 0..6 only (Java Paimon refuses it too); use "
                "file.format = 'parquet' or 'orc' (or 'file.format.per.level') for this table"
            )
        unit = "millis" if precision <= 3 else "micros"
        local = "local-" if r == "TIMESTAMP_LTZ" else ""
        out = {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    elif r in ("DATE", "TIME"):
        out = _day_or_time_schema(t, where, what)
    elif r == "DECIMAL":
        out = {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision if t.precision is not None else 10,
            "scale": t.scale or 0,
        }
    elif r == "ROW":
        fields = []
        for _, name, child in t.fields:
            if not _valid_name(name):
                raise UnsupportedFeatureError(
                    f"cannot {what} as Avro: field {name!r} of {where} is no Avro name (a "
                    "letter or '_', then letters, digits or '_'), which Paimon's Avro writer "
                    "refuses too; use file.format = 'parquet' or 'orc'"
                )
            entry: dict[str, Any] = {
                "name": name,
                "type": _type_schema(child, f"{row_name}_{name}", mapping, f"{where}.{name}", what),
            }
            if child.nullable:
                entry["default"] = None
            fields.append(entry)
        out = {"type": "record", "name": row_name, "fields": fields}
    elif r == "ARRAY":
        assert t.element is not None
        out = {
            "type": "array",
            "items": _type_schema(t.element, row_name, mapping, f"{where}[]", what),
        }
    elif r in ("MAP", "MULTISET"):
        assert t.key is not None and t.value is not None
        if t.key.root in ("CHAR", "VARCHAR"):
            out = {
                "type": "map",
                "values": _type_schema(t.value, row_name, mapping, f"{where}.value", what),
            }
        else:
            value_field: dict[str, Any] = {
                "name": "value",
                "type": _type_schema(t.value, f"{row_name}_value", mapping, f"{where}.value", what),
            }
            if t.value.nullable:
                value_field["default"] = None
            entry_record = {
                "type": "record",
                "name": row_name,
                "fields": [
                    {
                        "name": "key",
                        "type": _type_schema(
                            t.key, f"{row_name}_key", mapping, f"{where}.key", what
                        ),
                    },
                    value_field,
                ],
            }
            out = {"type": "array", "items": entry_record, "logicalType": "map"}
    else:
        raise UnsupportedFeatureError(
            f"cannot {what} as Avro: column {where} is {t}, which Paimon's Avro format does "
            "not store; use file.format = 'parquet'"
        )
    return _nullable(out, t)


def _kv_fields(schema: TableSchema) -> list[tuple[str, DataType]]:
    """The key-value row type of a data file: keys, sequence number, row kind, fields (the
    fields only for a table without a primary key: append data files hold no system columns)."""
    if not schema.primary_keys:
        return [(f.name, f.type) for f in schema.fields]
    keys = [(key_column(k), schema.field(k).type) for k in schema.trimmed_primary_keys]
    system = [(SEQ, DataType("BIGINT", nullable=False)), (KIND, DataType("TINYINT", False))]
    return keys + system + [(f.name, f.type) for f in schema.fields]


def avro_schema(schema: TableSchema, what: str = "write this table") -> list[Any]:
    """The Avro writer schema of a data file of ``schema``: ``["null", record]`` (raises
    :class:`UnsupportedFeatureError` for what Paimon cannot write as Avro either)."""
    mapping = _row_name_mapping(schema.options)
    row = DataType(
        "ROW",
        nullable=False,
        fields=tuple((i, name, t) for i, (name, t) in enumerate(_kv_fields(schema))),
    )
    record = _type_schema(row, ROW_NAME, mapping, "the row", what)
    namespace, _, name = str(record["name"]).rpartition(".")
    if namespace:  # as Avro's Schema.toString writes a dotted name
        record = {
            "type": "record",
            "name": name,
            "namespace": namespace,
            "fields": record["fields"],
        }
    try:
        fastavro.parse_schema(json.loads(json.dumps(record)))
    except Exception as exc:  # e.g. two nested records given one name
        raise UnsupportedFeatureError(
            f"cannot {what} as Avro: Paimon's Avro schema of this table is invalid ({exc}); "
            "use file.format = 'parquet' or 'orc'"
        ) from None
    return ["null", record]


def _record_name(schema: list[Any]) -> str:
    """The full name of the row record of :func:`avro_schema`'s union."""
    record = schema[1]
    namespace = record.get("namespace")
    return f"{namespace}.{record['name']}" if namespace else str(record["name"])


def check_writable(schema: TableSchema, what: str = "write this table") -> None:
    """Raise :class:`UnsupportedFeatureError` when a data file of ``schema`` cannot be written
    as Avro exactly as Paimon would (nothing is written)."""
    avro_schema(schema, what)
    avro_codec(schema.options, "zstd", 1, what)


def avro_codec(
    options: Mapping[str, str], compression: str, zstd_level: int, what: str = "write this table"
) -> tuple[str, int | None]:
    """(fastavro codec, level) of an Avro data file whose Paimon compression is
    ``compression`` (``AvroFileFormat.createCodecFactory``)."""
    named = AVRO_CODEC.find(options)
    if named is not None:
        codec = _NAMED_CODECS.get(named)
        if codec is None:
            raise UnsupportedFeatureError(
                f"cannot {what}: option 'avro.codec' = {named!r} is no Avro codec (Paimon "
                f"fails on it too); use one of {sorted(_NAMED_CODECS)}"
            )
        return codec, _DEFAULT_ZSTANDARD_LEVEL if codec == "zstandard" else None
    if compression.strip().lower() == "zstd":
        return "zstandard", zstd_level
    return "snappy", None


# ------------------------------------------------------------------------------- values
def decimal_to_bytes(array: pa.Array) -> pa.Array:
    """A decimal128 array as a binary array of each unscaled value's minimal big-endian two's
    complement (Java's ``BigInteger.toByteArray``: zero is one 0x00 byte); nulls stay null."""
    n = len(array)
    if n == 0:
        return pa.array([], pa.binary())
    raw = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    little = raw[16 * array.offset : 16 * (array.offset + n)].reshape(n, 16)
    big = little[:, ::-1]
    negative = big[:, 0] >= 0x80
    fill = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    redundant = (big[:, :15] == fill[:, None]) & ((big[:, 1:] >= 0x80) == negative[:, None])
    drop = np.cumprod(redundant, axis=1).sum(axis=1)
    valid = (
        array.is_valid().to_numpy(zero_copy_only=False)
        if array.null_count
        else np.ones(n, dtype=bool)
    )
    lengths = np.where(valid, 16 - drop, 0)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    keep = (np.arange(16)[None, :] >= drop[:, None]) & valid[:, None]
    data = np.ascontiguousarray(big)[keep]
    validity = (
        pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if array.null_count else None
    )
    return pa.Array.from_buffers(
        pa.binary(),
        n,
        [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())],
        null_count=array.null_count,
    )


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _raw(array: pa.Array, t: DataType) -> pa.Array:
    """``array`` (of ``t``'s Arrow type) as the values fastavro writes for ``t``'s Avro
    schema: epoch integers for times, unscaled bytes for decimals, ``{key, value}`` lists for
    maps without a string key."""
    r = t.root
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precision = 6 if t.precision is None else t.precision
        unit = "ms" if precision <= 3 else "us"
        tz = array.type.tz if pa.types.is_timestamp(array.type) else None
        return array.cast(pa.timestamp(unit, tz=tz)).cast(pa.int64())
    if r in ("DATE", "TIME"):
        return array.cast(pa.int32())
    if r == "DECIMAL":
        return decimal_to_bytes(array)
    if r == "ARRAY":
        assert t.element is not None
        if isinstance(array, pa.ChunkedArray):
            raise TypeError("expected an Array")
        values = _raw(array.values, t.element)
        return pa.ListArray.from_arrays(array.offsets, values, mask=_mask(array))
    if r in ("MAP", "MULTISET"):
        assert t.key is not None and t.value is not None
        keys = _raw(array.keys, t.key)
        items = _raw(array.items, t.value)
        if t.key.root in ("CHAR", "VARCHAR"):
            return pa.MapArray.from_arrays(array.offsets, keys, items, mask=_mask(array))
        entries = pa.StructArray.from_arrays([keys, items], names=["key", "value"])
        return pa.ListArray.from_arrays(array.offsets, entries, mask=_mask(array))
    if r == "ROW":
        children = [_raw(array.field(i), child) for i, (_, _, child) in enumerate(t.fields)]
        return pa.StructArray.from_arrays(
            children, names=[name for _, name, _ in t.fields], mask=_mask(array)
        )
    return array


def _needs_raw(t: DataType) -> bool:
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME", "DECIMAL"):
        return True
    if t.root == "ARRAY":
        return t.element is not None and _needs_raw(t.element)
    if t.root in ("MAP", "MULTISET"):
        return True
    if t.root == "ROW":
        return any(_needs_raw(child) for _, _, child in t.fields)
    return False


def _has_map(t: DataType) -> bool:
    if t.root in ("MAP", "MULTISET"):
        return True
    if t.root == "ARRAY":
        return t.element is not None and _has_map(t.element)
    if t.root == "ROW":
        return any(_has_map(child) for _, _, child in t.fields)
    return False


class AvroDataWriter:
    """Writes Arrow tables of a data file's columns as Avro records into ``sink``."""

    def __init__(self, sink: Any, schema: TableSchema, codec: str, level: int | None) -> None:
        self.fields = _kv_fields(schema)
        self.names = [name for name, _ in self.fields]
        file_schema = avro_schema(schema)
        #: rows go to the union's record branch by name (fastavro's tuple notation), so
        #: fastavro does not test each row against both branches first
        self.record_name = _record_name(file_schema)
        self.writer = fastavro.write.Writer(
            sink,
            file_schema,
            codec=codec,
            sync_interval=SYNC_INTERVAL,
            compression_level=level,
        )

    def write(self, table: pa.Table) -> None:
        """Append the rows of ``table`` (columns named and typed as the data file's)."""
        columns: list[list[Any]] = []
        for name, t in self.fields:
            col = table.column(name).combine_chunks()
            if _needs_raw(t):
                col = _raw(col, t)
            if _has_map(t):
                try:
                    columns.append(col.to_pylist(maps_as_pydicts="strict"))
                except KeyError as exc:
                    raise DataValidationError(
                        f"column {name!r} holds a MAP with a duplicate key ({exc}); Paimon's "
                        "maps have unique keys"
                    ) from None
            else:
                columns.append(col.to_pylist())
        names, record = self.names, self.record_name
        write: Any = self.writer.write  # (its stub lacks the tuple notation for unions)
        for row in zip(*columns, strict=True):
            write((record, dict(zip(names, row, strict=True))))

    def close(self) -> None:
        """Write the last block (the sink stays open)."""
        self.writer.flush()


def open_writer(sink: Any, schema: TableSchema, codec: str, level: int | None) -> AvroDataWriter:
    """An Avro data-file writer over ``sink`` with Paimon's schema, codec and blocks."""
    return AvroDataWriter(sink, schema, codec, level)
