"""``write`` and ``lookup``, checked against the table's own read and lookup."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.cli.conftest import SCHEMA_DOC, TABLE, Cli, rows, sorted_rows

Parquet = Callable[[str, pa.Table], Path]


def _data_files(cli: Cli) -> list[Path]:
    return sorted((cli.warehouse / "db.db" / "orders").rglob("data-*"))


def test_write_parquet_equals_the_file(cli: Cli, orders: str, parquet: Parquet) -> None:
    data = pa.concat_tables([rows("2024-01-01", range(500)), rows("2024-01-02", range(200))])
    path = parquet("in.parquet", data)
    out = cli.json("write", orders, str(path))
    table = cli.table()
    latest = table.latest_snapshot()
    assert latest is not None and out["snapshot_id"] == latest.id == 1
    assert out["rows"] == 700
    assert sorted_rows(table.read()) == sorted_rows(pq.read_table(path))
    assert out["stats"]["files_added"] == len(_data_files(cli)) == 4  # 2 partitions x 2 buckets


def test_write_several_files_in_small_batches_is_one_commit(
    cli: Cli, orders: str, parquet: Parquet
) -> None:
    first = parquet("a.parquet", rows("2024-01-01", range(0, 300)))
    second = parquet("b.parquet", rows("2024-01-01", range(200, 400), 0.5))  # overlaps 200..299
    result = cli.ok("write", orders, str(first), str(second), "--batch-rows", "64")
    table = cli.table()
    assert [s.id for s in table.snapshots()] == [1]
    expected = pa.concat_tables([rows("2024-01-01", range(200)), pq.read_table(second)])
    assert sorted_rows(table.read()) == sorted_rows(expected)
    assert "wrote 500 rows from 2 file(s) to db.orders: snapshot 1 (APPEND)" in result.stdout
    assert "500/500" in result.stderr  # the progress bar counted every row


def test_write_csv(cli: Cli, orders: str, tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("dt,id,v,name\n2024-01-01,1,1.5,a\n2024-01-01,2,,b\n2024-01-03,3,3.0,c\n")
    out = cli.json("write", orders, str(path))
    assert out["rows"] == 3
    assert sorted_rows(cli.table().read()) == [
        {"dt": "2024-01-01", "id": 1, "v": 1.5, "name": "a"},
        {"dt": "2024-01-01", "id": 2, "v": None, "name": "b"},
        {"dt": "2024-01-03", "id": 3, "v": 3.0, "name": "c"},
    ]
    other = tmp_path / "rows.txt"
    other.write_text("dt,id,v,name\n2024-01-01,1,9.0,z\n")
    result = cli("write", orders, str(other))
    assert result.exit_code == 1 and "--format" in result.stderr
    cli.ok("write", orders, str(other), "--format", "csv")
    assert cli.table().read(filter=[("id", "=", 1)]).to_pylist()[0]["v"] == 9.0


def test_failed_write_leaves_the_table_unchanged(
    cli: Cli, parquet: Parquet, tmp_path: Path
) -> None:
    # a tiny write buffer makes the good rows reach data files before the bad ones fail
    doc = {**SCHEMA_DOC, "options": {**SCHEMA_DOC["options"], "write-buffer-size": "1 kb"}}
    (tmp_path / "small.json").write_text(json.dumps(doc))
    orders = TABLE
    cli.ok("create", orders, "--schema", str(tmp_path / "small.json"))
    good = parquet("good.parquet", rows("2024-01-01", range(2000)))
    bad_rows = rows("2024-01-02", range(2)).set_column(0, "dt", pa.array(["x", None]))
    bad = parquet("bad.parquet", bad_rows)
    result = cli("write", orders, str(good), str(bad), "--batch-rows", "100")
    assert result.exit_code == 1
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "null" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    table = cli.table()
    assert table.latest_snapshot() is None
    assert _data_files(cli) == []

    missing = cli("write", orders, str(good), str(tmp_path / "nope.parquet"))
    assert missing.exit_code == 1
    assert (
        missing.stderr.strip() == f"error: no such file or directory: {tmp_path / 'nope.parquet'}"
    )
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet at all")
    result = cli("write", orders, str(corrupt))
    assert result.exit_code == 1 and "cannot read" in result.stderr
    assert cli.table().latest_snapshot() is None


def test_write_json_output_is_one_document(cli: Cli, orders: str, parquet: Parquet) -> None:
    path = parquet("in.parquet", rows("2024-01-01", range(10)))
    result = cli.ok("--json", "write", orders, str(path))
    assert json.loads(result.stdout)["rows"] == 10
    assert result.stderr == ""  # no progress bar in JSON mode


def test_lookup(cli: Cli, loaded: str) -> None:
    table = cli.table()
    keys = ["dt=2024-01-01,id=5", "id=120,dt=2024-01-01", "dt=2024-01-02,id=7", "dt=x,id=1"]
    out = cli.json("lookup", loaded, *keys)
    either: list[list[tuple[str, str, Any]]] = [
        [("dt", "=", "2024-01-01"), ("id", "in", [5, 120])],
        [("dt", "=", "2024-01-02"), ("id", "=", 7)],
    ]
    expected = table.read(filter=either)
    assert sorted_rows(pa.Table.from_pylist(out["rows"], schema=table.arrow_schema)) == (
        sorted_rows(expected)
    )
    assert len(out["rows"]) == 3 and out["keys"] == 4
    assert out["key_columns"] == ["dt", "id"]

    shown = cli.json("lookup", loaded, "dt=2024-01-01,id=5", "--columns", "id,name")
    assert shown["rows"] == [{"id": 5, "name": "n5"}]
    bad = cli("lookup", loaded, "dt=2024-01-01,id=5", "--columns", "id,nme")
    assert bad.exit_code == 1 and bad.stderr.startswith(
        "error: --columns names unknown column(s) ['nme']"
    )
    human = cli.ok("lookup", loaded, "dt=2024-01-02,id=7").stdout
    assert "n7" in human and "1 row(s)" in human
    assert "no rows" in cli.ok("lookup", loaded, "dt=2024-01-02,id=99999").stdout


def test_lookup_rejects_bad_keys(cli: Cli, loaded: str) -> None:
    cases = {
        "dt=2024-01-01,id=abc": "cannot read lookup key column 'id' as int64",
        "id=1": "missing ['dt']",
        "dt=2024-01-01,id=1,v=2": "unknown ['v']",
        "dt=2024-01-01,id": "has no 'name='",
    }
    for key, message in cases.items():
        result = cli("lookup", loaded, key)
        assert result.exit_code == 1, key
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr


def test_write_an_ordinary_csv_and_json_lines_as_the_tables_types(cli: Cli, tmp_path: Path) -> None:
    """A date-like STRING key, a DATE and an exact DECIMAL column, from CSV and from JSON lines;
    a value that does not fit names the file, line and column, and nothing is committed."""
    import datetime as dt
    import decimal

    doc = {
        "fields": [
            {"name": "dt", "type": "STRING"},
            {"name": "id", "type": "BIGINT"},
            {"name": "day", "type": "DATE"},
            {"name": "amount", "type": "DECIMAL(10, 2)"},
        ],
        "primary_keys": ["dt", "id"],
        "partition_keys": ["dt"],
        "options": {"bucket": 1},
    }
    (tmp_path / "s.json").write_text(json.dumps(doc))
    cli.ok("create", "db.sales", "--schema", str(tmp_path / "s.json"))
    csv = tmp_path / "sales.csv"
    csv.write_text("dt,id,day,amount\n2026-11-20,1,2026-11-20,12.30\n2026-11-21,2,,0.1\n")
    lines = tmp_path / "more.jsonl"
    lines.write_text('{"dt": "2026-11-22", "id": 3, "day": "2026-11-22", "amount": 7.25}\n')
    assert cli.json("write", "db.sales", str(csv), str(lines))["rows"] == 3
    table = cli.table("db.sales")
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == [
        {
            "dt": "2026-11-20",
            "id": 1,
            "day": dt.date(2026, 11, 20),
            "amount": decimal.Decimal("12.30"),
        },
        {"dt": "2026-11-21", "id": 2, "day": None, "amount": decimal.Decimal("0.10")},
        {
            "dt": "2026-11-22",
            "id": 3,
            "day": dt.date(2026, 11, 22),
            "amount": decimal.Decimal("7.25"),
        },
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text("dt,id,day,amount\n2026-11-23,4,2026-11-23,1\n2026-11-23,5,2026-11-23,1.005\n")
    result = cli("write", "db.sales", str(bad))
    assert result.exit_code == 1
    assert f"{bad}, line 3, column 'amount': '1.005' is not a DECIMAL(10, 2)" in result.stderr
    assert table.latest_snapshot().id == 1


def test_delete_where(cli: Cli, loaded: str) -> None:
    """The rows the condition holds for go, in one snapshot; the model: the rows read before,
    filtered by the same condition in Python."""
    before = sorted_rows(cli.table().read())
    want = [r for r in before if not (r["dt"] == "2024-01-01" and r["id"] < 10)]
    cancelled = cli("delete", loaded, "--where", "dt = '2024-01-01' AND id < 10", input="n\n")
    assert cancelled.exit_code != 0 and sorted_rows(cli.table().read()) == before
    out = cli.json("delete", loaded, "--where", "dt = '2024-01-01' AND id < 10", "--yes")
    assert out["deleted"] == len(before) - len(want)
    assert out["snapshot_id"] == cli.table().latest_snapshot().id  # type: ignore[union-attr]
    assert sorted_rows(cli.table().read()) == want
    text = cli.ok("delete", loaded, "--where", "id < 0", "-y").stdout
    assert "no row matched" in text
    bad = cli("delete", loaded, "--where", "nope = 1", "--yes")
    assert bad.exit_code != 0 and "nope" in bad.stdout + bad.stderr
