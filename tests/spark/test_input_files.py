"""The Spark write job reads its source with the table's types (the reader the CLI shares): an
ordinary CSV with a date-like STRING key, a DATE and exact decimals lands as written; a value
that does not fit fails the job naming file, line and column, and nothing is committed."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import DataValidationError
from lakeops.spark import jobs

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def job_session(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The job runs in this process on the suite's shared session, which it must not stop
    (the job stops the session it made when it ends)."""
    monkeypatch.setattr(jobs, "_session", lambda master: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    yield


SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("status", pa.string()),
    ]
)


def test_write_job_reads_an_ordinary_csv_as_the_tables_types(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("demo")
    table = catalog.create_table(
        "demo.orders",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1"},
    )
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "_SUCCESS").write_text("")
    (landing / "part-0.csv").write_text(
        "dt,id,day,amount,status\n"
        "2026-11-20,1,2026-11-20,12.30,created\n"
        "2026-11-21,2,2026-11-21,0.10,\n"
    )
    (landing / "part-1.csv").write_text("dt,id,day,amount,status\n2026-11-21,3,,5,shipped\n")
    argv = ["write", "--table", table.root, "--source", str(landing), "--format", "csv"]
    summary = jobs.main([*argv, "--master", "local[1]"])
    assert summary["snapshot_id"] == 1 and summary["total_records"] == 3
    assert table.read().sort_by("id").to_pylist() == [
        {
            "dt": "2026-11-20",
            "id": 1,
            "day": dt.date(2026, 11, 20),
            "amount": decimal.Decimal("12.30"),
            "status": "created",
        },
        {
            "dt": "2026-11-21",
            "id": 2,
            "day": dt.date(2026, 11, 21),
            "amount": decimal.Decimal("0.10"),
            "status": None,
        },
        {
            "dt": "2026-11-21",
            "id": 3,
            "day": None,
            "amount": decimal.Decimal("5.00"),
            "status": "shipped",
        },
    ]

    bad = tmp_path / "bad.csv"
    bad.write_text("dt,id,day,amount,status\n2026-11-22,4,2026-11-22,1.005,x\n")
    argv = ["write", "--table", table.root, "--source", str(bad), "--format", "csv"]
    with pytest.raises(DataValidationError, match=rf"{bad}, line 2, column 'amount': '1.005'"):
        jobs.main([*argv, "--master", "local[1]"])
    assert table.latest_snapshot().id == 1
