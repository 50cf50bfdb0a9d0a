"""``binary_row.serialize_rows``: many rows in one encode, judged row by row against
``serialize`` of each row's Python values and against ``deserialize`` (the scalar decoder)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lakeops.format import binary_row
from lakeops.format.types import DataType

COLUMNS: list[tuple[str, list[Any]]] = [
    ("INT", [1, -7, None, 2**31 - 1]),
    ("BIGINT NOT NULL", [0, -(2**63), 2**63 - 1, 42]),
    ("STRING", ["a", "seven b", None, "a longer string than seven bytes ü"]),
    ("BYTES", [b"", b"\x00\x01", b"0123456789abcdef", None]),
    ("DOUBLE", [0.5, -0.0, float("nan"), None]),
    ("FLOAT", [1.5, None, float("inf"), -2.25]),
    ("DATE", [dt.date(2024, 1, 2), None, dt.date(1960, 5, 6), dt.date(1970, 1, 1)]),
    ("DECIMAL(10, 2)", [Decimal("1.25"), Decimal("-99999999.99"), None, Decimal("0.00")]),
    ("DECIMAL(30, 3)", [Decimal("1.250"), None, Decimal("-123456789012345678901.234"), None]),
    (
        "TIMESTAMP(6)",
        [dt.datetime(2024, 1, 2, 3, 4, 5, 123456), None, dt.datetime(1969, 12, 31, 23), None],
    ),
    ("TIMESTAMP(3)", [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), None, None, None]),
    ("BOOLEAN", [True, False, None, True]),
    ("SMALLINT", [-3, 7, None, 32767]),
]


@pytest.mark.parametrize("width", [1, 3, len(COLUMNS)])
def test_rows_equal_serialize_of_each_rows_values(width: int) -> None:
    for start in range(0, len(COLUMNS), width):
        chosen = COLUMNS[start : start + width]
        types = [DataType.parse(t) for t, _ in chosen]
        arrays = [
            pa.array(values, type=t.to_arrow())
            for t, (_, values) in zip(types, chosen, strict=True)
        ]
        rows = binary_row.serialize_rows(arrays, types)
        assert len(rows) == 4
        for i, row in enumerate(rows):
            values = [values[i] for _, values in chosen]
            assert row == binary_row.serialize(values, types)
            decoded = binary_row.deserialize(row, types)
            for got, want in zip(decoded, values, strict=True):
                if isinstance(want, float) and want != want:
                    assert got != got
                else:
                    assert got == want


def test_chunked_columns_and_an_empty_row_set() -> None:
    types = [DataType.parse("BIGINT"), DataType.parse("STRING")]
    ids = pa.chunked_array([[1, 2], [3]], type=pa.int64())
    names = pa.chunked_array([["x"], ["yy", "a long value here"]], type=pa.string())
    rows = binary_row.serialize_rows([ids, names], types)
    assert [binary_row.deserialize(r, types) for r in rows] == [
        (1, "x"),
        (2, "yy"),
        (3, "a long value here"),
    ]
    assert binary_row.serialize_rows([ids.slice(0, 0), names.slice(0, 0)], types) == []
    with pytest.raises(ValueError, match="at least one field"):
        binary_row.serialize_rows([], [])
