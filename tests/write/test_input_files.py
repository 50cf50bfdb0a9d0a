"""Input files read against the table's schema: formats, directories, exact values and errors
that name the file, line and column."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops.errors import ConfigurationError, DataValidationError
from lakeops.write.input_files import InputFormat, infer_format, open_inputs, read_batches

#: an ordinary orders table: a date-like STRING key, a DATE, an exact DECIMAL, timestamps
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("at", pa.timestamp("us")),
        ("at_utc", pa.timestamp("us", tz="UTC")),
        ("note", pa.string()),
    ]
)
CSV = (
    "dt,id,day,amount,at,at_utc,note\n"
    "2026-11-20,1,2026-11-20,12.30,2026-11-20 10:00:00,2026-11-20T10:00:00Z,first\n"
    '2026-11-21,2,2026-11-21,0.1,2026-11-21T11:30:00.123456,2026-11-21T12:30:00+01:00,""\n'
    "2026-11-21,3,,99999999.99,,,\n"
)
EXPECTED = [
    {
        "dt": "2026-11-20",
        "id": 1,
        "day": dt.date(2026, 11, 20),
        "amount": decimal.Decimal("12.30"),
        "at": dt.datetime(2026, 11, 20, 10),
        "at_utc": dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC),
        "note": "first",
    },
    {
        "dt": "2026-11-21",
        "id": 2,
        "day": dt.date(2026, 11, 21),
        "amount": decimal.Decimal("0.10"),
        "at": dt.datetime(2026, 11, 21, 11, 30, 0, 123456),
        "at_utc": dt.datetime(2026, 11, 21, 11, 30, tzinfo=dt.UTC),
        "note": "",
    },
    {
        "dt": "2026-11-21",
        "id": 3,
        "day": None,
        "amount": decimal.Decimal("99999999.99"),
        "at": None,
        "at_utc": None,
        "note": None,
    },
]


def _read(path: Path, fmt: InputFormat | None = None, batch_rows: int = 100_000) -> pa.Table:
    batches = [
        b for item in open_inputs([str(path)], fmt) for b in read_batches(item, SCHEMA, batch_rows)
    ]
    return pa.Table.from_batches(batches, schema=SCHEMA)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.parquet", InputFormat.PARQUET),
        ("A.PQ", InputFormat.PARQUET),
        ("x.parq", InputFormat.PARQUET),
        ("a.csv", InputFormat.CSV),
        ("a.csv.gz", InputFormat.CSV),
        ("a.json", InputFormat.JSON),
        ("a.jsonl.zst", InputFormat.JSON),
        ("a.ndjson", InputFormat.JSON),
    ],
)
def test_infer_format(name: str, fmt: InputFormat) -> None:
    assert infer_format(name, None) is fmt
    assert infer_format(name, "csv") is InputFormat.CSV


def test_unknown_format() -> None:
    with pytest.raises(ConfigurationError, match=r"name the format \(--format parquet\|csv\|json"):
        infer_format("data.txt", None)
    with pytest.raises(ConfigurationError, match="unknown input format 'xml'"):
        infer_format("data.csv", "xml")


def test_an_ordinary_csv_is_read_as_the_tables_types(tmp_path: Path) -> None:
    """A ``2026-11-20`` in a STRING key stays text (pyarrow's inference made it a date), a DATE
    column parses, decimals are exact, each timestamp follows its column's type; an empty
    field is NULL, a quoted empty one the empty string."""
    path = tmp_path / "orders.csv"
    path.write_text(CSV)
    table = _read(path, batch_rows=2)
    assert table.schema == SCHEMA
    assert table.to_pylist() == EXPECTED


def test_compressed_csv_and_json_lines_read_alike(tmp_path: Path) -> None:
    gz = tmp_path / "orders.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write(CSV)
    assert _read(gz).to_pylist() == EXPECTED
    lines = [
        {k: (str(v) if isinstance(v, (dt.date, decimal.Decimal)) else v) for k, v in r.items()}
        for r in EXPECTED
    ]
    lines[0]["at"], lines[0]["at_utc"] = "2026-11-20 10:00:00", "2026-11-20T10:00:00Z"
    lines[1]["at"] = "2026-11-21T11:30:00.123456"
    lines[1]["at_utc"] = "2026-11-21T12:30:00+01:00"
    text = "\n".join(json.dumps(r) for r in lines).replace('"12.30"', "12.30")  # a number
    path = tmp_path / "orders.jsonl"
    path.write_text(text + "\n")
    assert _read(path).to_pylist() == EXPECTED


def test_a_directory_is_its_data_files(tmp_path: Path) -> None:
    source = tmp_path / "landing"
    source.mkdir()
    (source / "_SUCCESS").write_text("")
    (source / "b.csv").write_text(CSV)
    pq.write_table(pa.Table.from_pylist(EXPECTED[:1], schema=SCHEMA), source / "a.parquet")
    items = open_inputs([str(source)])
    assert [(Path(i.path).name, i.format, i.rows) for i in items] == [
        ("a.parquet", InputFormat.PARQUET, 1),
        ("b.csv", InputFormat.CSV, None),
    ]
    (source / "nested").mkdir()
    with pytest.raises(ConfigurationError, match="is a directory inside the source"):
        open_inputs([str(source)])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigurationError, match="holds no data files"):
        open_inputs([str(empty)])
    with pytest.raises(FileNotFoundError):
        open_inputs([str(tmp_path / "missing.csv")])


def test_parquet_is_converted_by_the_writers_rules(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    narrow = pa.table({"dt": ["d"] * 250, "id": pa.array(range(250), pa.int32())})
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    pq.write_table(narrow, path)
    (item,) = open_inputs([str(path)])
    assert item.rows == 250
    batches = list(read_batches(item, schema, batch_rows=100))
    assert [b.num_rows for b in batches] == [100, 100, 50]
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(250))
    assert batches[0].schema == schema
    lossy = pa.schema([("dt", pa.string()), ("id", pa.int8())])
    with pytest.raises(DataValidationError, match=f"{path}.*'id'"):
        list(read_batches(item, lossy))


@pytest.mark.parametrize(
    ("row", "column", "value"),
    [
        ("2026-11-22,4,2026-11-31,1,,,", "day", "2026-11-31"),
        ("2026-11-22,4,,1.234,,,", "amount", "1.234"),
        ("2026-11-22,x,,1,,,", "id", "x"),
        ("2026-11-22,4,,,2026-11-22T10:00:00Z,,", "at", "2026-11-22T10:00:00Z"),
        ("2026-11-22,4,,,,2026-11-22 10:00:00,", "at_utc", "2026-11-22 10:00:00"),
    ],
)
def test_a_value_that_does_not_fit_names_file_line_and_column(
    tmp_path: Path, row: str, column: str, value: str
) -> None:
    path = tmp_path / "bad.csv"
    # a blank line before it: the line number is the file's, not the row's
    path.write_text(CSV + "\n" + row + "\n")
    with pytest.raises(DataValidationError) as err:
        _read(path, batch_rows=2)
    assert f"{path}, line 6, column {column!r}: {value!r} is not a" in str(err.value)


def test_json_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"dt": "a", "id": 1}\n{"dt": "b", "id": 2, "day": "2026-02-30"}\n')
    with pytest.raises(DataValidationError, match=r"line 2, column 'day': '2026-02-30' is not"):
        _read(path)
    path.write_text('{"dt": "a", "id": 1}\n\n{"dt": 20261120, "id": 2}\n')
    with pytest.raises(DataValidationError, match=r"line 3, column 'dt': 20261120 is not a"):
        _read(path)


def test_missing_and_extra_columns_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cols.csv"
    path.write_text("dt,id,extra\n2026-11-20,1,x\n")
    with pytest.raises(DataValidationError, match=f"{path} has no column"):
        _read(path)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    (item,) = open_inputs([str(path)])
    with pytest.raises(DataValidationError, match=rf"{path} has column\(s\) \['extra'\]"):
        list(read_batches(item, schema))
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet at all")
    with pytest.raises(DataValidationError, match=f"cannot read {corrupt} as parquet"):
        open_inputs([str(corrupt)])
