"""Java's renderings, against the strings the JDK and Paimon print (worked out from their
documented formats: ``LocalDateTime.toString``, ``Duration.toString``, ``Double.toString``,
``Arrays.toString``, ``TreeMap.toString``)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from decimal import Decimal

import pytest

from lakeops.format.types import DataType
from lakeops.table.java_text import (
    java_array,
    java_duration,
    java_local_datetime,
    java_map,
    java_value,
    local_millis,
)


@pytest.mark.parametrize(
    ("millis", "nanos", "text"),
    [
        (0, 0, "1970-01-01T00:00"),
        (61_000, 0, "1970-01-01T00:01:01"),
        (1_500, 0, "1970-01-01T00:00:01.500"),
        (0, 1_000, "1970-01-01T00:00:00.000001"),
        (0, 1, "1970-01-01T00:00:00.000000001"),
        (1_700_000_000_123, 0, "2023-11-14T22:13:20.123"),
        (-1, 0, "1969-12-31T23:59:59.999"),
    ],
)
def test_local_datetime_as_java_prints_it(millis: int, nanos: int, text: str) -> None:
    assert java_local_datetime(millis, nanos) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (dt.timedelta(days=3), "PT72H"),
        (dt.timedelta(minutes=90), "PT1H30M"),
        (dt.timedelta(days=1, seconds=1), "PT24H1S"),
        (dt.timedelta(milliseconds=500), "PT0.5S"),
        (dt.timedelta(0), "PT0S"),
    ],
)
def test_duration_as_java_prints_it(value: dt.timedelta, text: str) -> None:
    assert java_duration(value) == text


@pytest.mark.parametrize(
    ("value", "type_", "text"),
    [
        (None, "INT", "null"),
        (True, "BOOLEAN", "true"),
        (-7, "BIGINT", "-7"),
        (19_000, "DATE", "19000"),  # an Integer epoch day in Paimon's internal row
        (1.0, "DOUBLE", "1.0"),
        (1e20, "DOUBLE", "1.0E20"),
        (0.1, "FLOAT", "0.1"),
        (Decimal("1.50"), "DECIMAL(5, 2)", "1.50"),
        ("héllo", "STRING", "héllo"),
        ((1_500, 0), "TIMESTAMP(3)", "1970-01-01T00:00:01.500"),
        (b"\x01\xff", "BYTES", "0x01ff"),
    ],
)
def test_internal_values_as_java_prints_them(value: object, type_: str, text: str) -> None:
    assert java_value(value, DataType.parse(type_)) == text


def test_arrays_and_maps_as_java_prints_them() -> None:
    assert java_array([], []) == "[]"
    types = [DataType.parse("STRING"), DataType.parse("INT")]
    assert java_array(["a", None], types) == "[a, null]"
    # TreeMap order: by UTF-16 code unit, upper case before lower case
    assert java_map({"a": "1", "B": "2", "_c": "null"}) == "{B=2, _c=null, a=1}"


@pytest.fixture
def sao_paulo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_local_millis_is_the_wall_time_of_the_local_zone(sao_paulo: None) -> None:
    # 2024-01-01T12:00Z is 09:00 in São Paulo (UTC-03:00 all year since 2019)
    instant = int(dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC).timestamp() * 1000)
    wall = int((dt.datetime(2024, 1, 1, 9) - dt.datetime(1970, 1, 1)).total_seconds() * 1000)
    assert local_millis(instant) == wall
