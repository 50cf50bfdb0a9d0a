"""Implicit conversions of input columns: exact ones are made, guessing or lossy ones refused
with the column named and nothing written."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog, DataValidationError


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


UTC_NOON = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
BERLIN = dt.timezone(dt.timedelta(hours=1))

REFUSED = [
    # (column type, input array, words of the reason)
    (pa.int32(), pa.array(["12"]), "text is not parsed"),
    (pa.string(), pa.array([12]), "not turned into text"),
    (pa.string(), pa.array([True]), "not turned into text"),
    (pa.timestamp("us"), pa.array([UTC_NOON], pa.timestamp("us", tz="UTC")), "time zone"),
    (pa.timestamp("us", tz="UTC"), pa.array([dt.datetime(2024, 1, 1)]), "naive"),
    (pa.float32(), pa.array([0.1], pa.float64()), "round"),
    (pa.float64(), pa.array([decimal.Decimal("0.1")]), "decimal values"),
    (pa.timestamp("us"), pa.array([dt.date(2024, 1, 1)]), "date values"),
    (pa.int32(), pa.array([True]), "boolean values"),
    (pa.date32(), pa.array(["2024-01-01"]), "text is not parsed"),
    (pa.list_(pa.int64()), pa.array([["1"]]), "element: text"),
    (pa.struct([("a", pa.int64())]), pa.array([{"a": "1"}]), "field 'a'"),
]


@pytest.mark.parametrize(("target", "data", "reason"), REFUSED)
def test_refused_conversions_name_the_column_and_write_nothing(
    catalog: Catalog, warehouse: Path, target: pa.DataType, data: pa.Array, reason: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("col", target)])
    table = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "1"}
    )
    before = tree(warehouse)
    with pytest.raises(DataValidationError, match=reason) as err:
        table.write(pa.table({"id": pa.array([1], pa.int64()), "col": data}))
    assert "column 'col'" in str(err.value) and "explicitly" in str(err.value)
    assert tree(warehouse) == before


def test_string_into_an_int_key_is_refused(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "1"},
    )  # fmt: skip
    with pytest.raises(DataValidationError, match=r"column 'k'.*text is not parsed"):
        table.write(pa.table({"k": ["12"], "v": ["x"]}))
    assert table.latest_snapshot() is None


def test_zone_aware_into_ltz_keeps_the_instant_and_explicit_casts_work(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("ltz", pa.timestamp("us", tz="UTC")),
                        ("ts", pa.timestamp("us")), ("d", pa.float64())])  # fmt: skip
    table = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "1"}
    )
    berlin = dt.datetime(2024, 1, 1, 13, tzinfo=BERLIN)
    aware = pa.array([berlin], pa.timestamp("ms", tz="Europe/Berlin"))
    table.write(
        pa.table(
            {
                "id": pa.array([1], pa.int8()),  # narrower integers are widened
                "ltz": aware,
                "ts": pc.local_timestamp(aware),  # the wall-clock time, explicitly
                "d": pa.array([3], pa.int32()),  # integers into DOUBLE are exact
            }
        )
    )
    row = table.read().to_pylist()[0]
    assert row["ltz"] == UTC_NOON
    assert row["ts"] == dt.datetime(2024, 1, 1, 13)
    assert row["d"] == 3.0


def test_exact_conversions_are_made_and_inexact_values_refused(catalog: Catalog) -> None:
    schema = pa.schema([("id", pa.int32()), ("v", pa.int16()), ("s", pa.binary())])
    table = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [1.0], "v": pa.array([7], pa.int64()), "s": ["é"]}))
    assert table.read().to_pylist() == [{"id": 1, "v": 7, "s": "é".encode()}]
    with pytest.raises(DataValidationError, match=r"column 'v'.*without loss"):
        table.write(pa.table({"id": [2], "v": pa.array([70_000], pa.int64()), "s": [b""]}))
    with pytest.raises(DataValidationError, match=r"column 'id'.*without loss"):
        table.write(pa.table({"id": [2.5], "v": [1], "s": [b""]}))
