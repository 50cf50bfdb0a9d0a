"""Input files of ``lakeops write``: format inference and batched reading."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops.cli.errors import CliError
from lakeops.cli.input_files import Format, infer_format, open_inputs, read_batches

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("v", pa.decimal128(5, 2))])


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.parquet", Format.PARQUET),
        ("A.PQ", Format.PARQUET),
        ("x.parq", Format.PARQUET),
        ("a.csv", Format.CSV),
        ("a.csv.gz", Format.CSV),
    ],
)
def test_infer_format(name: str, fmt: Format) -> None:
    assert infer_format(Path(name), None) is fmt
    assert infer_format(Path(name), Format.CSV) is Format.CSV


def test_unknown_format() -> None:
    with pytest.raises(CliError, match="pass --format parquet or --format csv"):
        infer_format(Path("data.json"), None)


def test_parquet_batches(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    data = pa.table({"id": list(range(250))})
    pq.write_table(data, path)
    (item,) = open_inputs([path], None)
    assert item.rows == 250
    batches = list(read_batches(item, SCHEMA, batch_rows=100))
    assert [b.num_rows for b in batches] == [100, 100, 50]
    assert pa.Table.from_batches(batches).equals(data)


def test_csv_uses_table_types_and_decompresses(tmp_path: Path) -> None:
    path = tmp_path / "a.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("id,day,v,extra\n1,2024-01-02,1.25,x\n2,2024-01-03,,y\n3,2024-01-04,3.5,z\n")
    (item,) = open_inputs([path], None)
    assert item.rows is None
    table = pa.Table.from_batches(list(read_batches(item, SCHEMA, batch_rows=2)))
    assert table.schema.field("day").type == pa.date32()
    assert table.schema.field("v").type == pa.decimal128(5, 2)
    assert table.schema.field("extra").type == pa.string()
    assert table.column("id").to_pylist() == [1, 2, 3]


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_inputs([tmp_path / "missing.csv"], None)
    with pytest.raises(CliError, match="is not a file"):
        open_inputs([tmp_path], Format.CSV)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,day\n1,not-a-date\n")
    (item,) = open_inputs([bad], None)
    with pytest.raises(CliError, match=f"cannot read {bad} as csv"):
        list(read_batches(item, SCHEMA))
