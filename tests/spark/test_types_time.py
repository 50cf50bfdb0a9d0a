"""Paimon's TIME and VARIANT columns as Spark sees them (no Spark session: the schema mapping and
the Arrow conversion a read hands to Spark). TIME is Spark's ``TimeType`` through Arrow's
``time64``, exactly; VARIANT the struct of its two binaries."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql.types import BinaryType, StructField, StructType, TimeType

from lakeops.format.types import VARIANT_ARROW
from lakeops.spark.types import spark_arrow_schema, spark_schema, to_spark_arrow

TIMES = [dt.time(0, 0), dt.time(1, 2, 3, 4000), None, dt.time(23, 59, 59, 999000)]


def test_time_is_sparks_time_type_and_converts_exactly() -> None:
    arrow = pa.schema([("t", pa.time32("ms")), ("ts", pa.list_(pa.time32("ms")))])
    schema = spark_schema(arrow)
    assert schema["t"].dataType == TimeType(6)
    assert schema["ts"].dataType.elementType == TimeType(6)
    table = pa.table(
        {"t": pa.array(TIMES, pa.time32("ms")), "ts": pa.array([TIMES] * 4, arrow.field("ts").type)}
    )
    out = to_spark_arrow(table, spark_arrow_schema(schema))
    assert out.column("t").to_pylist() == TIMES
    assert out.column("ts").to_pylist() == [TIMES] * 4


def test_variant_is_the_struct_of_its_binaries() -> None:
    schema = spark_schema(pa.schema([("v", VARIANT_ARROW)]))
    assert schema["v"].dataType == StructType(
        [StructField("value", BinaryType(), False), StructField("metadata", BinaryType(), False)]
    )


def test_a_spark_without_a_time_type_refuses_naming_the_columns(monkeypatch) -> None:
    """Before Spark 4.1 Arrow's time has no Spark type: the schema conversion fails, and the
    error names the TIME columns instead."""
    import pytest
    from pyspark.errors import PySparkTypeError

    import lakeops.spark.types as types_module
    from lakeops.errors import UnsupportedFeatureError

    def no_time(schema: pa.Schema, **_: object) -> StructType:
        raise PySparkTypeError("UNSUPPORTED_DATA_TYPE_FOR_ARROW_CONVERSION", {})

    monkeypatch.setattr(types_module, "from_arrow_schema", no_time)
    arrow = pa.schema([("id", pa.int64()), ("t", pa.time32("ms"))])
    with pytest.raises(UnsupportedFeatureError, match=r"\['t'\] are \(or hold\) Paimon TIME"):
        spark_schema(arrow)
