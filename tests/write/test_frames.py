"""Data frames written as Arrow input (lakeops.write.frames): pandas and polars DataFrames,
anything with ``__arrow_c_stream__`` (a DuckDB relation), iterables of them, against the rows a
plain model says the table holds; what is not input is refused naming its type, nothing
written; a value that does not fit its column is refused by name as Arrow input would be."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import DataValidationError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("name", pa.string()),
        ("score", pa.float64()),
        ("at", pa.timestamp("us")),
    ]
)
ROWS: list[dict[str, Any]] = [
    {"id": 1, "name": "é✓", "score": 1.5, "at": dt.datetime(2024, 1, 1, 0, 0, 0, 1)},
    {"id": 2, "name": None, "score": None, "at": None},
    {"id": 3, "name": "", "score": -0.0, "at": dt.datetime(1969, 12, 31, 23, 59, 59)},
]


def _tables(catalog: Catalog) -> list[Any]:
    pk = catalog.create_table("db.pk", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    append = catalog.create_table("db.append", schema=SCHEMA)
    return [pk, append]


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.read().to_pylist(), key=lambda r: r["id"])


def _pandas(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SCHEMA.names).astype({"at": "datetime64[us]"})


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _pandas(ROWS), id="pandas"),
        pytest.param(lambda: _pandas(ROWS).set_index("id"), id="pandas-named-index"),
        pytest.param(lambda: _pandas(ROWS).set_axis([7, 8, 9]), id="pandas-unnamed-index"),
        pytest.param(
            lambda: pl.DataFrame(ROWS, schema_overrides={"at": pl.Datetime("us")}), id="polars"
        ),
        pytest.param(lambda: [_pandas(ROWS[:1]), pa.table(_pandas(ROWS[1:]))], id="iterable"),
        pytest.param(
            lambda: pa.RecordBatchReader.from_stream(pl.DataFrame(ROWS)), id="stream-reader"
        ),
    ],
)
def test_data_frames_are_written_as_their_rows(catalog: Catalog, make: Any) -> None:
    for table in _tables(catalog):
        table.write(make())
        assert _rows(table) == ROWS, table.identifier


def test_a_duckdb_relation_is_streamed(catalog: Catalog) -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    relation = con.sql(
        "SELECT i::BIGINT AS id, 'n' || i AS name, i / 4 AS score, NULL::TIMESTAMP AS at "
        "FROM range(1000) t(i)"
    )
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.write(relation)
    got = _rows(table)
    assert got == [{"id": i, "name": f"n{i}", "score": i / 4, "at": None} for i in range(1000)]


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"id": [1]}, "cannot write a dict"),
        (ROWS, r"cannot write a dict \(an item of the list given\)"),
        ("id,name", "cannot write a str"),
        (42, "cannot write a int"),
        (pl.Series("id", [1, 2]), "cannot write a Series"),
        ([pd.Series([1]), _pandas(ROWS)], r"a Series \(an item of the list given\)"),
    ],
)
def test_what_is_not_input_is_refused_by_type(
    catalog: Catalog, warehouse: Path, data: Any, named: str
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    before = sorted(p for p in warehouse.rglob("*") if p.is_file())
    with pytest.raises(DataValidationError, match=named):
        table.write(data)
    assert sorted(p for p in warehouse.rglob("*") if p.is_file()) == before


def test_a_value_that_does_not_fit_is_refused_by_column(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    wrong = pd.DataFrame({"id": ["1"], "name": ["a"], "score": [1.0], "at": [None]})
    with pytest.raises(DataValidationError, match="'id'"):
        table.write(wrong)
    mixed = pd.DataFrame({"id": [1, 2], "name": ["a", 3], "score": [1.0, 2.0], "at": [None, None]})
    with pytest.raises(DataValidationError, match="pandas DataFrame"):
        table.write(mixed)
    assert table.latest_snapshot() is None
