"""Avro data files as Paimon 0.9 writes them: the writer schema against one derived by hand from
``AvroSchemaConverter``, the values against fastavro's own reader (logical types decoded by
fastavro), decimals against Java's ``BigInteger.toByteArray``, and the refusals."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.format.kv import data_file_schema
from lakeops.format.schema import DataField, TableSchema
from lakeops.format.types import DataType
from lakeops.kv.avro_layout import avro_schema, check_writable, decimal_to_bytes, open_writer

UTC = dt.UTC
N = "org.apache.paimon.avro.generated.record"


def _row(*fields: tuple[str, Any], nullable: bool = True) -> dict[str, Any]:
    return {
        "type": "ROW" if nullable else "ROW NOT NULL",
        "fields": [{"id": 100 + i, "name": n, "type": t} for i, (n, t) in enumerate(fields)],
    }


TYPES: list[tuple[str, Any]] = [
    ("id", "BIGINT NOT NULL"),
    ("ti", "TINYINT"),
    ("c", "CHAR(5) NOT NULL"),
    ("ts0", "TIMESTAMP(0)"),
    ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("d", "DECIMAL(20, 3)"),
    ("dt", "DATE"),
    (
        "arr",
        {
            "type": "ARRAY",
            "element": _row(
                ("a", "INT NOT NULL"),
                ("b", {"type": "MAP", "key": "STRING NOT NULL", "value": "BYTES"}),
            ),
        },
    ),
    ("m", {"type": "MAP", "key": "INT NOT NULL", "value": _row(("x", "DOUBLE"))}),
    ("r", _row(("s", "STRING"), ("n", _row(("z", "BOOLEAN NOT NULL"))), nullable=False)),
]


def _schema(types: list[tuple[str, Any]] = TYPES, **options: str) -> TableSchema:
    fields = tuple(DataField(i, n, DataType.parse(t)) for i, (n, t) in enumerate(types))
    return TableSchema(0, fields, (), ("id",), dict(options))


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


def _f(name: str, t: Any) -> dict[str, Any]:
    return (
        {"name": name, "type": t, "default": None}
        if isinstance(t, list)
        else {"name": name, "type": t}
    )


# by hand from Paimon 0.9's AvroSchemaConverter.convertToSchema(rowType, "…record", {}); the
# row type (new RowType(fields)) is nullable, so the file's schema is a union
EXPECTED_RECORD = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        _f("_KEY_id", "long"),
        _f("_SEQUENCE_NUMBER", "long"),
        _f("_VALUE_KIND", "int"),
        _f("id", "long"),
        _f("ti", _nullable("int")),
        _f("c", "string"),
        _f("ts0", _nullable({"type": "long", "logicalType": "timestamp-millis"})),
        _f("ltz6", _nullable({"type": "long", "logicalType": "local-timestamp-micros"})),
        _f(
            "d", _nullable({"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3})
        ),
        _f("dt", _nullable({"type": "int", "logicalType": "date"})),
        _f(
            "arr",
            _nullable(
                {
                    "type": "array",
                    "items": _nullable(
                        {
                            "type": "record",
                            "name": N + "_arr",
                            "fields": [
                                _f("a", "int"),
                                _f("b", _nullable({"type": "map", "values": _nullable("bytes")})),
                            ],
                        }
                    ),
                }
            ),
        ),
        _f(
            "m",
            _nullable(
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": N + "_m",
                        "fields": [
                            _f("key", "int"),
                            _f(
                                "value",
                                _nullable(
                                    {
                                        "type": "record",
                                        "name": N + "_m_value",
                                        "fields": [_f("x", _nullable("double"))],
                                    }
                                ),
                            ),
                        ],
                    },
                    "logicalType": "map",
                }
            ),
        ),
        _f(
            "r",
            {
                "type": "record",
                "name": N + "_r",
                "fields": [
                    _f("s", _nullable("string")),
                    _f(
                        "n",
                        _nullable(
                            {"type": "record", "name": N + "_r_n", "fields": [_f("z", "boolean")]}
                        ),
                    ),
                ],
            },
        ),
    ],
}


EXPECTED = ["null", EXPECTED_RECORD]


def test_schema_is_paimons() -> None:
    assert avro_schema(_schema()) == EXPECTED


def test_row_name_mapping_renames_records() -> None:
    mapping = f"{N}:my.rec,my.rec_r:inner"  # (a mapped name names its children)
    schema = avro_schema(_schema(**{"avro.row-name-mapping": mapping}))[1]
    assert (schema["name"], schema["namespace"]) == ("rec", "my")
    r = next(f for f in schema["fields"] if f["name"] == "r")
    assert r["type"]["name"] == "inner"
    assert r["type"]["fields"][1]["type"][1]["name"] == "inner_n"


def _arrow_rows() -> pa.Table:
    file_schema = data_file_schema(_schema())
    low = {
        "ti": -128,
        "c": "abcde",
        "ts0": dt.datetime(1969, 7, 20, 20, 17, 40),
        "ltz6": dt.datetime(1955, 5, 5, 5, 5, 5, 50505, tzinfo=UTC),
        "d": Decimal("-99999999999999999.999"),
        "dt": dt.date(1, 1, 1),
        "arr": [{"a": 1, "b": [("k", b"\x00"), ("l", None)]}, None],
        "m": [(1, {"x": -0.0}), (-7, None)],
        "r": {"s": None, "n": {"z": True}},
    }
    high = {
        "ti": 127,
        "c": "",
        "ts0": dt.datetime(2262, 4, 11, 23, 47, 16),
        "ltz6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "d": Decimal("0.000"),
        "dt": dt.date(9999, 12, 31),
        "arr": [],
        "m": [],
        "r": {"s": "é𝄞", "n": None},
    }
    nulls: dict[str, Any] = {"c": "x", "r": {"s": None, "n": None}}
    rows = []
    for i in range(12):
        values = (low, high, nulls)[i % 3]
        rows.append(
            {"_KEY_id": i, "_SEQUENCE_NUMBER": 5 + i, "_VALUE_KIND": i % 4, "id": i, **values}
        )
    return pa.Table.from_pylist(rows, schema=file_schema)


def _model(table: pa.Table) -> list[dict[str, Any]]:
    """What fastavro's reader returns for these rows (its Python forms of Avro's types)."""
    out = []
    for row in table.to_pylist():
        if row["ts0"] is not None:
            row["ts0"] = row["ts0"].replace(tzinfo=UTC)  # timestamp-millis: an instant
        if row["ltz6"] is not None:
            row["ltz6"] = row["ltz6"].replace(tzinfo=None)  # local-timestamp: a wall clock
        if row["arr"] is not None:
            row["arr"] = [
                None if e is None else {"a": e["a"], "b": None if e["b"] is None else dict(e["b"])}
                for e in row["arr"]
            ]
        if row["m"] is not None:
            row["m"] = [{"key": k, "value": v} for k, v in row["m"]]
        out.append(row)
    return out


@pytest.mark.parametrize(
    ("codec", "level"), [("zstandard", 1), ("snappy", None), ("null", None), ("deflate", None)]
)
def test_values_read_back_by_fastavro(codec: str, level: int | None) -> None:
    table = _arrow_rows()
    sink = io.BytesIO()
    writer = open_writer(sink, _schema(), codec, level)
    writer.write(table.slice(0, 5))
    writer.write(table.slice(5))
    writer.close()
    sink.seek(0)
    reader = fastavro.reader(sink)
    assert reader.codec == codec
    assert list(reader) == _model(table)


def _java_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray``: bitLength / 8 + 1 bytes (bitLength without the sign bit)."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def test_decimal_bytes_are_javas() -> None:
    values: list[int | None] = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, 10**38 - 1]
    values += [-(10**38) + 1, None, 2**63, -(2**63), 2**126, -(2**126), -(2**126) - 1]
    array = pa.array([None if v is None else Decimal(v) for v in values], pa.decimal128(38, 0))
    want = [None if v is None else _java_bytes(v) for v in values]
    assert decimal_to_bytes(array).to_pylist() == want
    assert decimal_to_bytes(array.slice(3, 5)).to_pylist() == want[3:8]


@pytest.mark.parametrize(
    ("types", "match"),
    [
        ([("id", "BIGINT NOT NULL"), ("t", "TIMESTAMP(7)")], "precision 0..6"),
        (
            [
                ("id", "BIGINT NOT NULL"),
                ("a", {"type": "ARRAY", "element": "TIMESTAMP(9) WITH LOCAL TIME ZONE"}),
            ],
            "precision 0..6",
        ),
        ([("id", "BIGINT NOT NULL"), ("t", "TIME(6)")], "TIME of precision 0..3"),
        ([("id", "BIGINT NOT NULL"), ("v", "VARIANT")], "is VARIANT"),
        ([("id", "BIGINT NOT NULL"), ("a-b", "INT")], "no Avro name"),
        ([("id", "BIGINT NOT NULL"), ("r", _row(("x y", "INT")))], "no Avro name"),
    ],
)
def test_what_paimon_cannot_write_as_avro_is_refused(
    types: list[tuple[str, Any]], match: str
) -> None:
    with pytest.raises(UnsupportedFeatureError, match=match):
        check_writable(_schema(types))


def test_an_unknown_avro_codec_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"avro\.codec"):
        check_writable(_schema(**{"avro.codec": "gzip"}))


def test_time_and_multiset_schemas_are_paimons() -> None:
    """``AvroSchemaConverter``: TIME(p <= 3) ``int``/``time-millis``; MULTISET<T> like a MAP from
    T to ``int`` (a non-string element: the array of {key, value} records)."""
    schema = _schema(
        [
            ("id", "BIGINT NOT NULL"),
            ("t", "TIME(3)"),
            ("m", {"type": "MULTISET NOT NULL", "element": "INT"}),
        ]
    )
    [_, record] = avro_schema(schema)
    fields = {f["name"]: f["type"] for f in record["fields"]}
    assert fields["t"] == ["null", {"type": "int", "logicalType": "time-millis"}]
    assert fields["m"] == {
        "type": "array",
        "items": {
            "type": "record",
            "name": f"{N}_m",
            "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "int"}],
        },
        "logicalType": "map",
    }
