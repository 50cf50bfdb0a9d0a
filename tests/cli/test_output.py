"""JSON conversion and byte formatting of the CLI output."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import dataclass

from lakeops.cli.output import Output, human_bytes, jsonable


@dataclass
class _Point:
    at: dt.date
    size: int


def test_jsonable() -> None:
    value = {
        1: _Point(dt.date(2024, 1, 2), 3),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5),
        "d": decimal.Decimal("1.10"),
        "b": b"\x00\xff",
        "nan": float("nan"),
        "t": (1, 2.5, None, True),
    }
    assert jsonable(value) == {
        "1": {"at": "2024-01-02", "size": 3},
        "ts": "2024-01-02T03:04:05",
        "d": "1.10",
        "b": "AP8=",
        "nan": None,
        "t": [1, 2.5, None, True],
    }
    json.dumps(jsonable(value), allow_nan=False)


def test_human_bytes() -> None:
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    assert human_bytes(5 * 1024**5) == "5120.0 TiB"


def test_json_mode_prints_one_document(capsys) -> None:  # type: ignore[no-untyped-def]
    out = Output(json_mode=True)
    with out.progress("x", 10) as advance, out.spinner("y"):
        advance(10)
    out.note("ignored")
    out.result({"a": dt.date(2024, 1, 1)}, lambda console: console.print("human"))
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"a": "2024-01-01"}
    assert captured.err == ""
