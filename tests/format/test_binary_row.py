"""BinaryRow codec: Paimon's documented bytes, round trips for every primitive type."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeops.format import binary_row
from lakeops.format.types import DataType

T = DataType.parse


def test_bigint_key_matches_paimon_bytes() -> None:
    expected = bytes.fromhex("00000001" + "00" * 8 + "0200000000000000")
    assert binary_row.serialize([2], [T("BIGINT")]) == expected


def test_short_string_is_inline_with_length_mark() -> None:
    data = binary_row.serialize(["hello"], [T("STRING")])
    assert data[12:20] == bytes.fromhex("68656c6c6f000085")


def test_long_string_goes_to_variable_part() -> None:
    data = binary_row.serialize(["2024-01-01"], [T("STRING")])
    # slot: length 10 (low word), offset 16 (high word); then the bytes padded to 8
    assert data[12:20] == bytes.fromhex("0a00000010000000")
    assert data[20:30] == b"2024-01-01" and data[30:] == bytes(6)


def test_empty_row_is_twelve_zero_bytes() -> None:
    assert binary_row.serialize([], []) == bytes(12)


def test_null_bit_is_set_after_header_byte() -> None:
    data = binary_row.serialize([None, 5], [T("INT"), T("INT")])
    assert data[4] == 0 and data[5] == 0b01  # bit 8 -> byte 1, bit 0
    assert binary_row.deserialize(data, [T("INT"), T("INT")]) == (None, 5)


ROUND_TRIP = [
    ("BOOLEAN", [True, False, None]),
    ("TINYINT", [-128, 127, 0, None]),
    ("SMALLINT", [-32768, 32767, None]),
    ("INT", [-(2**31), 2**31 - 1, None]),
    ("BIGINT", [-(2**63), 2**63 - 1, None]),
    ("FLOAT", [1.5, -0.25, None]),
    ("DOUBLE", [3.141592653589793, -1e300, None]),
    ("DECIMAL(10, 2)", [Decimal("12345678.90"), Decimal("-0.01"), None]),
    (
        "DECIMAL(38, 10)",
        [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1.5000000000"), None],
    ),
    ("STRING", ["", "abcdefg", "abcdefgh", "ünïcødé long enough", None]),
    ("BYTES", [b"", b"\x00\x01", bytes(range(40)), None]),
    ("DATE", [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1900, 1, 1), None]),
    ("TIMESTAMP(3)", [dt.datetime(2024, 1, 1, 12, 30, 0, 123000), None]),
    (
        "TIMESTAMP(6)",
        [dt.datetime(2024, 1, 1, 12, 30, 0, 123456), dt.datetime(1960, 5, 5, 0, 0, 0, 1), None],
    ),
]


@pytest.mark.parametrize(("type_text", "values"), ROUND_TRIP)
def test_round_trip_every_primitive(type_text: str, values: list[object]) -> None:
    t = T(type_text)
    for v in values:
        assert binary_row.deserialize(binary_row.serialize([v], [t]), [t]) == (v,)


def test_vectorised_encoding_equals_row_by_row() -> None:
    types = [T("STRING"), T("BIGINT"), T("DECIMAL(20, 3)"), T("TIMESTAMP(6)"), T("BYTES")]
    rows = [
        ["a", 1, Decimal("1.000"), dt.datetime(2020, 1, 1), b"x"],
        ["a much longer string value", None, None, None, bytes(20)],
        [None, -5, Decimal("-99999999999999999.999"), dt.datetime(2001, 2, 3, 4, 5, 6, 7), None],
    ]
    columns = [pa.array([r[i] for r in rows], type=t.to_arrow()) for i, t in enumerate(types)]
    encoded = binary_row.encode_rows(columns, types)
    for i, row in enumerate(rows):
        single = binary_row.serialize(row, types)[4:]
        assert encoded.row(i) == single
        assert binary_row.decode(encoded.row(i), types) == tuple(row)
        assert encoded.offsets[i] % 8 == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.text(max_size=30)),
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_random_rows_round_trip(rows: list[tuple[str | None, int | None]]) -> None:
    types = [T("STRING"), T("BIGINT")]
    columns = [
        pa.array([r[0] for r in rows], pa.string()),
        pa.array([r[1] for r in rows], pa.int64()),
    ]
    encoded = binary_row.encode_rows(columns, types)
    assert [binary_row.decode(encoded.row(i), types) for i in range(len(rows))] == rows


def test_time_is_a_four_byte_int_of_milliseconds_like_paimons_binary_row() -> None:
    """Paimon's BinaryRow writes TIME with ``writeInt`` (the millisecond of the day): the slot
    holds the little-endian int, the rest of the slot zero."""
    millis = 3_723_004  # 01:02:03.004
    data = binary_row.serialize([dt.time(1, 2, 3, 4000), None], [T("TIME(3)"), T("TIME")])
    assert data == bytes.fromhex("00000002" + "0002000000000000") + millis.to_bytes(
        4, "little"
    ) + bytes(4) + bytes(8)
    assert binary_row.deserialize(data, [T("TIME(3)"), T("TIME")]) == (
        dt.time(1, 2, 3, 4000),
        None,
    )
    assert binary_row.deserialize_internal(data, [T("TIME(3)"), T("TIME")]) == (millis, None)


def test_variant_encodes_only_as_null() -> None:
    data = binary_row.serialize([None], [T("VARIANT")])
    assert binary_row.deserialize(data, [T("VARIANT")]) == (None,)
