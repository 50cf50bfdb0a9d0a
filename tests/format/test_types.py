"""TIME(p), VARIANT and MULTISET types: the schema-file forms Paimon writes (``TimeType``,
``VariantType``, ``MultisetType``: ``asSQLString`` / ``serializeJson``), parsed and rendered back
exactly, their Arrow types (those pypaimon 2.1's ``PyarrowFieldParser`` gives) and the key
columns Paimon's ``SchemaValidation`` refuses."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType

T = DataType.parse

#: the Arrow struct pypaimon 2.1 reads a VARIANT as (value first, both required)
VARIANT = pa.struct(
    [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
)


@pytest.mark.parametrize(
    ("text", "canonical", "precision", "nullable"),
    [
        ("TIME", "TIME(0)", 0, True),
        ("TIME(3)", "TIME(3)", 3, True),
        ("TIME(9) NOT NULL", "TIME(9) NOT NULL", 9, False),
        ("time(6) without time zone", "TIME(6)", 6, True),
    ],
)
def test_time_parses_and_renders_as_paimon(
    text: str, canonical: str, precision: int, nullable: bool
) -> None:
    t = T(text)
    assert (t.root, t.precision, t.nullable) == ("TIME", precision, nullable)
    assert t.to_json() == canonical
    assert T(t.to_json()) == t


@pytest.mark.parametrize("p", [0, 3, 6, 9])
def test_time_is_milliseconds_of_the_day_in_arrow_for_every_precision(p: int) -> None:
    assert T(f"TIME({p})").to_arrow() == pa.time32("ms")


def test_time_precision_outside_0_to_9_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="TIME precision"):
        T("TIME(10)")


def test_variant_round_trips_and_reads_as_pypaimons_struct() -> None:
    for text in ("VARIANT", "VARIANT NOT NULL"):
        t = T(text)
        assert t.root == "VARIANT" and t.to_json() == text and T(t.to_json()) == t
        assert t.to_arrow() == VARIANT
    assert DataType.from_arrow(VARIANT) == T("VARIANT")


def test_multiset_json_round_trips_and_is_a_map_to_int_counts() -> None:
    doc = {"type": "MULTISET NOT NULL", "element": "VARCHAR(10)"}
    t = T(doc)
    assert t.root == "MULTISET" and not t.nullable and t.element == T("VARCHAR(10)")
    assert t.to_json() == doc and str(t) == "MULTISET<VARCHAR(10)> NOT NULL"
    assert t.to_arrow() == pa.map_(pa.string(), pa.field("value", pa.int32(), False))
    nested = T({"type": "MULTISET", "element": {"type": "ARRAY", "element": "INT"}})
    assert T(nested.to_json()) == nested


@pytest.mark.parametrize(
    ("arrow", "paimon"),
    [(pa.time32("s"), "TIME(0)"), (pa.time32("ms"), "TIME(3)")],
)
def test_arrow_times_map_to_time(arrow: pa.DataType, paimon: str) -> None:
    assert DataType.from_arrow(arrow) == T(paimon)


def test_arrow_time64_is_refused_naming_the_cast() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"time32\('ms'\)"):
        DataType.from_arrow(pa.time64("us"))


def test_time_can_be_a_primary_key() -> None:
    schema = TableSchema.from_arrow(pa.schema([("t", pa.time32("ms")), ("v", pa.int64())]), ["t"])
    assert schema.field("t").type == T("TIME(3) NOT NULL")


@pytest.mark.parametrize("role", ["primary", "partition"])
def test_variant_key_or_partition_is_refused_as_paimon_refuses(role: str) -> None:
    arrow = pa.schema([("id", pa.int64()), ("v", VARIANT)])
    keys, parts = (["v"], []) if role == "primary" else (["id", "v"], ["v"])
    with pytest.raises(ConfigurationError, match="'v' has type VARIANT"):
        TableSchema.from_arrow(arrow, keys, parts)
