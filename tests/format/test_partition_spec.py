"""User partition specs match partitions by typed value, written the way users write them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.partition_names import value_string
from lakeops.format.partition_spec import internal_value, spec_predicate
from lakeops.format.types import DataType

D = "__DEFAULT_PARTITION__"
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("type_text", "given", "internal"),
    [
        ("DATE", "2024-01-01", 19723),
        ("DATE", dt.date(2024, 1, 1), 19723),
        ("DATE", dt.datetime(2024, 1, 1), 19723),
        ("DATE", "19723", 19723),  # the legacy directory spelling
        ("DATE", "-1", -1),
        ("DATE", D, None),
        ("DATE", None, None),
        ("TIMESTAMP(3)", "2024-01-01 12:30:00", (1_704_112_200_000, 0)),
        ("TIMESTAMP(3)", "2024-01-01T12:30", (1_704_112_200_000, 0)),  # legacy directory
        ("TIMESTAMP(3)", "2024-01-01 12:30:05.123", (1_704_112_205_123, 0)),
        ("TIMESTAMP(9)", "2024-01-01 12:30:05.123456789", (1_704_112_205_123, 456_789)),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 12, 30, 5, 123456), (1_704_112_205_123, 456_000)),
        ("TIMESTAMP(3)", "1969-12-31 23:59:59.999", (-1, 0)),
        ("TIMESTAMP_LTZ(3)", "2024-01-01T12:30:00Z", (1_704_112_200_000, 0)),
        ("TIMESTAMP_LTZ(3)", "2024-01-01 13:30:00+01:00", (1_704_112_200_000, 0)),
        ("TIMESTAMP_LTZ(3)", "2024-01-01 13:30:00", (1_704_112_200_000, 0)),  # local = Berlin
        (
            "TIMESTAMP_LTZ(3)",
            dt.datetime(2024, 1, 1, 12, 30, tzinfo=dt.UTC),
            (1_704_112_200_000, 0),
        ),
        ("TIME(3)", "01:02:03.004", 3_723_004),
        ("TIME(0)", "01:02", 3_720_000),
        ("TIME(3)", "3723004", 3_723_004),  # the legacy directory spelling
        ("TIME(3)", dt.time(23, 59, 59, 999000), 86_399_999),
        ("DECIMAL(10, 2)", "12.5", Decimal("12.50")),
        ("DECIMAL(10, 2)", 12, Decimal("12.00")),
        ("BOOLEAN", "TRUE", True),
        ("BOOLEAN", False, False),
        ("INT", " 42 ", 42),
        ("FLOAT", "0.1", 0.10000000149011612),
        ("DOUBLE", "1e-4", 1e-4),
        ("STRING", "", ""),
        ("STRING", "a/b", "a/b"),
        ("BYTES", "ab", b"ab"),
    ],
)
def test_internal_values(type_text: str, given: Any, internal: Any) -> None:
    assert internal_value("p", DataType.parse(type_text), given, D, BERLIN) == internal


@pytest.mark.parametrize(
    ("type_text", "given"),
    [
        ("DATE", "2024-13-01"),
        ("DATE", "yesterday"),
        ("DATE", dt.datetime(2024, 1, 1, 1)),
        ("TIMESTAMP(3)", "2024-01-01 12:30:00+01:00"),  # an offset on a zone-less TIMESTAMP
        ("TIMESTAMP(3)", "noon"),
        ("TIME(3)", "25:00"),
        ("TIME(6)", dt.time(1, 2, 3, 4001)),  # Paimon stores no digit below the millisecond
        ("TIME(3)", "86400000"),
        ("DECIMAL(10, 2)", "12,5"),
        ("BOOLEAN", "yes"),
        ("INT", "4.5"),
        ("INT", True),
    ],
)
def test_invalid_values_are_refused(type_text: str, given: Any) -> None:
    with pytest.raises(ConfigurationError, match="'p'"):
        internal_value("p", DataType.parse(type_text), given, D)


def test_predicate_matches_typed_values_and_default_name() -> None:
    types = [DataType.parse("DATE"), DataType.parse("STRING")]
    names = ["pd", "s"]

    def row(*values: Any) -> bytes:
        return binary_row.serialize(list(values), types)

    jan1, jan2 = dt.date(2024, 1, 1), dt.date(2024, 1, 2)
    match = spec_predicate(names, types, [{"pd": "2024-01-01"}, {"s": D}], D)
    assert match(row(jan1, "x"))
    assert not match(row(jan2, "x"))
    assert match(row(jan2, None))
    assert not match(row(jan2, ""))  # '' is a value of its own (it shares NULL's directory)
    assert match(row(None, None))
    both = spec_predicate(names, types, [{"pd": jan2, "s": ""}], D)
    assert both(row(jan2, "")) and not both(row(jan2, None)) and not both(row(jan1, ""))
    assert spec_predicate(names, types, None, D)(row(None, "x"))
    with pytest.raises(ConfigurationError, match=r"\['day'\]"):
        spec_predicate(names, types, [{"day": "2024-01-01"}], D)


@pytest.mark.parametrize(
    ("millis", "precision", "legacy_name", "cast_name"),
    [
        # DateTimeUtils.formatTimestampMillis, digit by digit: the fraction stops after the
        # first digit that leaves nothing, or after p digits
        (3_723_004, 3, "3723004", "01:02:03.004"),
        (3_723_000, 3, "3723000", "01:02:03.0"),
        (3_723_500, 9, "3723500", "01:02:03.5"),
        (3_723_456, 1, "3723456", "01:02:03.4"),
        (3_723_999, 0, "3723999", "01:02:03"),
        (0, 2, "0", "00:00:00.0"),
        (86_399_999, 6, "86399999", "23:59:59.999"),
    ],
)
def test_time_partition_names(
    millis: int, precision: int, legacy_name: str, cast_name: str
) -> None:
    t = DataType.parse(f"TIME({precision})")
    assert value_string(millis, t, True) == legacy_name
    assert value_string(millis, t, False) == cast_name
