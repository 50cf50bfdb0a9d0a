"""The Spark jobs' arguments: partition specs reach the job exactly as the caller wrote them
(JSON, whatever the values hold), and the older ``k=v,k2=v2`` form is read only where it
cannot mean two different things. No Spark session: this is argument handling."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from lakeops.errors import ConfigurationError
from lakeops.spark.jobs import encode_partitions, parse_args, parse_legacy_partition

HOSTILE_SPECS: list[dict[str, Any]] = [
    {"dt": "2024-01-01,region=eu", "region": "us"},
    {"dt": "a=b", "region": "x/../../y"},
    {"dt": 'it\'s "quoted" \\ back', "region": "naïve 東京 😀"},
    {"dt": "", "region": None},
    {"dt": " padded ", "region": "--partition"},
    {"n": 42, "f": 1.5, "b": True, "z": None},
]


def test_partition_specs_round_trip_exactly() -> None:
    """Every spec, encoded for the command line and parsed by the job, is the same spec —
    compared with the plain Python values the caller passed."""
    arg = f"--partitions={encode_partitions(HOSTILE_SPECS)}"
    assert arg.isascii()  # no locale on the way can alter it
    args = parse_args(["compact", "--table", "/t", arg])
    assert args.partitions == HOSTILE_SPECS
    assert [list(s) for s in args.partitions] == [list(s) for s in HOSTILE_SPECS]  # key order
    assert all(
        type(a) is type(b)
        for got, want in zip(args.partitions, HOSTILE_SPECS, strict=True)
        for a, b in zip(got.values(), want.values(), strict=True)
    )


def test_dates_and_decimals_travel_as_their_text() -> None:
    specs = [
        {
            "d": dt.date(2024, 1, 1),
            "ts": dt.datetime(2024, 1, 1, 12, 30, 0, 123456),
            "dec": Decimal("12.50"),
        }
    ]
    args = parse_args(["flush", "--table", "/t", "--partitions", encode_partitions(specs)])
    assert args.partitions == [
        {"d": "2024-01-01", "ts": "2024-01-01 12:30:00.123456", "dec": "12.50"}
    ]


def test_no_partitions_means_every_partition() -> None:
    assert parse_args(["compact", "--table", "/t"]).partitions is None


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("dt=2024-01-01", {"dt": "2024-01-01"}),
        ("dt=2024-01-01,region=eu", {"dt": "2024-01-01", "region": "eu"}),
        ("dt=", {"dt": ""}),
        ("dt=東京/x", {"dt": "東京/x"}),
    ],
)
def test_legacy_form_where_unambiguous(text: str, spec: dict[str, str]) -> None:
    assert parse_legacy_partition(text) == spec
    assert parse_args(["compact", "--table", "/t", "--partition", text]).partitions == [spec]


@pytest.mark.parametrize(
    "text",
    [
        "dt=2024-01-01,region=eu,region=us",  # what the old operator made of a value with ","
        "dt=a=b",
        "dt=a,b",
        "=x",
        "dt",
        "",
    ],
)
def test_legacy_form_refused_where_ambiguous(text: str) -> None:
    with pytest.raises(ConfigurationError, match="--partitions"):
        parse_args(["compact", "--table", "/t", "--partition", text])


@pytest.mark.parametrize(
    "text",
    [
        "[]",  # never "every partition": an overwrite would replace the whole table
        '{"dt": "x"}',
        '[{"dt": "x", "dt": "y"}]',
        '[{"dt": ["x"]}]',
        '[{"": "x"}]',
        "[{'dt': 'x'}]",
        '["dt=x"]',
    ],
)
def test_bad_json_partitions_are_refused(text: str) -> None:
    with pytest.raises(ConfigurationError, match="--partitions"):
        parse_args(["compact", "--table", "/t", "--partitions", text])


def test_both_forms_together_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="either"):
        parse_args(
            [
                "compact",
                "--table",
                "/t",
                "--partitions",
                json.dumps([{"dt": "x"}]),
                "--partition",
                "dt=x",
            ]
        )


def test_encode_refuses_what_json_cannot_carry() -> None:
    with pytest.raises(ConfigurationError, match="bytes"):
        encode_partitions([{"b": b"\x00"}])
    with pytest.raises(ConfigurationError, match="column names"):
        encode_partitions([{1: "x"}])  # type: ignore[dict-item]


def test_parallelism_argument_and_the_task_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--parallelism`` is checked up front; a write task never runs more buckets at once
    than its CPUs (``spark.task.cpus``), which is also its default."""
    from pyspark import TaskContext

    from lakeops.spark.tables import task_parallelism

    assert parse_args(["write", "--table", "t", "--parallelism", "3"]).parallelism == 3
    assert parse_args(["expire", "--table", "t"]).parallelism is None
    with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
        parse_args(["compact", "--table", "t", "--parallelism", "0"])

    assert task_parallelism(None) == 1 and task_parallelism("8") == 1  # outside a task

    class FourCpus:
        def cpus(self) -> int:
            return 4

    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: FourCpus()))
    assert [task_parallelism(v) for v in (None, "2", "4", "16")] == [4, 2, 4, 4]
    with pytest.raises(ConfigurationError):
        task_parallelism("0")


@pytest.mark.parametrize(
    ("argv", "env", "path"),
    [
        (["--warehouse", "/wh", "--table", "db.orders"], None, "/wh/db.db/orders"),
        (["--warehouse", "s3://b/wh/", "--table", "db.orders"], None, "s3://b/wh/db.db/orders"),
        (["--table", "db.orders"], "/env/wh", "/env/wh/db.db/orders"),
        (["--table", "/wh/db.db/orders"], "/env/wh", "/wh/db.db/orders"),
        (["--table", "t"], None, "t"),
    ],
)
def test_table_as_the_cli_names_it(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], env: str | None, path: str
) -> None:
    if env is None:
        monkeypatch.delenv("LAKEOPS_WAREHOUSE", raising=False)
    else:
        monkeypatch.setenv("LAKEOPS_WAREHOUSE", env)
    assert parse_args(["compact", *argv]).table == path


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--table", "db.orders"], "pass --warehouse W"),
        (["--warehouse", "/wh", "--table", "/wh/db.db/orders"], "--warehouse does not apply"),
        (["--warehouse", "/wh", "--table", "orders"], "must be 'database.table'"),
    ],
)
def test_table_spelling_errors(monkeypatch: pytest.MonkeyPatch, argv: list[str], says: str) -> None:
    monkeypatch.delenv("LAKEOPS_WAREHOUSE", raising=False)
    with pytest.raises(ConfigurationError, match=re.escape(says)):
        parse_args(["compact", *argv])
